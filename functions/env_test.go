package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/internal/kmstest"
	"github.com/sshdeck/sshdeck/internal/upstreamtest"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/files"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

// cloud is what a deployed function sees, in process: DynamoDB (minidyn),
// KMS (a fake speaking its protocol), GitHub's releases API and a remote
// alerts list, named by the environment exactly as the CDK stack names them
// to a function.
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
	t.Setenv("SSHDECK_RELEASES_REPO", "acme/deck")
	t.Setenv("SSHDECK_RELEASES_API_URL", upstreamtest.StartGitHub(t).URL)
	remote := upstreamtest.StartAlerts(t)
	remote.Set(200, `[{"id":"remote-1","title":"New client release","message":"Version 3 is out.","expiresAt":"2099-06-01T00:00:00Z","priority":"low","type":"success","actionUrl":"https://example.com/v3","actionText":"Download"}]`)
	t.Setenv("SSHDECK_ALERTS_URL", remote.URL)
	return c
}

// The fixture the sample events were written for (events/README.md): the
// user the authorizer context names, the token of
// events/authorizer/valid.json, two hosts with file-manager entries, two
// alerts, and the admin (with the token) of the admin routes' events.
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
	// The admin of the admin routes' events.
	admin := readEvent(t, "publish-alert")
	adminID := admin.RequestContext.Authorizer[auth.ContextUserID].(string)
	adminToken, _ := auth.BearerToken(admin.Headers["Authorization"])
	must(t, store.CreateUser(ctx, &sshdeck.User{ID: adminID, Name: "root", Admin: true, CreatedAt: now}))
	must(t, store.CreateToken(ctx, &sshdeck.Token{ID: "tok_admin", UserID: adminID, Name: "events",
		Hash: auth.HashToken(adminToken), CreatedAt: now}))
	svc := hosts.NewService(store, sealer, nil)
	for _, body := range seedHosts {
		var in hosts.Input
		must(t, json.Unmarshal([]byte(body), &in))
		_, err := svc.Create(ctx, userID, &in)
		must(t, err)
	}
	entries := files.NewService(store, nil)
	for _, e := range seedFiles {
		in := &files.Input{Path: e.path, HostID: &e.host}
		if e.recent {
			must(t, entries.AddRecent(ctx, userID, in))
		} else {
			_, err := entries.AddShortcut(ctx, userID, in)
			must(t, err)
		}
	}
	for i, title := range []string{"Scheduled maintenance", "Welcome"} {
		must(t, store.CreateAlert(ctx, &sshdeck.Alert{
			ID: fmt.Sprintf("alr_5eed%012d", i+1), Title: title, Message: "About " + title,
			ExpiresAt: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), Priority: sshdeck.PriorityHigh, Type: sshdeck.AlertInfo,
			CreatedAt: now,
		}))
	}
}

var seedFiles = []struct {
	host   int64
	path   string
	recent bool
}{
	{1, "/etc/hosts", true}, {1, "/var/log/syslog", true}, {2, "/srv/cache/redis.conf", true},
	{1, "/etc", false}, {1, "/home/ubuntu", false}, {2, "/srv/cache", false},
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
