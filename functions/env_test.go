package functions

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/internal/kmstest"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

// cloud is what a deployed function sees, in process: DynamoDB (minidyn)
// and KMS (a fake speaking its protocol), named by the environment exactly
// as the CDK stack names them to a function.
type cloud struct {
	dynamo *dynamotest.Server
	kms    *kmstest.Server
	store  sshdeck.Store
	sealer *secret.Sealer
}

func startCloud(t *testing.T) *cloud {
	t.Helper()
	c := &cloud{dynamo: dynamotest.Start(t), kms: kmstest.Start(t)}
	c.store = dynamo.New(c.dynamo.Client, c.dynamo.Table)
	c.sealer = secret.NewSealer(secret.NewKMSKeyring(c.kms.Client(), c.kms.KeyID))
	for _, kv := range c.dynamo.Env() {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	t.Setenv("SSHDECK_KMS_KEY_ID", c.kms.KeyID)
	t.Setenv("AWS_ENDPOINT_URL_KMS", c.kms.URL)
	return c
}

// The fixture the sample events were written for: the user the authorizer
// context names, the token of events/authorizer/valid.json, and two hosts.
var seedHosts = []string{
	`{"name":"web-1","ip":"10.0.2.20","username":"ubuntu","authType":"password","password":"hunter2","tags":["prod","web"]}`,
	`{"name":"cache","ip":"10.0.3.7","port":6022,"username":"ops","authType":"none","folder":"staging"}`,
}

// seed writes the fixture into a store, sealing with sealer.
func seed(t *testing.T, store sshdeck.Store, sealer *secret.Sealer) {
	t.Helper()
	ctx := context.Background()
	userID := readEvent(t, "get-host").RequestContext.Authorizer[auth.ContextUserID].(string)
	now := time.Now().UTC().Truncate(time.Millisecond)
	must(t, store.CreateUser(ctx, &sshdeck.User{ID: userID, Name: "alice", CreatedAt: now}))
	must(t, store.CreateToken(ctx, &sshdeck.Token{ID: "tok_valid", UserID: userID, Name: "events",
		Hash: auth.HashToken(eventToken(t, "valid")), CreatedAt: now}))
	svc := hosts.NewService(store, sealer, nil)
	for _, body := range seedHosts {
		var in hosts.Input
		must(t, json.Unmarshal([]byte(body), &in))
		_, err := svc.Create(ctx, userID, &in)
		must(t, err)
	}
}

func readEvent(t *testing.T, name string) events.APIGatewayProxyRequest {
	t.Helper()
	var ev events.APIGatewayProxyRequest
	readJSON(t, filepath.Join("..", "events", name+".json"), &ev)
	return ev
}

func readAuthorizerEvent(t *testing.T, name string) events.APIGatewayCustomAuthorizerRequestTypeRequest {
	t.Helper()
	var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
	readJSON(t, filepath.Join("..", "events", "authorizer", name+".json"), &ev)
	return ev
}

// eventToken is the bearer token of an authorizer event.
func eventToken(t *testing.T, name string) string {
	t.Helper()
	token, ok := auth.BearerToken(readAuthorizerEvent(t, name).Headers["Authorization"])
	if !ok || !auth.WellFormed(token) {
		t.Fatalf("events/authorizer/%s.json has no well-formed bearer token", name)
	}
	return token
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
