package functions

import (
	"bytes"
	"context"
	"encoding/base32"
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

	"github.com/sshdeck/sshdeck/internal/cloudtest"
	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/lambdaapp"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
)

// The scopes of the fixture's users, as answers list them (AllScopes order).
const (
	aliceScopes = `["hosts:read","hosts:write","files:read","files:write","alerts:read","tunnels:read","tunnels:write","tokens"]`
)

// replay is what each route's event must give, through its function and
// through the local server alike, and the DynamoDB calls the function makes
// (shared/store/dynamo/README.md lists the same numbers). body, when set,
// is the answer the fixture and the event make, as normalize leaves it.
var replay = map[string]struct {
	status int
	calls  map[string]int
	body   string
}{
	"healthz":    {status: http.StatusOK, calls: map[string]int{"GetItem": 1}},
	"list-hosts": {status: http.StatusOK, calls: map[string]int{"Query": 1}},
	"get-host":   {status: http.StatusOK, calls: map[string]int{"GetItem": 1}},
	// The id, then one transaction: the host, its count of shortcuts and
	// the owner's count of hosts.
	// A host's save lists its owner's tunnels (shared/hosts, tunnels.go).
	"create-host": {status: http.StatusCreated, calls: map[string]int{"UpdateItem": 1, "TransactWriteItems": 1, "Query": 1}},
	"update-host": {status: http.StatusOK, calls: map[string]int{"GetItem": 1, "TransactWriteItems": 1, "Query": 1}},
	// The host goes in a transaction with the owner's count of hosts; its
	// entries (and its count of shortcuts) after it: a Query of them, one
	// BatchWriteItem per 25.
	// The host is read first: its name tells the tunnels naming it.
	"delete-host": {status: http.StatusOK, calls: map[string]int{"GetItem": 1, "TransactWriteItems": 1, "Query": 2, "BatchWriteItem": 1}},
	// The ids at once, no read of a stored hop (the second item's hop is
	// the first item), one transaction of both hosts and the owner's count
	// of hosts, then the owner's tunnels (none) for names they wait for.
	"import-hosts": {status: http.StatusCreated, calls: map[string]int{"UpdateItem": 1, "TransactWriteItems": 1, "Query": 1}},
	"export-hosts": {status: http.StatusOK, calls: map[string]int{"Query": 1}},

	// The host is read first, then its list (or the entry deleted).
	"list-recent-files":  {status: http.StatusOK, calls: map[string]int{"GetItem": 1, "Query": 1}},
	"delete-recent-file": {status: http.StatusOK, calls: map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
	"list-shortcuts":     {status: http.StatusOK, calls: map[string]int{"GetItem": 1, "Query": 1}},
	// A shortcut's delete is a transaction with its host's count.
	"delete-shortcut": {status: http.StatusOK, calls: map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
	// Adds check the host in their transaction: a recent entry, then a
	// Query for the entries past 100; a shortcut with the increment of
	// the host's count of shortcuts.
	"add-recent-file": {status: http.StatusOK, calls: map[string]int{"TransactWriteItems": 1, "Query": 1}},
	"add-shortcut":    {status: http.StatusOK, calls: map[string]int{"TransactWriteItems": 1}},

	"list-alerts":   {status: http.StatusOK, calls: map[string]int{"Query": 2}},
	"dismiss-alert": {status: http.StatusOK, calls: map[string]int{"Query": 1, "TransactWriteItems": 1}},
	"publish-alert": {status: http.StatusCreated, calls: map[string]int{"TransactWriteItems": 1}},
	"delete-alert":  {status: http.StatusOK, calls: map[string]int{"TransactWriteItems": 1}},

	// A page not cached yet: read the cache, count the call to GitHub in
	// the minute's budget, fetch, write the cache.
	"releases-feed": {status: http.StatusOK, calls: map[string]int{"GetItem": 1, "UpdateItem": 1, "PutItem": 1}},

	// alice logs in with her password (no TOTP: hers waits for its first
	// code): the failure windows of her name and of the address (read,
	// none), her user by name and her login secrets, the two windows read
	// again once the password matched (a burst of failures meanwhile
	// locks her out still), then the token with every scope of hers: the
	// user, the count of her live tokens, the transaction of the token's
	// items.
	"login": {status: http.StatusOK, calls: map[string]int{"GetItem": 7, "Query": 1, "TransactWriteItems": 1},
		body: `{"token":"<token>","id":"<new id>","expiresAt":"<time>","scopes":` + aliceScopes + `}`},
	"get-me": {status: http.StatusOK, calls: map[string]int{"GetItem": 2},
		body: `{"id":"usr_5f1c2a7e9b3d4c60","username":"alice","admin":false,"disabled":false,"createdAt":"<time>","totp":false,"hasPassword":true,"scopes":` + aliceScopes + `}`},
	// The user, the failures of her name, the secrets, the failures again
	// once the current password matched, the new hash; then her other
	// tokens revoked (tok_ci; tok_valid, the caller's, stays): the listed
	// ones and gsi1's (2 Query), tok_ci read (2 GetItem) and revoked (a
	// transaction).
	"change-password": {status: http.StatusOK, calls: map[string]int{"GetItem": 6, "Query": 2, "TransactWriteItems": 2},
		body: `{"message":"Password changed"}`},
	// The user, the secrets, the sealed new secret (pending).
	"create-totp": {status: http.StatusOK, calls: map[string]int{"GetItem": 2, "TransactWriteItems": 1},
		body: `{"secret":"<totp secret>","url":"<otpauth url>"}`},
	// The user, the failures of her name, the secrets, the failures again
	// once the code matched, then the secrets with TOTP on (the step of
	// the code spent with it).
	"enable-totp": {status: http.StatusOK, calls: map[string]int{"GetItem": 4, "TransactWriteItems": 1},
		body: `{"message":"TOTP enabled"}`},
	// root's, as enable-totp's: one put spends the code's step and turns
	// TOTP off.
	"disable-totp": {status: http.StatusOK, calls: map[string]int{"GetItem": 4, "TransactWriteItems": 1},
		body: `{"message":"TOTP disabled"}`},
	// The users by name, and the login secrets of each.
	"list-users": {status: http.StatusOK, calls: map[string]int{"Query": 1, "GetItem": 2},
		body: `[{"id":"usr_5f1c2a7e9b3d4c60","username":"alice","admin":false,"disabled":false,"createdAt":"<time>","totp":false,"hasPassword":true},` +
			`{"id":"usr_9d0e5c3b7a1f2e84","username":"root","admin":true,"disabled":false,"createdAt":"<time>","totp":true,"hasPassword":true}]`},
	// The user and its name in one transaction, its secrets.
	"create-user": {status: http.StatusCreated, calls: map[string]int{"TransactWriteItems": 1, "PutItem": 1},
		body: `{"id":"<new id>","username":"bob","admin":false,"disabled":false,"createdAt":"<time>","totp":false,"hasPassword":true}`},
	// root disables alice: the user, by name, UpdateUser (a read and the
	// transaction of both items); her tokens revoked (2 Query, then
	// tok_valid and tok_ci: 2 GetItem and a transaction each); her
	// secrets for the answer.
	"update-user": {status: http.StatusOK, calls: map[string]int{"GetItem": 8, "TransactWriteItems": 3, "Query": 2},
		body: `{"id":"usr_5f1c2a7e9b3d4c60","username":"alice","admin":false,"disabled":true,"createdAt":"<time>","totp":false,"hasPassword":true}`},
	// The user, and gsi1's Query of her tokens.
	"list-tokens": {status: http.StatusOK, calls: map[string]int{"GetItem": 1, "Query": 1},
		body: `[{"id":"tok_ci","name":"ci","scopes":["hosts:read"],"createdAt":"<time>","expiresAt":null,"lastUsedAt":null,"revoked":false},` +
			`{"id":"tok_valid","name":"events","scopes":` + aliceScopes + `,"createdAt":"<time>","expiresAt":null,"lastUsedAt":"<time>","revoked":false}]`},
	// The user, then as login's token: the user, the count, the
	// transaction.
	"create-token": {status: http.StatusCreated, calls: map[string]int{"GetItem": 2, "Query": 1, "TransactWriteItems": 1},
		body: `{"id":"<new id>","name":"ci-deploy","scopes":["hosts:read","files:read"],"createdAt":"<time>","expiresAt":"<time>","lastUsedAt":null,"revoked":false,"token":"<token>"}`},
	// The token by id (its owner), then RevokeToken: by id again and the
	// transaction.
	"delete-token": {status: http.StatusOK, calls: map[string]int{"GetItem": 4, "TransactWriteItems": 1},
		body: `{"message":"Token revoked"}`},
	// Alice's records since 2026-01-01 (she is no admin): gsi1's Query of
	// her actor's partition.
	"list-audit": {status: http.StatusOK, calls: map[string]int{"Query": 1},
		body: `[{"id":"aud_5eed0000000000000000000000000001","time":"2026-11-20T09:00:00Z","actor":"usr_5f1c2a7e9b3d4c60","action":"create-host","target":"host 1","requestId":"req-5eed-1","sourceIp":"203.0.113.24","outcome":"success"},` +
			`{"id":"aud_5eed0000000000000000000000000003","time":"2026-11-20T09:02:00Z","actor":"usr_5f1c2a7e9b3d4c60","action":"create-host","target":"host 2","requestId":"req-5eed-3","sourceIp":"203.0.113.24","outcome":"success"}]`},
	// All of hers, one NDJSON line each.
	"export-audit": {status: http.StatusOK, calls: map[string]int{"Query": 1},
		body: `{"id":"aud_5eed0000000000000000000000000001","time":"2026-11-20T09:00:00Z","actor":"usr_5f1c2a7e9b3d4c60","action":"create-host","target":"host 1","requestId":"req-5eed-1","sourceIp":"203.0.113.24","outcome":"success"}` + "\n" +
			`{"id":"aud_5eed0000000000000000000000000003","time":"2026-11-20T09:02:00Z","actor":"usr_5f1c2a7e9b3d4c60","action":"create-host","target":"host 2","requestId":"req-5eed-3","sourceIp":"203.0.113.24","outcome":"success"}` + "\n"},
}

// TestFunctionsAnswerLikeTheLocalServer replays events/<route>.json through
// the entry point of the route's function, built by lambdaapp.Route from the
// environment as main builds it, over DynamoDB and KMS; and the same request
// through the local server over the embedded store. Both hold the same
// fixture; their answers must match, and be what the fixture and the event
// make where the table above says.
func TestFunctionsAnswerLikeTheLocalServer(t *testing.T) {
	for _, r := range routes.All {
		t.Run(r.Name, func(t *testing.T) {
			want, ok := replay[r.Name]
			if !ok {
				t.Fatalf("route %s has no expected answer in this test", r.Name)
			}
			c := startCloud(t)
			fixture := seed(t, c.store, c.sealer)
			event := fixtureEvent(t, fixture, r.Name)
			if event.HTTPMethod != r.Method || event.Resource != r.Path {
				t.Fatalf("events/%s.json is %s %s, the route is %s %s", r.Name, event.HTTPMethod, event.Resource, r.Method, r.Path)
			}
			if _, ok := event.RequestContext.Authorizer[auth.ContextUserID]; ok == r.Public {
				t.Fatalf("events/%s.json: authorizer context %v, for a route Public %t", r.Name, event.RequestContext.Authorizer, r.Public)
			}
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

			server, localFixture := localServer(t)
			rec := httptest.NewRecorder()
			server.Router().ServeHTTP(rec, requestOf(t, fixtureEvent(t, localFixture, r.Name)))

			if resp.StatusCode != want.status || rec.Code != want.status {
				t.Fatalf("status: function %d, local %d, want %d\nfunction body: %s\nlocal body: %s", resp.StatusCode, rec.Code, want.status, resp.Body, rec.Body)
			}
			for _, h := range []string{"Content-Type", "ETag", "Location", "WWW-Authenticate", "Cache-Control"} {
				if got, local := replaceNewIDs(t, header(resp, h)), replaceNewIDs(t, rec.Header().Get(h)); got != local {
					t.Errorf("%s: function %q, local %q", h, got, local)
				}
			}
			got := normalize(t, body(t, resp))
			if local := normalize(t, rec.Body.Bytes()); !reflect.DeepEqual(got, local) {
				t.Errorf("body:\nfunction %v\nlocal    %v", got, local)
			}
			if want.body != "" {
				if wantBody := normalize(t, []byte(want.body)); !reflect.DeepEqual(got, wantBody) {
					t.Errorf("body:\nfunction %s\nwant     %s", jsonOf(got), jsonOf(wantBody))
				}
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
// settings of the environment, the table aside. Its fixture's TOTP secrets
// are its own.
func localServer(t *testing.T) (*api.Server, *cloudtest.Fixture) {
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
	fixture := seed(t, a.Store, a.Sealer)
	apiCfg, err := api.FromApp(a)
	if err != nil {
		t.Fatal(err)
	}
	apiCfg.Authenticator = a.Auth
	return api.New(apiCfg), fixture
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

// newID matches a server-made id (an alert's, a token's, a user's): one
// that is not the fixture's is new, random, and differs between two runs
// of the same request.
var newID = regexp.MustCompile(`\b(alr|tok|usr)_[0-9a-f]{16}\b`)

// replaceNewIDs writes every new id in s as "<new id>".
func replaceNewIDs(t *testing.T, s string) string {
	t.Helper()
	fixed := map[string]bool{}
	for _, name := range []string{"get-host", "publish-alert"} {
		id, _ := readEvent(t, name).RequestContext.Authorizer[auth.ContextUserID].(string)
		fixed[id] = true
	}
	return newID.ReplaceAllStringFunc(s, func(id string) string {
		if fixed[id] || strings.HasPrefix(id, "alr_5eed") {
			return id
		}
		return "<new id>"
	})
}

// timeFields are the fields whose timestamps are the time of the request
// (or of the fixture, or a time from it).
var timeFields = map[string]bool{"createdAt": true, "updatedAt": true, "lastOpened": true, "updated": true,
	"expiresAt": true, "lastUsedAt": true}

// secretFields are the fields that hold a new secret, each once checked
// for its shape: a bearer token, a TOTP secret and its otpauth:// URL.
var secretFields = map[string]struct {
	placeholder string
	valid       func(string) bool
}{
	"token": {"<token>", auth.WellFormed},
	"secret": {"<totp secret>", func(s string) bool {
		key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s)
		return err == nil && len(key) == 20
	}},
	"url": {"<otpauth url>", func(s string) bool { return strings.HasPrefix(s, "otpauth://totp/sshdeck:") }},
}

// normalize decodes a JSON body with what differs between two runs of the
// same request replaced: timestamps, once shown to be RFC 3339, new ids and
// new secrets, once shown to be of their shape. A value already a
// placeholder ("<time>") stays.
func normalize(t *testing.T, b []byte) any {
	t.Helper()
	// A body of several values is NDJSON (the audit export): its lines
	// as an array.
	var values []any
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("body is not JSON: %v: %s", err, b)
		}
		values = append(values, v)
	}
	var v any = values
	if len(values) == 1 {
		v = values[0]
	}
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				s, ok := x.(string)
				switch {
				case !ok:
					v[k] = walk(x)
				case strings.HasPrefix(s, "<") && strings.HasSuffix(s, ">"):
				case timeFields[k]:
					if _, err := time.Parse(time.RFC3339, s); err != nil {
						t.Errorf("%s %q is not RFC 3339", k, s)
					}
					v[k] = "<time>"
				case secretFields[k].placeholder != "" && secretFields[k].valid(s):
					v[k] = secretFields[k].placeholder
				default:
					v[k] = replaceNewIDs(t, s)
				}
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

// jsonOf writes a normalized body as JSON, for messages.
func jsonOf(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSpace(b.String())
}
