package functions

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
)

// TestEventsCarryTheAuthorizersContext: the authorizer context of every
// route's event is what the authorizer answers, over the fixture, for the
// event's own Authorization header: principalId, userId, tokenId and the
// token's scopes (API Gateway adds integrationLatency).
func TestEventsCarryTheAuthorizersContext(t *testing.T) {
	c := startCloud(t)
	seed(t, c.store, c.sealer)
	authorizer, err := app.Authorizer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes.All {
		event := readEvent(t, r.Name)
		if r.Public {
			if event.RequestContext.Authorizer != nil || event.Headers["Authorization"] != "" {
				t.Errorf("events/%s.json, a public route's, has an authorizer context or a token", r.Name)
			}
			continue
		}
		resp, err := authorizer.Handle(context.Background(), authorizerEvent(t, event.Headers["Authorization"]))
		if err != nil {
			t.Errorf("%s: the authorizer refuses the event's token: %v", r.Name, err)
			continue
		}
		got := maps.Clone(event.RequestContext.Authorizer)
		delete(got, "integrationLatency")
		want := maps.Clone(resp.Context)
		want["principalId"] = resp.PrincipalID
		if !reflect.DeepEqual(got, want) {
			t.Errorf("events/%s.json: authorizer context %v, the authorizer answers %v", r.Name, got, want)
		}
	}
}

// authorizerEvent is events/authorizer/valid.json with the Authorization
// header given.
func authorizerEvent(t *testing.T, authorization string) events.APIGatewayCustomAuthorizerRequestTypeRequest {
	t.Helper()
	ev := readAuthorizerEvent(t, "valid")
	ev.Headers["Authorization"] = authorization
	ev.MultiValueHeaders["Authorization"] = []string{authorization}
	return ev
}

// call replays event through route's function and decodes its JSON answer
// into v (when not nil); it returns the status.
func call(t *testing.T, route string, event events.APIGatewayProxyRequest, v any) int {
	t.Helper()
	r, _ := routes.ByName(route)
	fn, err := entryPoint(r)
	must(t, err)
	resp, err := fn(context.Background(), event)
	must(t, err)
	if v != nil {
		if err := json.Unmarshal(body(t, resp), v); err != nil {
			t.Fatalf("%s: %v: %s", route, err, resp.Body)
		}
	}
	return resp.StatusCode
}

// TestLoginThenTheAuthorizer follows a login through AWS: login's
// function answers a token, which the authorizer allows with every scope
// of alice's (touching it: never used, its lastUsedAt is written, within
// the authorizer's IAM); a token made with it through create-token's
// function has the scopes asked for and no more, and a route that writes
// hosts refuses it (403) through the context the authorizer gives it.
func TestLoginThenTheAuthorizer(t *testing.T) {
	c := startCloud(t)
	f := seed(t, c.store, c.sealer)
	var login struct {
		Token, ID string
		Scopes    []sshdeck.Scope
	}
	if status := call(t, "login", fixtureEvent(t, f, "login"), &login); status != http.StatusOK {
		t.Fatalf("login: %d", status)
	}
	authorizer, err := app.Authorizer(context.Background())
	must(t, err)
	aliceID := readEvent(t, "get-host").RequestContext.Authorizer[auth.ContextUserID].(string)

	c.dynamo.ResetCalls()
	resp, err := authorizer.Handle(context.Background(), authorizerEvent(t, "Bearer "+login.Token))
	if err != nil {
		t.Fatalf("the authorizer refuses the login's token: %v", err)
	}
	want := map[string]any{"userId": aliceID, "tokenId": login.ID, "scopes": sshdeck.JoinScopes(sshdeck.UserScopes(false), " ")}
	if !reflect.DeepEqual(resp.Context, want) || resp.PrincipalID != aliceID {
		t.Errorf("the login token's context %v (principal %s), want %v", resp.Context, resp.PrincipalID, want)
	}
	if calls := c.dynamo.Calls(); !reflect.DeepEqual(calls, map[string]int{"GetItem": 2, "UpdateItem": 1}) {
		t.Errorf("the authorizer's calls for a token never used: %v, want 2 GetItem (token, user) and 1 UpdateItem (its lastUsedAt)", calls)
	}
	c.dynamo.CheckPolicy(t, "authorizer", iam.AuthorizerPolicy())
	if tok, err := c.store.Token(context.Background(), login.ID); err != nil || tok.LastUsedAt.IsZero() {
		t.Errorf("the login token after the authorizer: %+v, %v; want its lastUsedAt written", tok, err)
	}

	// A token for a script, made with the login's: read-only.
	event := fixtureEvent(t, f, "create-token")
	event.MultiValueHeaders["Authorization"] = []string{"Bearer " + login.Token}
	event.Headers["Authorization"] = "Bearer " + login.Token
	event.RequestContext.Authorizer = gatewayContext(resp)
	var made struct {
		Token  string
		Scopes []sshdeck.Scope
	}
	if status := call(t, "create-token", event, &made); status != http.StatusCreated {
		t.Fatalf("create-token: %d", status)
	}
	resp, err = authorizer.Handle(context.Background(), authorizerEvent(t, "Bearer "+made.Token))
	if err != nil {
		t.Fatalf("the authorizer refuses the new token: %v", err)
	}
	if got := resp.Context[auth.ContextScopes]; got != "hosts:read files:read" {
		t.Errorf("the new token's scopes in the context: %q, want the two asked for", got)
	}
	// It lists hosts, and may not create one.
	list := readEvent(t, "get-host")
	list.RequestContext.Authorizer = gatewayContext(resp)
	if status := call(t, "get-host", list, nil); status != http.StatusOK {
		t.Errorf("get-host with the read-only token: %d", status)
	}
	write := readEvent(t, "create-host")
	write.RequestContext.Authorizer = gatewayContext(resp)
	var refused struct{ Error, Code string }
	if status := call(t, "create-host", write, &refused); status != http.StatusForbidden || refused.Code != "forbidden" || !strings.Contains(refused.Error, "hosts:write") {
		t.Errorf("create-host with the read-only token: %d %+v, want 403 naming hosts:write", status, refused)
	}
}

// gatewayContext is the requestContext.authorizer API Gateway gives a function
// after the authorizer's answer.
func gatewayContext(resp events.APIGatewayCustomAuthorizerResponse) map[string]any {
	ctx := maps.Clone(resp.Context)
	ctx["principalId"] = resp.PrincipalID
	ctx["integrationLatency"] = 412
	return ctx
}

// TestLoginRefused: a wrong password is 401, after the same reads, and
// counts one failure on the name and one on the address, which is API
// Gateway's sourceIp (X-Forwarded-For, which any client writes, is not
// read), within login's IAM; a body without a password is 400 before any
// call.
func TestLoginRefused(t *testing.T) {
	c := startCloud(t)
	f := seed(t, c.store, c.sealer)
	event := fixtureEvent(t, f, "login")
	event.Body = `{"username":"alice","password":"not her password"}`
	c.dynamo.ResetCalls()
	var refused struct{ Error, Code string }
	if status := call(t, "login", event, &refused); status != http.StatusUnauthorized || refused.Code != "unauthorized" || refused.Error != "wrong user name or password" {
		t.Errorf("a wrong password: %d %+v", status, refused)
	}
	// The windows of the name and the address (read, then counted), the
	// user by name, its secrets; the audit record of the failure.
	if calls := c.dynamo.Calls(); !reflect.DeepEqual(calls, map[string]int{"GetItem": 4, "UpdateItem": 2, "PutItem": 1}) {
		t.Errorf("calls of a wrong password: %v", calls)
	}
	policy, _ := iam.RoutePolicy("login")
	c.dynamo.CheckPolicy(t, "login", policy)
	now := time.Now()
	if n, _, err := c.store.Failures(context.Background(), "addr:"+event.RequestContext.Identity.SourceIP, now); err != nil || n != 1 {
		t.Errorf("failures of the source address %s: %d, %v; want 1", event.RequestContext.Identity.SourceIP, n, err)
	}
	if n, _, err := c.store.Failures(context.Background(), "addr:198.51.100.99", now); err != nil || n != 0 {
		t.Errorf("failures of X-Forwarded-For's first address: %d, %v; want 0", n, err)
	}

	event.Body = `{"username":"alice"}`
	c.dynamo.ResetCalls()
	if status := call(t, "login", event, &refused); status != http.StatusBadRequest || refused.Code != "invalid" {
		t.Errorf("no password: %d %+v", status, refused)
	}
	if calls := c.dynamo.Calls(); len(calls) != 0 {
		t.Errorf("a login without a password read the store: %v", calls)
	}
}

// TestWrongTOTPCode: a wrong code on enable-totp is 403 (the token is
// good) and counts a failure on alice's name, within enable-totp's IAM.
func TestWrongTOTPCode(t *testing.T) {
	c := startCloud(t)
	f := seed(t, c.store, c.sealer)
	event := fixtureEvent(t, f, "enable-totp")
	var sent struct{ Code string }
	must(t, json.Unmarshal([]byte(event.Body), &sent))
	wrong := []byte(sent.Code)
	wrong[0] = '0' + (wrong[0]-'0'+5)%10
	event.Body = `{"code":"` + string(wrong) + `"}`
	c.dynamo.ResetCalls()
	var refused struct{ Error, Code string }
	if status := call(t, "enable-totp", event, &refused); status != http.StatusForbidden || refused.Code != "forbidden" {
		t.Errorf("a wrong code: %d %+v", status, refused)
	}
	// The user, the failures of the name, the secrets; the failure, and
	// its audit record.
	if calls := c.dynamo.Calls(); !reflect.DeepEqual(calls, map[string]int{"GetItem": 3, "UpdateItem": 1, "PutItem": 1}) {
		t.Errorf("calls of a wrong code: %v", calls)
	}
	policy, _ := iam.RoutePolicy("enable-totp")
	c.dynamo.CheckPolicy(t, "enable-totp", policy)
}
