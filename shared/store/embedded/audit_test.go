package embedded

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// streamRecord is the i-th record of these tests, kept until expires.
func streamRecord(i int, expires time.Time) *sshdeck.AuditRecord {
	return &sshdeck.AuditRecord{
		ID: fmt.Sprintf("aud_%032d", i), Time: time.Date(2026, 11, 21, 15, 4, i, 0, time.UTC),
		Actor: "usr_alice", Action: "create-host", Target: fmt.Sprintf("host %d", i),
		RequestID: fmt.Sprintf("req-%d", i), SourceIP: "203.0.113.9", Outcome: sshdeck.AuditSuccess,
		ExpiresAt: expires,
	}
}

func streamIDs(t *testing.T, s *Store, after uint64) []string {
	t.Helper()
	entries, err := s.AuditStream(t.Context(), after, 100)
	if err != nil {
		t.Fatalf("AuditStream: %v", err)
	}
	var ids []string
	for _, e := range entries {
		ids = append(ids, fmt.Sprintf("%d:%s", e.Seq, e.Record.ID))
	}
	return ids
}

func wantCursor(t *testing.T, s *Store, seq uint64, ok bool) {
	t.Helper()
	got, gotOK, err := s.AuditCursor(t.Context())
	if err != nil || got != seq || gotOK != ok {
		t.Fatalf("AuditCursor = %d, %v, %v; want %d, %v", got, gotOK, err, seq, ok)
	}
}

func wantEnd(t *testing.T, s *Store, seq uint64) {
	t.Helper()
	if got, err := s.AuditEnd(t.Context()); err != nil || got != seq {
		t.Fatalf("AuditEnd = %d, %v; want %d", got, err, seq)
	}
}

// TestAuditStreamAndCursor: the stream is commit order from a sequence
// on; a store tells a cursor never set from one set to 0; both the cursor
// and the end survive a reopen, and the end counts purged records.
func TestAuditStreamAndCursor(t *testing.T) {
	ctx := t.Context()
	s, path := openTemp(t)
	wantCursor(t, s, 0, false)
	wantEnd(t, s, 0)
	if err := s.SetAuditCursor(ctx, 0); err != nil {
		t.Fatal(err)
	}
	wantCursor(t, s, 0, true)

	keep := time.Date(2027, 12, 1, 0, 0, 0, 0, time.UTC)
	// Written out of time order: the stream is commit order.
	for _, i := range []int{3, 1, 2} {
		if err := s.PutAuditRecord(ctx, streamRecord(i, keep)); err != nil {
			t.Fatal(err)
		}
	}
	wantEnd(t, s, 3)
	if got, want := fmt.Sprint(streamIDs(t, s, 0)), fmt.Sprintf("[1:aud_%032d 2:aud_%032d 3:aud_%032d]", 3, 1, 2); got != want {
		t.Fatalf("stream from the start: %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(streamIDs(t, s, 2)), fmt.Sprintf("[3:aud_%032d]", 2); got != want {
		t.Fatalf("stream after 2: %s, want %s", got, want)
	}
	if got := streamIDs(t, s, 3); len(got) != 0 {
		t.Fatalf("stream after the end: %v", got)
	}
	if err := s.SetAuditCursor(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, path)
	defer s.Close()
	wantCursor(t, s, 2, true)
	wantEnd(t, s, 3)
	// Record 0, the oldest, expires before record 10's time: writing 10
	// purges it, yet the end is 5.
	if err := s.PutAuditRecord(ctx, streamRecord(0, time.Date(2026, 11, 21, 15, 4, 0, 500, time.UTC))); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAuditRecord(ctx, streamRecord(10, keep)); err != nil {
		t.Fatal(err)
	}
	wantEnd(t, s, 5)
	if got, want := fmt.Sprint(streamIDs(t, s, 2)), fmt.Sprintf("[3:aud_%032d 5:aud_%032d]", 2, 10); got != want {
		t.Fatalf("stream after a purge: %s, want %s", got, want)
	}
}

// TestAuditWrittenSignals: a commit that writes a record signals
// AuditWritten, alone or with its change; a write without a record does
// not; signals pending stand for one another.
func TestAuditWrittenSignals(t *testing.T) {
	ctx := t.Context()
	s, _ := openTemp(t)
	defer s.Close()
	signalled := func() bool {
		select {
		case <-s.AuditWritten():
			return true
		default:
			return false
		}
	}
	keep := time.Date(2027, 12, 1, 0, 0, 0, 0, time.UTC)

	if err := s.CreateUser(ctx, &sshdeck.User{ID: "usr_bob", Name: "bob", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if signalled() {
		t.Fatal("a write without a record signalled")
	}
	// The signal is sent before the write returns: no wait is needed.
	if err := s.PutAuditRecord(ctx, streamRecord(1, keep)); err != nil {
		t.Fatal(err)
	}
	if !signalled() {
		t.Fatal("PutAuditRecord did not signal")
	}
	note := &sshdeck.AuditNote{Record: *streamRecord(2, keep)}
	audited := sshdeck.AuditCommit(sshdeck.WithAudit(ctx, note))
	if err := s.CreateUser(audited, &sshdeck.User{ID: "usr_carol", Name: "carol", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if !note.Written() || !signalled() {
		t.Fatalf("an audited write: written %v, and did not signal", note.Written())
	}
	for i := range 3 {
		if err := s.PutAuditRecord(context.Background(), streamRecord(3+i, keep)); err != nil {
			t.Fatal(err)
		}
	}
	if !signalled() || signalled() {
		t.Fatal("three records pending: want one signal standing for them")
	}
}

// TestAuditRetention: a write deletes the records expired by its time,
// oldest first, from the records and both indexes, and keeps the others;
// the first record not expired stops the purge.
func TestAuditRetention(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	day := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	kept := streamRecord(2, day.Add(48*time.Hour))
	for _, r := range []*sshdeck.AuditRecord{
		streamRecord(0, day.Add(time.Hour)), streamRecord(1, day.Add(2*time.Hour)), kept,
		// Expired too, but after one that is not: kept until the purge
		// reaches it.
		streamRecord(3, day.Add(time.Hour)),
	} {
		if err := s.PutAuditRecord(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	later := streamRecord(4, time.Time{})
	later.Time = day.Add(16 * time.Hour)
	if err := s.PutAuditRecord(ctx, later); err != nil {
		t.Fatal(err)
	}
	for _, q := range []sshdeck.AuditQuery{{}, {Actor: "usr_alice"}} {
		got, err := s.AuditRecords(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ID[len(r.ID)-1:])
		}
		if fmt.Sprint(ids) != "[2 3 4]" {
			t.Errorf("records of %+v after the purge: %v, want 2, 3 and 4", q, ids)
		}
	}
	if got := streamIDs(t, s, 0); fmt.Sprint(got) != "[3:"+kept.ID+" 4:"+streamRecord(3, day).ID+" 5:"+later.ID+"]" {
		t.Errorf("the stream after the purge: %v", got)
	}
}
