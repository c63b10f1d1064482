package auditroute_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/audit/auditroute"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// TestRun: which requests leave a record, and how each ends, over the
// embedded store: a refused scope is the caller's recorded failure and
// never reaches the handler; a read, and a public route's malformed
// request, leave none; a nil Recorder only runs the handler.
func TestRun(t *testing.T) {
	store, err := embedded.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rec := &audit.Recorder{Store: store}
	route := func(name string) routes.Route {
		r, ok := routes.ByName(name)
		if !ok {
			t.Fatalf("no route %q", name)
		}
		return r
	}
	writer := sshdeck.Principal{UserID: "usr_w", Scopes: []sshdeck.Scope{sshdeck.ScopeHostsWrite, sshdeck.ScopeHostsRead}}
	reader := sshdeck.Principal{UserID: "usr_r", Scopes: []sshdeck.Scope{sshdeck.ScopeHostsRead}}
	malformed := sshdeck.Errorf(sshdeck.Invalid, "body: not JSON")

	for _, c := range []struct {
		name    string
		rec     *audit.Recorder
		route   string
		caller  sshdeck.Principal
		err     error // the handler's
		handled bool
		want    sshdeck.Code // the record's code; "" for none, "-" for a success
	}{
		{"a write", rec, "create-host", writer, nil, true, "-"},
		{"a write that fails", rec, "create-host", writer, malformed, true, sshdeck.Invalid},
		{"a missing scope", rec, "create-host", reader, nil, false, sshdeck.Forbidden},
		{"a read", rec, "list-hosts", reader, nil, true, ""},
		{"a malformed login", rec, "login", sshdeck.Principal{}, malformed, true, ""},
		{"a refused login", rec, "login", sshdeck.Principal{}, sshdeck.Errorf(sshdeck.Unauthorized, "no"), true, sshdeck.Unauthorized},
		{"no recorder", nil, "create-host", reader, nil, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, r := range records(t, store) {
				seen[r.ID] = true
			}
			handled := false
			r := httptest.NewRequest("POST", "/x", nil)
			err := auditroute.Run(c.rec, r, route(c.route), c.caller, "192.0.2.1", func(r *http.Request) error {
				handled = true
				if sshdeck.AuditOf(r.Context()) == nil && c.rec != nil && route(c.route).Audited() {
					t.Error("the handler's context carries no note")
				}
				return c.err
			})
			if handled != c.handled {
				t.Errorf("handled %v, want %v", handled, c.handled)
			}
			if c.handled && !errors.Is(err, c.err) {
				t.Errorf("error %v, want the handler's %v", err, c.err)
			}
			var written []*sshdeck.AuditRecord
			for _, r := range records(t, store) {
				if !seen[r.ID] {
					written = append(written, r)
				}
			}
			switch {
			case c.want == "":
				if len(written) != 0 {
					t.Errorf("%d records written, want none", len(written))
				}
			case len(written) != 1:
				t.Errorf("%d records written, want one", len(written))
			case c.want == "-":
				if r := written[0]; r.Outcome != sshdeck.AuditSuccess || r.Actor != c.caller.UserID || r.SourceIP != "192.0.2.1" {
					t.Errorf("record %+v, want %s's success from 192.0.2.1", r, c.caller.UserID)
				}
			default:
				if r := written[0]; r.Outcome != sshdeck.AuditFailure || r.Code != c.want {
					t.Errorf("record %+v, want a failure %s", r, c.want)
				}
			}
		})
	}
}

func records(t *testing.T, store sshdeck.AuditStore) []*sshdeck.AuditRecord {
	t.Helper()
	rs, err := store.AuditRecords(context.Background(), sshdeck.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}
