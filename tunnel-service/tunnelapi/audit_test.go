package tunnelapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// recordOf returns the one audit record of the request r answered.
func (e *apiEnv) recordOf(t *testing.T, r *apiResponse) *sshdeck.AuditRecord {
	t.Helper()
	id := r.header.Get("X-Request-Id")
	all, err := e.store.AuditRecords(context.Background(), sshdeck.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var found []*sshdeck.AuditRecord
	for _, rec := range all {
		if rec.RequestID == id {
			found = append(found, rec)
		}
	}
	if len(found) != 1 {
		t.Fatalf("request %s left %d audit records, want one", id, len(found))
	}
	return found[0]
}

func wantRecord(t *testing.T, r *sshdeck.AuditRecord, actor, action, target string, code sshdeck.Code) {
	t.Helper()
	outcome := sshdeck.AuditSuccess
	if code != "" {
		outcome = sshdeck.AuditFailure
	}
	if r.Actor != actor || r.Action != action || r.Target != target || r.Outcome != outcome || r.Code != code || r.SourceIP != "127.0.0.1" {
		t.Errorf("record %+v, want %s by %s on %q, %s %s, from 127.0.0.1", r, action, actor, target, outcome, code)
	}
}

// TestAPIAudit: every audited route of the tunnel service leaves one
// record per request, its change's or its failure's (the stored
// credentials of the requests are searched for in the store's file by
// checkNoSecrets, the records included). The forward's records are
// TestAPIForwardAudit's.
func TestAPIAudit(t *testing.T) {
	e := newAPIEnv(t, apiSetup{})
	const target = `tunnel "audited"`
	for _, c := range []struct {
		do     func() *apiResponse
		action string
		actor  string
		target string
		code   sshdeck.Code
	}{
		{func() *apiResponse { return e.send("POST", "/ssh/tunnel/connect", e.alice, e.tunnelBody("audited")) }, "tunnel-connect", e.aliceID, target, ""},
		{func() *apiResponse {
			return e.send("POST", "/ssh/tunnel/connect", e.alice, withFields(e.tunnelBody("bad"), "sourcePort", 0))
		}, "tunnel-connect", e.aliceID, `tunnel "bad"`, sshdeck.Invalid},
		{func() *apiResponse {
			return e.send("POST", "/ssh/tunnel/disconnect", e.alice, NameRequest{"audited"})
		}, "tunnel-disconnect", e.aliceID, target, ""},
		{func() *apiResponse { return e.send("POST", "/ssh/tunnel/cancel", e.bob, NameRequest{"audited"}) }, "tunnel-cancel", e.bobID, target, sshdeck.NotFound},
		{func() *apiResponse { return e.do("DELETE", "/ssh/tunnel/audited", e.alice, "", nil) }, "tunnel-delete", e.aliceID, target, ""},
		{func() *apiResponse { return e.do("DELETE", "/ssh/tunnel/audited", e.alice, "", nil) }, "tunnel-delete", e.aliceID, target, sshdeck.NotFound},
		{func() *apiResponse {
			return e.send("POST", "/ssh/tunnel/connect", e.issue("carol", sshdeck.ScopeTunnelsRead), e.tunnelBody("x"))
		}, "tunnel-connect", e.carolID, "/ssh/tunnel/connect", sshdeck.Forbidden},
	} {
		r := c.do()
		wantRecord(t, e.recordOf(t, r), c.actor, c.action, c.target, c.code)
	}
	// The reads leave none.
	r := e.get("/ssh/tunnel/status", e.alice)
	if all, _ := e.store.AuditRecords(context.Background(), sshdeck.AuditQuery{}); len(all) != 7 {
		t.Errorf("%d records after the reads, want the 7 of the writes (%s)", len(all), r.header.Get("X-Request-Id"))
	}
	for _, rt := range routes.Tunnel {
		if rt.Audited() != (rt.Access == routes.Write) {
			t.Errorf("tunnel route %s: audited %t, access %s", rt.Name, rt.Audited(), rt.Access)
		}
	}
}

// TestAPIForwardAudit: a forward is recorded once it is open, not when it
// ends; one refused before the upgrade is a failure.
func TestAPIForwardAudit(t *testing.T) {
	e, w := forwardEnv(t, apiSetup{})
	s, err := e.dialForward(e.alice, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	// The client has its session once the upgrade is answered, a moment
	// before the service writes the record.
	var all []*sshdeck.AuditRecord
	waitUntil(t, "the open forward's record", func() bool {
		all, err = e.store.AuditRecords(context.Background(), sshdeck.AuditQuery{Actor: e.aliceID})
		return err == nil && len(all) > 0
	})
	if len(all) != 1 {
		t.Fatalf("records of the open forward: %v", all)
	}
	wantRecord(t, all[0], e.aliceID, "tunnel-forward", `forward via "web"`, "")
	s.Close()
	r := e.get(e.forwardPath("nope", fmt.Sprintf("127.0.0.1:%d", w.EchoPort)), e.alice)
	if r.status != http.StatusNotFound {
		t.Fatalf("an unknown via host: %d", r.status)
	}
	wantRecord(t, e.recordOf(t, r), e.aliceID, "tunnel-forward", fmt.Sprintf(`forward via "nope" to "127.0.0.1:%d"`, w.EchoPort), sshdeck.NotFound)
}
