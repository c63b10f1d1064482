package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// auditCall is one request of an audited route and the record it must
// leave.
type auditCall struct {
	route  string
	do     func() *response
	status int
	// actor is the record's actor ("" for none); target its target.
	actor, target string
	code          sshdeck.Code // a failure's
}

// recordOf returns the one record of the request that resp answered.
func (e *env) recordOf(t *testing.T, resp *response) *sshdeck.AuditRecord {
	t.Helper()
	id := resp.Header.Get("X-Request-Id")
	all, err := e.store.AuditRecords(context.Background(), sshdeck.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var found []*sshdeck.AuditRecord
	for _, r := range all {
		if r.RequestID == id {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("request %s left %d audit records, want one: %+v", id, len(found), found)
	}
	return found[0]
}

// TestEveryWriteRouteIsAudited: each audited route of the table, called
// once to succeed and, for most, once to fail, leaves exactly one record
// of its request: the caller as actor, the route as action, what it acted
// on, the request id, the caller's address, how it ended; and no record
// holds any password, key, passphrase, TOTP secret or token of the test.
func TestEveryWriteRouteIsAudited(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	alice, root := e.userID(e.alice), e.userID(e.root)
	e.setPassword("alice", alicePassword)
	key := newKey(t, "the key's passphrase")
	secrets := []string{alicePassword, "the key's passphrase", keyBody(key), e.alice, e.root, "a host password", "new password 2"}

	host := e.createHost(e.alice, map[string]any{"name": "web", "authType": "password", "password": "a host password"})
	hostPath := fmt.Sprintf("/ssh/db/host/%d", host.ID)
	file := map[string]any{"path": "/etc/nginx/nginx.conf", "hostId": host.ID}
	alert := e.publish("Maintenance", "high", time.Hour)
	var created struct{ ID, Token string }
	var totpSecret string

	calls := []auditCall{
		{route: "create-host", status: http.StatusCreated, actor: alice, target: fmt.Sprintf("host %d", host.ID+1), do: func() *response {
			return e.sendMultipart("POST", e.alice, "/ssh/db/host", `{"name":"db","ip":"10.0.0.6","username":"pg","authType":"key","keyPassword":"the key's passphrase"}`, []byte(key))
		}},
		{route: "create-host", status: http.StatusBadRequest, actor: alice, target: "/ssh/db/host", code: sshdeck.Invalid, do: func() *response {
			return e.sendJSON("POST", e.alice, "/ssh/db/host", map[string]any{"ip": "", "password": "a host password"})
		}},
		{route: "update-host", status: http.StatusOK, actor: alice, target: fmt.Sprintf("host %d", host.ID), do: func() *response {
			return e.sendJSON("PUT", e.alice, hostPath, map[string]any{"ip": "10.0.0.7", "username": "deploy", "authType": "password"})
		}},
		{route: "update-host", status: http.StatusNotFound, actor: root, target: fmt.Sprintf("host %d", host.ID), code: sshdeck.NotFound, do: func() *response {
			return e.sendJSON("PUT", e.root, hostPath, map[string]any{"ip": "10.0.0.7", "username": "deploy"})
		}},
		{route: "import-hosts", status: http.StatusCreated, actor: alice, target: fmt.Sprintf("hosts %d to %d", host.ID+2, host.ID+3), do: func() *response {
			return e.sendJSON("POST", e.alice, "/ssh/db/host/import", []map[string]any{{"ip": "10.0.1.1", "username": "a"}, {"ip": "10.0.1.2", "username": "b"}})
		}},
		{route: "add-recent-file", status: http.StatusOK, actor: alice, target: fmt.Sprintf("host %d recent /etc/nginx/nginx.conf", host.ID), do: func() *response {
			return e.sendJSON("POST", e.alice, "/ssh/file_manager/recent", file)
		}},
		{route: "add-shortcut", status: http.StatusOK, actor: alice, target: fmt.Sprintf("host %d shortcut /etc/nginx/nginx.conf", host.ID), do: func() *response {
			return e.sendJSON("POST", e.alice, "/ssh/file_manager/shortcuts", file)
		}},
		{route: "add-shortcut", status: http.StatusBadRequest, actor: root, target: fmt.Sprintf("host %d shortcut /etc/nginx/nginx.conf", host.ID), code: sshdeck.Invalid, do: func() *response {
			return e.sendJSON("POST", e.root, "/ssh/file_manager/shortcuts", file) // not root's host
		}},
		{route: "delete-recent-file", status: http.StatusOK, actor: alice, target: fmt.Sprintf("host %d recent /etc/nginx/nginx.conf", host.ID), do: func() *response {
			return e.sendJSON("DELETE", e.alice, "/ssh/file_manager/recent", file)
		}},
		{route: "delete-shortcut", status: http.StatusOK, actor: alice, target: fmt.Sprintf("host %d shortcut /etc/nginx/nginx.conf", host.ID), do: func() *response {
			return e.sendJSON("DELETE", e.alice, "/ssh/file_manager/shortcuts", file)
		}},
		{route: "delete-host", status: http.StatusOK, actor: alice, target: fmt.Sprintf("host %d", host.ID), do: func() *response {
			return e.do(request{method: "DELETE", path: hostPath, token: e.alice})
		}},
		{route: "delete-host", status: http.StatusNotFound, actor: alice, target: fmt.Sprintf("host %d", host.ID), code: sshdeck.NotFound, do: func() *response {
			return e.do(request{method: "DELETE", path: hostPath, token: e.alice})
		}},
		{route: "dismiss-alert", status: http.StatusOK, actor: alice, target: "alert " + alert.ID, do: func() *response {
			return e.sendJSON("POST", e.alice, "/alerts/dismiss", map[string]any{"alertId": alert.ID})
		}},
		{route: "publish-alert", status: http.StatusCreated, actor: root, do: func() *response {
			return e.sendJSON("POST", e.root, "/alerts", map[string]any{"title": "Upgrade", "expiresAt": e.clock().Add(time.Hour).UTC().Format(time.RFC3339)})
		}},
		{route: "publish-alert", status: http.StatusForbidden, actor: alice, target: "/alerts", code: sshdeck.Forbidden, do: func() *response {
			return e.sendJSON("POST", e.alice, "/alerts", map[string]any{"title": "Mine"})
		}},
		{route: "delete-alert", status: http.StatusOK, actor: root, target: "alert " + alert.ID, do: func() *response {
			return e.do(request{method: "DELETE", path: "/alerts/" + alert.ID, token: e.root})
		}},
		{route: "login", status: http.StatusOK, actor: alice, target: fmt.Sprintf("user %s (alice)", alice), do: func() *response {
			return e.login("alice", alicePassword, "")
		}},
		{route: "login", status: http.StatusUnauthorized, actor: alice, target: fmt.Sprintf("user %s (alice)", alice), code: sshdeck.Unauthorized, do: func() *response {
			return e.login("alice", "not her password", "")
		}},
		{route: "login", status: http.StatusUnauthorized, target: `user named "mallory"`, code: sshdeck.Unauthorized, do: func() *response {
			return e.login("mallory", alicePassword, "")
		}},
		{route: "change-password", status: http.StatusOK, actor: alice, target: fmt.Sprintf("user %s (alice)", alice), do: func() *response {
			return e.sendJSON("POST", e.alice, "/users/me/password", map[string]any{"current": alicePassword, "new": "new password 2"})
		}},
		{route: "create-totp", status: http.StatusOK, actor: alice, target: fmt.Sprintf("user %s (alice)", alice), do: func() *response {
			resp := e.do(request{method: "POST", path: "/users/me/totp", token: e.alice})
			var s struct{ Secret string }
			resp.json(t, &s)
			totpSecret, secrets = s.Secret, append(secrets, s.Secret)
			return resp
		}},
		{route: "enable-totp", status: http.StatusForbidden, actor: alice, target: fmt.Sprintf("user %s (alice)", alice), code: sshdeck.Forbidden, do: func() *response {
			return e.sendJSON("POST", e.alice, "/users/me/totp/enable", map[string]any{"code": otherCode(totpCode(t, totpSecret, e.clock()))})
		}},
		{route: "enable-totp", status: http.StatusOK, actor: alice, target: fmt.Sprintf("user %s (alice)", alice), do: func() *response {
			return e.sendJSON("POST", e.alice, "/users/me/totp/enable", map[string]any{"code": totpCode(t, totpSecret, e.clock())})
		}},
		{route: "disable-totp", status: http.StatusOK, actor: alice, target: fmt.Sprintf("user %s (alice)", alice), do: func() *response {
			e.advance(30 * time.Second)
			return e.sendJSON("DELETE", e.alice, "/users/me/totp", map[string]any{"code": totpCode(t, totpSecret, e.clock())})
		}},
		{route: "create-user", status: http.StatusCreated, actor: root, do: func() *response {
			return e.sendJSON("POST", e.root, "/users", map[string]any{"username": "carol", "password": "carol's long password"})
		}},
		{route: "update-user", status: http.StatusOK, actor: root, target: fmt.Sprintf("user %s (alice)", alice), do: func() *response {
			return e.sendJSON("PATCH", e.root, "/users/"+alice, map[string]any{"admin": true})
		}},
		{route: "create-token", status: http.StatusCreated, actor: alice, do: func() *response {
			resp := e.sendJSON("POST", e.alice, "/tokens", map[string]any{"name": "ci", "scopes": []string{"hosts:read"}})
			resp.json(t, &created)
			secrets = append(secrets, created.Token)
			return resp
		}},
		{route: "delete-token", status: http.StatusOK, actor: alice, do: func() *response {
			return e.do(request{method: "DELETE", path: "/tokens/" + created.ID, token: e.alice})
		}},
		{route: "delete-token", status: http.StatusNotFound, actor: root, code: sshdeck.NotFound, do: func() *response {
			return e.do(request{method: "DELETE", path: "/tokens/tok_nosuch", token: e.root})
		}},
	}
	covered := map[string]bool{}
	for i, c := range calls {
		resp := c.do()
		if resp.Status != c.status {
			t.Fatalf("call %d (%s): status %d, want %d: %s", i, c.route, resp.Status, c.status, resp.Body)
		}
		r := e.recordOf(t, resp)
		outcome := sshdeck.AuditSuccess
		if c.code != "" {
			outcome = sshdeck.AuditFailure
		}
		target := c.target
		switch c.route {
		case "publish-alert", "create-user", "create-token":
			// A new record's id, which the answer holds.
			if c.code == "" {
				var made struct{ ID string }
				resp.json(t, &made)
				target = map[string]string{
					"publish-alert": "alert " + made.ID,
					"create-user":   "user " + made.ID + " (carol)",
					"create-token":  "token " + made.ID + " of user " + alice + " (alice)",
				}[c.route]
			}
		case "login":
			// A login's record names the token it issued.
			if c.code == "" {
				var res struct{ ID string }
				resp.json(t, &res)
				target = fmt.Sprintf("token %s of user %s (alice)", res.ID, alice)
			}
		case "delete-token":
			target = "token " + created.ID
			if c.code != "" {
				target = "token tok_nosuch"
			}
		}
		if r.Actor != c.actor || r.Action != c.route || r.Target != target || r.SourceIP != "192.0.2.1" ||
			r.Outcome != outcome || r.Code != c.code || !strings.HasPrefix(r.ID, "aud_") || !r.Time.Equal(e.clock()) {
			t.Errorf("call %d (%s): record %+v, want actor %q target %q outcome %s code %q from 192.0.2.1 at %v", i, c.route, r, c.actor, target, outcome, c.code, e.clock())
		}
		covered[c.route] = true
	}
	for _, r := range routes.All {
		if r.Audited() && !covered[r.Name] {
			t.Errorf("route %s is audited, and no call here checks its record", r.Name)
		}
		if !r.Audited() && covered[r.Name] {
			t.Errorf("route %s is not audited, yet it is in the table", r.Name)
		}
	}

	all, err := e.store.AuditRecords(ctx, sshdeck.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(all)
	for _, s := range secrets {
		for _, part := range strings.Split(s, "\n") {
			if len(part) >= 8 && strings.Contains(string(raw), part) {
				t.Errorf("an audit record holds a secret of the test: %q", part)
			}
		}
	}
}

// TestAuditReads: GET /audit answers the caller's own records a page at a
// time, an admin everyone's or one actor's; another user's actor filter
// is 403; the export is every record as NDJSON, the same ones.
func TestAuditReads(t *testing.T) {
	e := newEnv(t)
	alice, bob := e.userID(e.alice), e.userID(e.bob)
	for range 3 {
		e.createHost(e.alice, nil)
		e.createHost(e.bob, nil)
	}
	list := func(token, query string) ([]audit.Record, *response) {
		t.Helper()
		resp := e.get(token, "/audit"+query)
		if resp.Status != http.StatusOK {
			t.Fatalf("GET /audit%s: %d %s", query, resp.Status, resp.Body)
		}
		var out []audit.Record
		resp.json(t, &out)
		return out, resp
	}
	mine, _ := list(e.alice, "")
	if len(mine) != 3 || slices.ContainsFunc(mine, func(r audit.Record) bool { return r.Actor != alice || r.Action != "create-host" }) {
		t.Errorf("alice's records: %+v", mine)
	}
	everyone, _ := list(e.root, "")
	if len(everyone) != 6 {
		t.Errorf("the admin reads %d records, want 6", len(everyone))
	}
	bobs, _ := list(e.root, "?actor="+bob)
	if len(bobs) != 3 || bobs[0].Actor != bob {
		t.Errorf("bob's, read by the admin: %+v", bobs)
	}
	wantError(t, e.get(e.alice, "/audit?actor="+bob), http.StatusForbidden, sshdeck.Forbidden, "only an admin")
	wantError(t, e.get(e.issue("alice", sshdeck.ScopeHostsRead), "/audit"), http.StatusForbidden, sshdeck.Forbidden)
	wantError(t, e.get(e.alice, "/audit?since=yesterday"), http.StatusBadRequest, sshdeck.Invalid, "since")
	wantError(t, e.get(e.alice, "/audit?cursor=nope"), http.StatusBadRequest, sshdeck.Invalid, "cursor")

	// Pages of two, by Link, are the same records in the same order.
	var paged []audit.Record
	query := "?limit=2"
	for query != "" {
		page, resp := list(e.root, query)
		paged = append(paged, page...)
		query = ""
		if link := resp.Header.Get("Link"); link != "" {
			query = link[1:strings.Index(link, ">")]
		}
	}
	if !slices.Equal(ids(paged), ids(everyone)) {
		t.Errorf("paged %v, whole %v", ids(paged), ids(everyone))
	}
	// Nothing in the last day before now's: since the future is empty.
	if future, _ := list(e.root, "?since="+e.clock().Add(time.Hour).UTC().Format(time.RFC3339)); len(future) != 0 {
		t.Errorf("records since an hour from now: %+v", future)
	}

	resp := e.get(e.root, "/audit/export")
	if resp.Status != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export: %d %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	var exported []audit.Record
	for line := range strings.Lines(string(resp.Body)) {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		exported = append(exported, r)
	}
	// The export reads every record kept: the six, and the fixture's
	// users' tokens made by the admin commands are no records (made
	// through the store by the test).
	if !slices.Equal(ids(exported), ids(everyone)) {
		t.Errorf("exported %v, want %v", ids(exported), ids(everyone))
	}
}

func ids(rs []audit.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}
