package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

// unprocessing is an API whose BatchWriteItem hands back the first hold
// requests it is sent as UnprocessedItems, unwritten, as DynamoDB does when
// a partition is throttled; hold < 0 hands back every request, every time.
type unprocessing struct {
	dynamo.API
	hold  int
	calls int
	after func() // run after each BatchWriteItem, if set
}

func (u *unprocessing) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	u.calls++
	if u.after != nil {
		defer u.after()
	}
	out := &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{}}
	rest := map[string][]types.WriteRequest{}
	for table, reqs := range in.RequestItems {
		n := len(reqs)
		if u.hold >= 0 {
			n = min(u.hold, len(reqs))
			u.hold -= n
		}
		if n > 0 {
			out.UnprocessedItems[table] = reqs[:n]
		}
		if n < len(reqs) {
			rest[table] = reqs[n:]
		}
	}
	if len(rest) > 0 {
		if _, err := u.API.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: rest}, optFns...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// withEntries returns a server whose alice has host 1 with n recent entries
// and n shortcuts.
func withEntries(t *testing.T, n int) *dynamotest.Server {
	t.Helper()
	s, srv := start(t)
	mustCreateHosts(t, s, "alice", 1)
	for i := range n {
		if err := s.PutRecentFile(t.Context(), newEntry("alice", 1, sshdeck.RecentFile, fmt.Sprintf("/r%d", i)), 100); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddShortcut(t.Context(), newEntry("alice", 1, sshdeck.Shortcut, fmt.Sprintf("/s%d", i)), 100); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

// TestUnprocessedResent: the writes DynamoDB leaves unprocessed are sent
// again, by the cascade of DeleteHost and by the trim of recent entries.
func TestUnprocessedResent(t *testing.T) {
	t.Run("DeleteHost", func(t *testing.T) {
		srv := withEntries(t, 15)
		api := &unprocessing{API: srv.Client, hold: 10}
		s := dynamo.New(api, srv.Table)
		if err := s.DeleteHost(t.Context(), "alice", 1, 0); err != nil {
			t.Fatal(err)
		}
		// 30 entries: a batch of 25 (10 handed back and resent), one of 5.
		if api.calls != 3 {
			t.Errorf("BatchWriteItem calls: got %d, want 3", api.calls)
		}
		if n := countItems(t, srv, "OWNER#alice", "FILE#"); n != 0 {
			t.Errorf("DeleteHost left %d of 30 entries", n)
		}
	})
	t.Run("PutRecentFile", func(t *testing.T) {
		srv := withEntries(t, 5)
		api := &unprocessing{API: srv.Client, hold: 2}
		s := dynamo.New(api, srv.Table)
		if err := s.PutRecentFile(t.Context(), newEntry("alice", 1, sshdeck.RecentFile, "/new"), 2); err != nil {
			t.Fatal(err)
		}
		if api.calls != 2 {
			t.Errorf("BatchWriteItem calls: got %d, want 2", api.calls)
		}
		es, err := s.Files(t.Context(), "alice", 1, sshdeck.RecentFile)
		if err != nil || len(es) != 2 {
			t.Fatalf("recent entries after trimming to 2: got %v, %v", filePaths(es), err)
		}
	})
}

// TestUnprocessedGivesUp: writes that stay unprocessed end in an error
// after a bounded number of attempts, or when the context ends.
func TestUnprocessedGivesUp(t *testing.T) {
	t.Run("attempts", func(t *testing.T) {
		srv := withEntries(t, 1)
		api := &unprocessing{API: srv.Client, hold: -1}
		s := dynamo.New(api, srv.Table)
		dynamo.SetBackoff(s, time.Millisecond)
		err := within(t, time.Minute, func() error { return s.DeleteHost(t.Context(), "alice", 1, 0) })
		if code := sshdeck.ErrorCode(err); code != sshdeck.Internal {
			t.Fatalf("DeleteHost with writes never processed: got %v, want an internal error", err)
		}
		if api.calls != 8 {
			t.Errorf("BatchWriteItem calls: got %d, want 8", api.calls)
		}
	})
	t.Run("context", func(t *testing.T) {
		srv := withEntries(t, 1)
		ctx, cancel := context.WithCancel(t.Context())
		api := &unprocessing{API: srv.Client, hold: -1, after: cancel}
		s := dynamo.New(api, srv.Table)
		dynamo.SetBackoff(s, time.Hour)
		err := within(t, time.Minute, func() error { return s.DeleteHost(ctx, "alice", 1, 0) })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("DeleteHost cancelled while waiting to resend: got %v, want context.Canceled", err)
		}
		if api.calls != 1 {
			t.Errorf("BatchWriteItem calls: got %d, want 1", api.calls)
		}
	})
}

// within runs call and returns its error, failing the test if it takes
// longer than d (it is left running). The calls are in process and end at
// once; d is a minute so that only a call that never ends fails, however
// busy the machine (the backoff it must not wait out is an hour).
func within(t *testing.T, d time.Duration, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("no answer after %v", d)
		return nil
	}
}

// transactions records the TransactWriteItems it is sent.
type transactions struct {
	dynamo.API
	sent []*dynamodb.TransactWriteItemsInput
}

func (r *transactions) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	r.sent = append(r.sent, in)
	return r.API.TransactWriteItems(ctx, in, optFns...)
}

// TestPutRecentFileReplaces re-puts an entry: every attribute is the new
// entry's but createdAt, which stays the first.
func TestPutRecentFileReplaces(t *testing.T) {
	ctx := t.Context()
	_, srv := start(t)
	api := &transactions{API: srv.Client}
	s := dynamo.New(api, srv.Table)
	mustCreateHosts(t, s, "alice", 1)
	first := newEntry("alice", 1, sshdeck.RecentFile, "/a")
	first.IsSSH, first.SSHSessionID = true, "sess-1"
	if err := s.PutRecentFile(ctx, first, 100); err != nil {
		t.Fatal(err)
	}
	again := newEntry("alice", 1, sshdeck.RecentFile, "/a")
	again.Name, again.CreatedAt = "renamed", first.CreatedAt.Add(time.Hour)
	again.LastOpened = again.CreatedAt
	if err := s.PutRecentFile(ctx, again, 100); err != nil {
		t.Fatal(err)
	}
	es, err := s.Files(ctx, "alice", 1, sshdeck.RecentFile)
	if err != nil || len(es) != 1 {
		t.Fatalf("Files: got %d entries, %v; want 1", len(es), err)
	}
	want := *again
	want.CreatedAt = first.CreatedAt
	if got := *es[0]; !got.CreatedAt.Equal(want.CreatedAt) || !got.LastOpened.Equal(want.LastOpened) ||
		fmt.Sprint(got.Name, got.IsSSH, got.SSHSessionID) != fmt.Sprint(want.Name, want.IsSSH, want.SSHSessionID) {
		t.Errorf("re-put entry: got %+v, want %+v", got, want)
	}

	// A zero LastOpened removes the stored one, as a put would. minidyn
	// ignores REMOVE, so the request is what is checked.
	api.sent = nil
	again.LastOpened = time.Time{}
	if err := s.PutRecentFile(ctx, again, 100); err != nil {
		t.Fatal(err)
	}
	if len(api.sent) != 1 || len(api.sent[0].TransactItems) != 2 || api.sent[0].TransactItems[1].Update == nil {
		t.Fatalf("PutRecentFile sent %v, want one transaction of a check and an update", api.sent)
	}
	u := api.sent[0].TransactItems[1].Update
	if expr := *u.UpdateExpression; !strings.HasSuffix(expr, " REMOVE #lastOpened") || u.ExpressionAttributeNames["#lastOpened"] != "lastOpened" {
		t.Errorf("update of an entry without lastOpened: %s, %v; want it to REMOVE lastOpened", expr, u.ExpressionAttributeNames)
	}
}

// TestEntryWriteRacesHostDelete deletes the host just before an entry's
// transaction: the write is refused (NotFound) and leaves no entry, which
// DeleteHost's query, already made, could not have deleted.
func TestEntryWriteRacesHostDelete(t *testing.T) {
	for name, write := range map[string]func(s *dynamo.Store) error{
		"PutRecentFile": func(s *dynamo.Store) error {
			return s.PutRecentFile(t.Context(), newEntry("alice", 1, sshdeck.RecentFile, "/a"), 100)
		},
		"AddShortcut": func(s *dynamo.Store) error {
			_, err := s.AddShortcut(t.Context(), newEntry("alice", 1, sshdeck.Shortcut, "/a"), 100)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			other, srv := start(t)
			mustCreateHosts(t, other, "alice", 1)
			api := &racing{API: srv.Client, before: func() {
				if err := other.DeleteHost(t.Context(), "alice", 1, 0); err != nil {
					t.Error(err)
				}
			}}
			s := dynamo.New(api, srv.Table)
			if code := sshdeck.ErrorCode(write(s)); code != sshdeck.NotFound {
				t.Fatalf("%s on a host deleted meanwhile: got code %q, want not_found", name, code)
			}
			if n := countItems(t, srv, "OWNER#alice", "FILE#"); n != 0 {
				t.Errorf("%s on a host deleted meanwhile left %d entries", name, n)
			}
		})
	}
}

// batchRacing is an API on which another request gets in just before the
// next BatchWriteItem.
type batchRacing struct {
	dynamo.API
	before func()
}

func (r *batchRacing) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if before := r.before; before != nil {
		r.before = nil
		before()
	}
	return r.API.BatchWriteItem(ctx, in, optFns...)
}

// TestHostDeleteRacesEntryWrite adds an entry between DeleteHost's query of
// the entries and its deletes of them: as the host went first, the add is
// refused, and no entry is left behind.
func TestHostDeleteRacesEntryWrite(t *testing.T) {
	srv := withEntries(t, 1)
	other := dynamo.New(srv.Client, srv.Table)
	api := &batchRacing{API: srv.Client, before: func() {
		err := other.PutRecentFile(t.Context(), newEntry("alice", 1, sshdeck.RecentFile, "/late"), 100)
		if code := sshdeck.ErrorCode(err); code != sshdeck.NotFound {
			t.Errorf("PutRecentFile during DeleteHost: got %v, want not_found", err)
		}
	}}
	s := dynamo.New(api, srv.Table)
	if err := s.DeleteHost(t.Context(), "alice", 1, 0); err != nil {
		t.Fatal(err)
	}
	if n := countItems(t, srv, "OWNER#alice", "FILE#"); n != 0 {
		t.Errorf("DeleteHost left %d entries", n)
	}
}
