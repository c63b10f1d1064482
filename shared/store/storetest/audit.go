package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func auditRecord(i int, actor string) *sshdeck.AuditRecord {
	at := base.Add(time.Duration(i) * time.Second)
	return &sshdeck.AuditRecord{
		ID: fmt.Sprintf("aud_%032d", i), Time: at, Actor: actor, Action: "create-host",
		Target: fmt.Sprintf("host %d", i), RequestID: fmt.Sprintf("req-%d", i), SourceIP: "203.0.113.9",
		Outcome: sshdeck.AuditSuccess, ExpiresAt: at.Add(400 * 24 * time.Hour),
	}
}

func sameAudit(t *testing.T, got, want []*sshdeck.AuditRecord, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range want {
		same(t, got[i], want[i], func(r *sshdeck.AuditRecord) {
			r.Time, r.ExpiresAt = ms(r.Time), r.ExpiresAt.Truncate(time.Second).UTC()
		}, fmt.Sprintf("%s: record %d", what, i))
	}
}

func auditRecords(t *testing.T, s sshdeck.Store, q sshdeck.AuditQuery) []*sshdeck.AuditRecord {
	t.Helper()
	rs, err := s.AuditRecords(t.Context(), q)
	must(t, err, "AuditRecords")
	return rs
}

// testAuditQuery: records come back whole, in time order, of everyone or
// of one actor, from a time on, a page at a time after a record.
func testAuditQuery(t *testing.T, s sshdeck.Store) {
	var all, alice []*sshdeck.AuditRecord
	// Written out of time order: the order is the records' times.
	for _, i := range []int{3, 0, 4, 1, 5, 2} {
		actor := "usr_alice"
		if i%2 == 1 {
			actor = "usr_bob"
		}
		r := auditRecord(i, actor)
		if i == 4 {
			r.Outcome, r.Code, r.Action, r.Actor = sshdeck.AuditFailure, sshdeck.Unauthorized, "login", ""
		}
		must(t, s.PutAuditRecord(t.Context(), r), "PutAuditRecord")
	}
	for i := range 6 {
		r := auditRecord(i, "usr_alice")
		switch {
		case i == 4:
			r.Outcome, r.Code, r.Action, r.Actor = sshdeck.AuditFailure, sshdeck.Unauthorized, "login", ""
		case i%2 == 1:
			r.Actor = "usr_bob"
		}
		all = append(all, r)
		if r.Actor == "usr_alice" {
			alice = append(alice, r)
		}
	}
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{}), all, "every record")
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{Actor: "usr_alice"}), alice, "alice's")
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{Actor: "usr_carol"}), nil, "nobody's")
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{Since: all[2].Time}), all[2:], "since the third")
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{Since: all[2].Time.Add(time.Millisecond)}), all[3:], "since just after the third")
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{Limit: 2}), all[:2], "a page of two")
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{Limit: 2, After: all[1]}), all[2:4], "the next page")
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{Limit: 2, After: all[5]}), nil, "past the last")
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{Actor: "usr_alice", Limit: 1, After: alice[0]}), alice[1:2], "alice's next page")

	// Records of one instant are in id order, whatever the order of their
	// writes, and a page after one of them goes on with the next.
	late := all[5].Time.Add(time.Hour)
	var same []*sshdeck.AuditRecord
	for _, id := range []string{"aud_c", "aud_a", "aud_b"} {
		r := auditRecord(9, "usr_alice")
		r.ID, r.Time = id, late
		must(t, s.PutAuditRecord(t.Context(), r), "PutAuditRecord")
		same = append(same, r)
	}
	same[0], same[1], same[2] = same[1], same[2], same[0]
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{Since: late}), same, "one instant's, in id order")
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{Since: late, After: same[0], Limit: 1}), same[1:2], "after the first of one instant")
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{Actor: "usr_alice", After: same[1]}), same[2:], "alice's after the second of one instant")
}

// audited returns a context whose store write is an audited request's
// change, and its note.
func audited(ctx context.Context, i int) (context.Context, *sshdeck.AuditNote) {
	n := &sshdeck.AuditNote{Record: *auditRecord(i, "usr_alice")}
	return sshdeck.AuditCommit(sshdeck.WithAudit(ctx, n)), n
}

// testAuditWithTheChange: a write whose context is an audited request's
// commit point writes the request's record with the change, whatever kind
// of write it is; one that fails writes neither, with the error it had
// without a record; a write that is not the commit point writes none.
func testAuditWithTheChange(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	owner := "usr_alice"
	must(t, s.CreateUser(ctx, newUser(owner, "alice", false)), "CreateUser")
	h := createHost(t, s, owner, 1)
	tok := newToken("tok-1", owner, base)
	tun := fullTunnel(owner, "web", 1)
	writes := []struct {
		name string
		fn   func(ctx context.Context) error
		fail sshdeck.Code // what a second, failing, call gives ("": none)
	}{
		{"CreateAlert", func(ctx context.Context) error { return s.CreateAlert(ctx, fullAlert("alt-1", 1)) }, sshdeck.Conflict},
		{"DismissAlert", func(ctx context.Context) error {
			return s.DismissAlert(ctx, &sshdeck.Dismissal{UserID: owner, AlertID: "alt-1", At: base, Until: base.Add(time.Hour)})
		}, ""},
		{"DeleteAlert", func(ctx context.Context) error { return s.DeleteAlert(ctx, "alt-1") }, sshdeck.NotFound},
		{"CreateUser", func(ctx context.Context) error { return s.CreateUser(ctx, newUser("usr_bob", "bob", false)) }, sshdeck.Conflict},
		{"UpdateUser", func(ctx context.Context) error {
			disabled := true
			_, err := s.UpdateUser(ctx, "usr_bob", sshdeck.UserChange{Disabled: &disabled})
			return err
		}, ""},
		{"CreateTokenWithin", func(ctx context.Context) error { return s.CreateTokenWithin(ctx, tok, 10) }, sshdeck.Conflict},
		{"RevokeToken", func(ctx context.Context) error { _, err := s.RevokeToken(ctx, tok.ID, base.Add(time.Hour)); return err }, ""},
		{"PutLoginSecrets", func(ctx context.Context) error {
			return s.PutLoginSecrets(ctx, &sshdeck.LoginSecrets{UserID: owner, PasswordHash: "$argon2id$x", Version: 1})
		}, ""},
		{"CreateHost", func(ctx context.Context) error {
			return s.CreateHost(ctx, fullHost(owner, nextID(t, s, owner), 2), 100)
		}, ""},
		{"UpdateHost", func(ctx context.Context) error {
			cur := getHost(t, s, owner, h.ID)
			return s.UpdateHost(ctx, edited(cur))
		}, ""},
		{"PutRecentFile", func(ctx context.Context) error {
			return s.PutRecentFile(ctx, entry(owner, h.ID, sshdeck.RecentFile, "/etc/hosts", 1), 100)
		}, ""},
		{"AddShortcut", func(ctx context.Context) error {
			_, err := s.AddShortcut(ctx, entry(owner, h.ID, sshdeck.Shortcut, "/var/log", 1), 100)
			return err
		}, ""},
		{"DeleteFile", func(ctx context.Context) error {
			return s.DeleteFile(ctx, owner, h.ID, sshdeck.Shortcut, "/var/log")
		}, sshdeck.NotFound},
		{"CreateTunnel", func(ctx context.Context) error { return s.CreateTunnel(ctx, tun, 10) }, ""},
		{"PutTunnel", func(ctx context.Context) error {
			next := *tun
			next.Generation = 2
			return s.PutTunnel(ctx, &next)
		}, sshdeck.Conflict},
		{"DeleteTunnel", func(ctx context.Context) error { return s.DeleteTunnel(ctx, owner, "web", 2) }, sshdeck.NotFound},
		{"DeleteHost", func(ctx context.Context) error {
			return s.DeleteHost(ctx, owner, h.ID, getHost(t, s, owner, h.ID).Version)
		}, ""},
	}
	var want []*sshdeck.AuditRecord
	for i, w := range writes {
		actx, note := audited(ctx, i)
		must(t, w.fn(actx), w.name)
		if !note.Written() {
			t.Fatalf("%s: the record is not marked written", w.name)
		}
		want = append(want, &note.Record)
		sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{}), want, w.name+": the records")
		if w.fail == "" {
			continue
		}
		actx, note = audited(ctx, 100+i)
		wantCode(t, w.fn(actx), w.fail, w.name+" again")
		if note.Written() {
			t.Fatalf("%s failed but its record is marked written", w.name)
		}
		sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{}), want, w.name+" failed: the records")
	}

	// Not the commit point: the request's note stays unwritten.
	n := &sshdeck.AuditNote{Record: *auditRecord(200, owner)}
	must(t, s.CreateAlert(sshdeck.WithAudit(ctx, n), fullAlert("alt-2", 2)), "CreateAlert, not the commit point")
	if n.Written() {
		t.Error("a write that is not the commit point wrote the record")
	}
	// A note is written once, by the first commit point.
	actx, note := audited(ctx, 201)
	must(t, s.CreateAlert(actx, fullAlert("alt-3", 3)), "CreateAlert")
	must(t, s.DeleteAlert(actx, "alt-3"), "DeleteAlert with the same note")
	want = append(want, &note.Record)
	sameAudit(t, auditRecords(t, s, sshdeck.AuditQuery{}), want, "a note of two writes")
}
