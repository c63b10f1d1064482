package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// issue makes a token for the named user with exactly the scopes, as every
// token is made (auth.Admin.Issue).
func (e *env) issue(name string, scopes ...sshdeck.Scope) string {
	e.t.Helper()
	bearer, _, err := e.admin.CreateScopedToken(context.Background(), name, "scoped", scopes, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return bearer
}

// routeRequest is a request of the route with an empty body: enough to
// reach its handler, which may well answer 400 or 404 to it.
func routeRequest(r routes.Route, token string) request {
	req := request{method: r.Method, path: strings.NewReplacer("{id}", "1", "{name...}", "x", "{name}", "x").Replace(r.Path), token: token}
	if r.Method != "GET" {
		req.contentType, req.body = "application/json", []byte(`{}`)
	}
	return req
}

// missingScope reports whether resp is the route wrapper's answer to a
// token without the route's scope: 403 forbidden naming it.
func missingScope(t *testing.T, resp *response, scope sshdeck.Scope) bool {
	t.Helper()
	if resp.Status != http.StatusForbidden {
		return false
	}
	var body web.ErrorBody
	resp.json(t, &body)
	return body.Code == sshdeck.Forbidden && strings.Contains(body.Error, `"`+string(scope)+`"`)
}

// TestScopeMatrix is the scope check of every route of the table (a route
// added later is covered as it is added): a token with exactly the route's
// scope reaches the handler (whatever it answers the empty request, it is
// not the wrapper's 401 or 403); a token with every scope but the route's
// is 403 forbidden naming the scope; on an admin route, a token of a user
// who is no admin is 403 even when it was made with every scope. A route
// any valid token may call is reached with a token of any one scope.
func TestScopeMatrix(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	reached := func(r routes.Route, token, what string) {
		t.Helper()
		resp := e.do(routeRequest(r, token))
		if resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden || resp.Status >= 500 {
			t.Errorf("%s (%s %s) with %s: %d %s, want the handler's answer", r.Name, r.Method, r.Path, what, resp.Status, resp.Body)
		}
	}
	n := 0
	for _, r := range routes.All {
		if r.Public {
			continue
		}
		n++
		// A user of the route's own, so that what one route's handler
		// does (a TOTP secret, a revoked token) touches no other's; an
		// admin, so that "every scope but the route's" has all the others.
		name := "m-" + r.Name
		if _, err := e.admin.AddUser(ctx, name, true); err != nil {
			t.Fatal(err)
		}
		if r.Scope == "" {
			for _, s := range sshdeck.AllScopes {
				reached(r, e.issue(name, s), "a token of "+string(s)+" alone")
			}
			continue
		}
		if !slices.Contains(sshdeck.AllScopes, r.Scope) {
			t.Errorf("%s: scope %q is not one of sshdeck.AllScopes", r.Name, r.Scope)
			continue
		}
		reached(r, e.issue(name, r.Scope), "a token of "+string(r.Scope)+" alone")

		others := slices.DeleteFunc(slices.Clone(sshdeck.AllScopes), func(s sshdeck.Scope) bool { return s == r.Scope })
		if resp := e.do(routeRequest(r, e.issue(name, others...))); !missingScope(t, resp, r.Scope) {
			t.Errorf("%s (%s %s) with every scope but %s: %d %s, want 403 forbidden naming the scope", r.Name, r.Method, r.Path, r.Scope, resp.Status, resp.Body)
		}
		if r.Scope == sshdeck.ScopeAdmin {
			// alice is no admin: a token made with the admin scope does
			// not hold it (its scopes are its own within its user's).
			for what, token := range map[string]string{"alice's own token": e.alice, "alice's with every scope": e.issue("alice", sshdeck.AllScopes...)} {
				if resp := e.do(routeRequest(r, token)); !missingScope(t, resp, r.Scope) {
					t.Errorf("%s (%s %s) with %s: %d %s, want 403 forbidden naming admin", r.Name, r.Method, r.Path, what, resp.Status, resp.Body)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("routes.All has no route that needs a token")
	}
}

// TestScopeOfAdminFollowsTheUser: withdrawing a user's admin flag takes
// the admin scope from their tokens at once; granting it again gives it
// back to the tokens made with it.
func TestScopeOfAdminFollowsTheUser(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.admin.AddUser(ctx, "root2", true); err != nil {
		t.Fatal(err)
	}
	token := e.issue("root2", sshdeck.ScopeAdmin)
	if resp := e.get(token, "/users"); resp.Status != http.StatusOK {
		t.Fatalf("admin: %d %s", resp.Status, resp.Body)
	}
	id := e.userID(token)
	if resp := e.sendJSON("PATCH", e.root, "/users/"+id, map[string]any{"admin": false}); resp.Status != http.StatusOK {
		t.Fatalf("withdraw admin: %d %s", resp.Status, resp.Body)
	}
	if resp := e.get(token, "/users"); !missingScope(t, resp, sshdeck.ScopeAdmin) {
		t.Fatalf("admin withdrawn: %d %s, want 403 naming admin", resp.Status, resp.Body)
	}
	if resp := e.sendJSON("PATCH", e.root, "/users/"+id, map[string]any{"admin": true}); resp.Status != http.StatusOK {
		t.Fatalf("grant admin: %d %s", resp.Status, resp.Body)
	}
	if resp := e.get(token, "/users"); resp.Status != http.StatusOK {
		t.Fatalf("admin again: %d %s", resp.Status, resp.Body)
	}
}
