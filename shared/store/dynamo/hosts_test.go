package dynamo_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

func nextID(t *testing.T, s *dynamo.Store, owner string) int64 {
	t.Helper()
	id, err := s.NextHostID(t.Context(), owner)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestCreateHostPastCounter stores ids that NextHostID did not hand out: the
// counter moves past the highest, never back.
func TestCreateHostPastCounter(t *testing.T) {
	ctx := t.Context()
	s, _ := start(t)
	if err := s.CreateHost(ctx, newHost("alice", 10, 1), 1000); err != nil {
		t.Fatal(err)
	}
	if id := nextID(t, s, "alice"); id != 11 {
		t.Fatalf("NextHostID after creating host 10 of a new owner: got %d, want 11", id)
	}
	if err := s.CreateHost(ctx, newHost("alice", 5, 1), 1000); err != nil {
		t.Fatal(err)
	}
	if id := nextID(t, s, "alice"); id != 12 {
		t.Fatalf("NextHostID after creating host 5 below the counter: got %d, want 12", id)
	}
	if err := s.DeleteHost(ctx, "alice", 10, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateHost(ctx, newHost("alice", 20, 1), 1000); err != nil {
		t.Fatal(err)
	}
	if id := nextID(t, s, "alice"); id != 21 {
		t.Fatalf("NextHostID after creating host 20: got %d, want 21", id)
	}
}

// racing is an API on which another request gets in just before the next
// TransactWriteItems.
type racing struct {
	dynamo.API
	before func()
}

func (r *racing) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if before := r.before; before != nil {
		r.before = nil
		before()
	}
	return r.API.TransactWriteItems(ctx, in, optFns...)
}

// TestCreateHostPastCounterRaces covers what may happen between CreateHost's
// read of the counter and its transaction.
func TestCreateHostPastCounterRaces(t *testing.T) {
	t.Run("the counter passes the id", func(t *testing.T) {
		ctx := t.Context()
		other, srv := start(t)
		api := &racing{API: srv.Client, before: func() {
			for range 3 {
				nextID(t, other, "alice")
			}
		}}
		s := dynamo.New(api, srv.Table)
		srv.ResetCalls()
		if err := s.CreateHost(ctx, newHost("alice", 2, 1), 1000); err != nil {
			t.Fatal(err)
		}
		// The first transaction is refused (the counter has no count), the
		// read of the counter finds it past the id, a Query counts the
		// hosts, and the second transaction sets the count.
		want := map[string]int{"GetItem": 1, "UpdateItem": 3, "TransactWriteItems": 2, "Query": 1}
		if got := srv.Calls(); !maps.Equal(got, want) {
			t.Errorf("calls: got %v, want %v", got, want)
		}
		if _, err := s.Host(ctx, "alice", 2); err != nil {
			t.Fatalf("Host 2: %v", err)
		}
		if id := nextID(t, s, "alice"); id != 4 {
			t.Fatalf("NextHostID: got %d, want 4", id)
		}
	})
	t.Run("the id is taken", func(t *testing.T) {
		ctx := t.Context()
		other, srv := start(t)
		theirs := newHost("alice", 7, 1)
		theirs.Name = "theirs"
		api := &racing{API: srv.Client, before: func() {
			if err := other.CreateHost(ctx, theirs, 1000); err != nil {
				t.Error(err)
			}
		}}
		s := dynamo.New(api, srv.Table)
		if code := sshdeck.ErrorCode(s.CreateHost(ctx, newHost("alice", 7, 1), 1000)); code != sshdeck.Conflict {
			t.Fatalf("CreateHost of an id created meanwhile: got code %q, want conflict", code)
		}
		h, err := s.Host(ctx, "alice", 7)
		if err != nil || h.Name != "theirs" {
			t.Fatalf("Host 7: got %+v, %v; want theirs", h, err)
		}
	})
}

// TestCancelledContext checks that a cancelled request reaches no table.
func TestCancelledContext(t *testing.T) {
	s, srv := start(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, call := range map[string]func() error{
		"Ping":        func() error { return s.Ping(ctx) },
		"Hosts":       func() error { _, err := s.Hosts(ctx, "alice", 0, 0); return err },
		"NextHostID":  func() error { _, err := s.NextHostID(ctx, "alice"); return err },
		"CreateHost":  func() error { return s.CreateHost(ctx, newHost("alice", 1, 1), 1000) },
		"TokenByHash": func() error { _, err := s.TokenByHash(ctx, "h"); return err },
		"PutRecentFile": func() error {
			return s.PutRecentFile(ctx, newEntry("alice", 1, sshdeck.RecentFile, "/a"), 1)
		},
		"AddShortcut": func() error {
			_, err := s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, "/a"), 1)
			return err
		},
		"Files":      func() error { _, err := s.Files(ctx, "alice", 1, sshdeck.RecentFile); return err },
		"Alerts":     func() error { _, err := s.Alerts(ctx, time.Now()); return err },
		"CacheEntry": func() error { _, err := s.CacheEntry(ctx, "k", time.Now()); return err },
	} {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: got %v, want context.Canceled", name, err)
		}
	}
	if calls := srv.Calls(); len(calls) != 0 {
		t.Errorf("calls with a cancelled context: %v", calls)
	}
}
