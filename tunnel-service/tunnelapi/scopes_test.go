package tunnelapi

import (
	"context"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// issue makes a token for the named user with exactly the scopes, as every
// token is made (auth.Admin.Issue).
func (e *apiEnv) issue(name string, scopes ...sshdeck.Scope) string {
	e.t.Helper()
	bearer, _, err := e.admin.CreateScopedToken(context.Background(), name, "scoped", scopes, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return bearer
}

// probe sends the route an empty request (a body of {} where it takes
// one) and returns the status. A status stream is closed once its status
// and headers are in; any other answer is read whole and checked against
// openapi.yaml.
func (e *apiEnv) probe(rt routes.Route, token string) (int, []byte) {
	e.t.Helper()
	path := strings.NewReplacer("{name...}", "x", "{name}", "x").Replace(rt.Path)
	var body io.Reader
	if rt.Method != "GET" {
		body = strings.NewReader(`{}`)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, rt.Method, e.url+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", rt.Method, path, err)
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		return resp.StatusCode, nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading the body: %v", rt.Method, path, err)
	}
	e.record(b)
	e.spec.Check(e.t, httptest.NewRequest(rt.Method, path, nil), resp.StatusCode, resp.Header, b)
	return resp.StatusCode, b
}

// TestAPIScopeMatrix is the scope check of every route of routes.Tunnel (a
// route added later is covered as it is added): a token with exactly the
// route's scope reaches the handler (whatever it answers the empty
// request, not the wrapper's 401 or 403), and a token with every scope but
// the route's is 403 forbidden naming the scope.
func TestAPIScopeMatrix(t *testing.T) {
	e := newAPIEnv(t, apiSetup{})
	ctx := context.Background()
	// An admin, so that "every scope but the route's" has all the others.
	if _, err := e.admin.AddUser(ctx, "dave", true); err != nil {
		t.Fatal(err)
	}
	doc := e.spec.Doc()
	n := 0
	for _, rt := range routes.Tunnel {
		if rt.Public {
			continue
		}
		n++
		scopes := []sshdeck.Scope{rt.Scope}
		if rt.Scope == "" {
			scopes = sshdeck.AllScopes // any one of them will do
		} else if !slices.Contains(sshdeck.AllScopes, rt.Scope) {
			t.Errorf("%s: scope %q is not one of sshdeck.AllScopes", rt.Name, rt.Scope)
			continue
		}
		for _, s := range scopes {
			status, body := e.probe(rt, e.issue("dave", s))
			if status == http.StatusUnauthorized || status == http.StatusForbidden || status >= 500 {
				t.Errorf("%s (%s %s) with a token of %s alone: %d %s, want the handler's answer", rt.Name, rt.Method, rt.Path, s, status, body)
			}
		}
		if rt.Scope == "" {
			continue
		}
		others := slices.DeleteFunc(slices.Clone(sshdeck.AllScopes), func(s sshdeck.Scope) bool { return s == rt.Scope })
		status, body := e.probe(rt, e.issue("dave", others...))
		r := &apiResponse{status: status, body: body}
		r.wantError(t, http.StatusForbidden, sshdeck.Forbidden, `"`+string(rt.Scope)+`"`)
		// And the document says so.
		path := strings.Replace(rt.Path, "...}", "}", 1)
		if item := doc.Paths.Find(path); item == nil || item.GetOperation(rt.Method) == nil {
			t.Errorf("%s (%s %s) is not in openapi.yaml", rt.Name, rt.Method, path)
		} else if op := item.GetOperation(rt.Method); op.Responses.Status(http.StatusForbidden) == nil {
			t.Errorf("%s (%s %s): openapi.yaml has no 403 response", rt.Name, rt.Method, path)
		} else if got, _ := op.Extensions["x-sshdeck-scope"].(string); got != string(rt.Scope) {
			t.Errorf("%s (%s %s): x-sshdeck-scope %q, want %q", rt.Name, rt.Method, path, got, rt.Scope)
		}
	}
	if n == 0 {
		t.Fatal("routes.Tunnel has no route that needs a token")
	}
}
