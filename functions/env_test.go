package functions

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/internal/cloudtest"
	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/internal/eventstest"
	"github.com/sshdeck/sshdeck/internal/kmstest"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// cloud is what a deployed function sees, in process: DynamoDB (minidyn),
// KMS and EventBridge (fakes speaking their protocols), GitHub's releases
// API and a remote alerts list, named by the environment exactly as the
// CDK stack names them to a function (internal/cloudtest, which the Lambda
// benchmark shares).
type cloud struct {
	dynamo *dynamotest.Server
	kms    *kmstest.Server
	events *eventstest.Server
	store  sshdeck.Store
	sealer *secret.Sealer
}

func startCloud(t *testing.T) *cloud {
	t.Helper()
	c := cloudtest.Start(t)
	for _, kv := range c.Env() {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	return &cloud{dynamo: c.Dynamo, kms: c.KMS, events: c.Events, store: c.Store, sealer: c.Sealer}
}

// eventsDir holds the sample events, relative to this package.
var eventsDir = filepath.Join("..", "events")

// seed writes the fixture the sample events were written for
// (events/README.md, cloudtest.Seed) into a store, sealing with sealer.
func seed(t *testing.T, store sshdeck.Store, sealer *secret.Sealer) *cloudtest.Fixture {
	t.Helper()
	f, err := cloudtest.SeedFixture(context.Background(), store, sealer, eventsDir)
	must(t, err)
	return f
}

// readEvent reads events/<name>.json as it is.
func readEvent(t *testing.T, name string) events.APIGatewayProxyRequest {
	t.Helper()
	ev, err := cloudtest.ReadEvent(eventsDir, name)
	must(t, err)
	return ev
}

// fixtureEvent reads events/<name>.json as it must be sent now to the
// fixture f: with the current TOTP code where it sends one.
func fixtureEvent(t *testing.T, f *cloudtest.Fixture, name string) events.APIGatewayProxyRequest {
	t.Helper()
	ev, err := f.Event(eventsDir, name, time.Now())
	must(t, err)
	return ev
}

func readAuthorizerEvent(t *testing.T, name string) events.APIGatewayCustomAuthorizerRequestTypeRequest {
	t.Helper()
	ev, err := cloudtest.ReadAuthorizerEvent(eventsDir, name)
	must(t, err)
	return ev
}

// eventToken is the bearer token of an authorizer event.
func eventToken(t *testing.T, name string) string {
	t.Helper()
	token, err := cloudtest.EventToken(eventsDir, name)
	must(t, err)
	return token
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
