package functions

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/lambdaapp"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
)

// replay is what each route's event must give, through its function and
// through the local server alike, and the DynamoDB calls the function makes
// (shared/store/dynamo/README.md lists the same numbers).
var replay = map[string]struct {
	status int
	calls  map[string]int
}{
	"healthz":    {http.StatusOK, map[string]int{"GetItem": 1}},
	"list-hosts": {http.StatusOK, map[string]int{"Query": 1}},
	"get-host":   {http.StatusOK, map[string]int{"GetItem": 1}},
	// The id, then one transaction: the host, its count of shortcuts and
	// the owner's count of hosts.
	"create-host": {http.StatusCreated, map[string]int{"UpdateItem": 1, "TransactWriteItems": 1}},
	"update-host": {http.StatusOK, map[string]int{"GetItem": 1, "PutItem": 1}},
	// The host goes in a transaction with the owner's count of hosts; its
	// entries (and its count of shortcuts) after it: a Query of them, one
	// BatchWriteItem per 25.
	"delete-host": {http.StatusOK, map[string]int{"TransactWriteItems": 1, "Query": 1, "BatchWriteItem": 1}},

	// The host is read first, then its list (or the entry deleted).
	"list-recent-files":  {http.StatusOK, map[string]int{"GetItem": 1, "Query": 1}},
	"delete-recent-file": {http.StatusOK, map[string]int{"GetItem": 1, "DeleteItem": 1}},
	"list-shortcuts":     {http.StatusOK, map[string]int{"GetItem": 1, "Query": 1}},
	// A shortcut's delete is a transaction with its host's count.
	"delete-shortcut": {http.StatusOK, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
	// Adds check the host in their transaction: a recent entry, then a
	// Query for the entries past 100; a shortcut with the increment of
	// the host's count of shortcuts.
	"add-recent-file": {http.StatusOK, map[string]int{"TransactWriteItems": 1, "Query": 1}},
	"add-shortcut":    {http.StatusOK, map[string]int{"TransactWriteItems": 1}},

	"list-alerts":   {http.StatusOK, map[string]int{"Query": 2}},
	"dismiss-alert": {http.StatusOK, map[string]int{"Query": 1, "PutItem": 1}},
	"publish-alert": {http.StatusCreated, map[string]int{"PutItem": 1}},
	"delete-alert":  {http.StatusOK, map[string]int{"DeleteItem": 1}},

	// A page not cached yet: read the cache, count the call to GitHub in
	// the minute's budget, fetch, write the cache.
	"releases-feed": {http.StatusOK, map[string]int{"GetItem": 1, "UpdateItem": 1, "PutItem": 1}},
}

// TestFunctionsAnswerLikeTheLocalServer replays events/<route>.json through
// the entry point of the route's function, built by lambdaapp.Route from the
// environment as main builds it, over DynamoDB and KMS; and the same request
// through the local server over the embedded store. Both hold the same
// fixture; their answers must match.
func TestFunctionsAnswerLikeTheLocalServer(t *testing.T) {
	for _, r := range routes.All {
		t.Run(r.Name, func(t *testing.T) {
			want, ok := replay[r.Name]
			if !ok {
				t.Fatalf("route %s has no expected answer in this test", r.Name)
			}
			event := readEvent(t, r.Name)
			if event.HTTPMethod != r.Method || event.Resource != r.Path {
				t.Fatalf("events/%s.json is %s %s, the route is %s %s", r.Name, event.HTTPMethod, event.Resource, r.Method, r.Path)
			}
			c := startCloud(t)
			seed(t, c.store, c.sealer)
			fn, err := entryPoint(r)
			if err != nil {
				t.Fatal(err)
			}
			c.dynamo.ResetCalls()
			c.kms.ResetCalls()
			resp, err := fn(context.Background(), event)
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if calls := c.dynamo.Calls(); !reflect.DeepEqual(calls, want.calls) {
				t.Errorf("DynamoDB calls %v, want %v", calls, want.calls)
			}
			// What the CDK app grants the function must cover its calls:
			// their actions, on their partitions.
			policy, ok := iam.RoutePolicy(r.Name)
			if !ok {
				t.Fatalf("route %s has no IAM policy in shared/store/dynamo/iam", r.Name)
			}
			c.dynamo.CheckPolicy(t, r.Name, policy)
			checkKMS(t, r, c.kms.AllCalls())
			if got := header(resp, "X-Request-Id"); got != event.RequestContext.RequestID {
				t.Errorf("X-Request-Id %q, want the API Gateway request id %q", got, event.RequestContext.RequestID)
			}

			local := localServer(t).Router()
			rec := httptest.NewRecorder()
			local.ServeHTTP(rec, requestOf(t, event))

			if resp.StatusCode != want.status || rec.Code != want.status {
				t.Fatalf("status: function %d, local %d, want %d\nfunction body: %s\nlocal body: %s", resp.StatusCode, rec.Code, want.status, resp.Body, rec.Body)
			}
			for _, h := range []string{"Content-Type", "ETag", "Location", "WWW-Authenticate"} {
				if got, local := newAlertID.ReplaceAllString(header(resp, h), "<alert id>"), newAlertID.ReplaceAllString(rec.Header().Get(h), "<alert id>"); got != local {
					t.Errorf("%s: function %q, local %q", h, got, local)
				}
			}
			if got, local := normalize(t, body(t, resp)), normalize(t, rec.Body.Bytes()); !reflect.DeepEqual(got, local) {
				t.Errorf("body:\nfunction %v\nlocal    %v", got, local)
			}
		})
	}
}

// checkKMS fails t when the function of route r made KMS calls its role
// lacks: the CDK app grants kms:GenerateDataKey and kms:Decrypt to the
// functions of routes marked Credentials, and nothing of KMS to the others.
func checkKMS(t *testing.T, r routes.Route, calls map[string]int) {
	t.Helper()
	for op := range calls {
		if !r.Credentials || (op != "GenerateDataKey" && op != "Decrypt") {
			t.Errorf("%s (Credentials %t) made KMS calls %v, which its role does not allow", r.Name, r.Credentials, calls)
			return
		}
	}
}

// TestFunctionWithoutAuthorizerContextIs401: a function trusts only the
// caller API Gateway put into the event; without one it answers 401.
func TestFunctionWithoutAuthorizerContextIs401(t *testing.T) {
	c := startCloud(t)
	seed(t, c.store, c.sealer)
	fn, err := lambdaapp.Route("get-host")
	if err != nil {
		t.Fatal(err)
	}
	event := readEvent(t, "get-host")
	event.RequestContext.Authorizer = nil
	c.dynamo.ResetCalls()
	resp, err := fn.Handle(context.Background(), event)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Body, `"code":"unauthorized"`) {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	if calls := c.dynamo.Calls(); len(calls) != 0 {
		t.Fatalf("an unauthenticated request read the store: %v", calls)
	}
}

// TestFunctionConfigFailsFast: a function without its settings refuses to
// start with a sentence naming the missing one.
func TestFunctionConfigFailsFast(t *testing.T) {
	startCloud(t)
	t.Setenv("AWS_REGION", "")
	if _, err := lambdaapp.Route("healthz"); err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("healthz without a region: %v", err)
	}
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("SSHDECK_KMS_KEY_ID", "")
	if _, err := lambdaapp.Route("get-host"); err == nil || !strings.Contains(err.Error(), "SSHDECK_KMS_KEY_ID") {
		t.Fatalf("get-host without a KMS key: %v", err)
	}
	// delete-host handles no credentials: it needs no key.
	if _, err := lambdaapp.Route("delete-host"); err != nil {
		t.Fatalf("delete-host without a KMS key: %v", err)
	}
	t.Setenv("SSHDECK_TABLE", "")
	if _, err := app.Authorizer(context.Background()); err == nil || !strings.Contains(err.Error(), "SSHDECK_TABLE") {
		t.Fatalf("authorizer without a table: %v", err)
	}
	if _, err := lambdaapp.Route("no-such-route"); err == nil {
		t.Fatal("a route outside the table started")
	}
}

// localServer is `sshdeck serve` in process, over the same fixture: the
// same wiring (app.Open over the embedded store, api.FromApp) with the
// settings of the environment, the table aside.
func localServer(t *testing.T) *api.Server {
	t.Helper()
	cfg, err := config.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Table, cfg.Data = "", t.TempDir()
	a, err := app.Open(t.Context(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	seed(t, a.Store, a.Sealer)
	apiCfg, err := api.FromApp(a)
	if err != nil {
		t.Fatal(err)
	}
	apiCfg.Authenticator = a.Auth
	return api.New(apiCfg)
}

// requestOf is the HTTP request an event stands for.
func requestOf(t *testing.T, ev events.APIGatewayProxyRequest) *http.Request {
	t.Helper()
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			t.Fatal(err)
		}
	}
	target := ev.Path
	if q := url.Values(ev.MultiValueQueryStringParameters); len(q) > 0 {
		target += "?" + q.Encode()
	}
	req := httptest.NewRequest(ev.HTTPMethod, target, bytes.NewReader(body))
	for name, values := range ev.MultiValueHeaders {
		for _, v := range values {
			req.Header.Add(name, v)
		}
	}
	return req
}

// header reads a response header; the adapter writes them all as
// multiValueHeaders.
func header(resp events.APIGatewayProxyResponse, name string) string {
	return http.Header(resp.MultiValueHeaders).Get(name)
}

func body(t *testing.T, resp events.APIGatewayProxyResponse) []byte {
	t.Helper()
	if !resp.IsBase64Encoded {
		return []byte(resp.Body)
	}
	b, err := base64.StdEncoding.DecodeString(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newAlertID matches the id of an alert published by a request: random, so
// it differs between two runs of the same request.
var newAlertID = regexp.MustCompile(`alr_[0-9a-f]{16}`)

// timeFields are the fields whose timestamps are the time of the request.
var timeFields = map[string]bool{"createdAt": true, "updatedAt": true, "lastOpened": true, "updated": true}

// normalize decodes a JSON body with what differs between two runs of the
// same request replaced: timestamps, once shown to be RFC 3339, and the ids
// of new alerts.
func normalize(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, b)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "id" && newAlertID.MatchString(s) && !strings.HasPrefix(s, "alr_5eed") {
					v[k] = "<alert id>"
					continue
				}
				if s, ok := x.(string); ok && timeFields[k] {
					if _, err := time.Parse(time.RFC3339, s); err != nil {
						t.Errorf("%s %q is not RFC 3339", k, s)
					}
					v[k] = "<time>"
					continue
				}
				v[k] = walk(x)
			}
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		}
		return v
	}
	return walk(v)
}
