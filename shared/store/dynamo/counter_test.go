package dynamo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

// uncount makes the counter items of alice (and of her host 1's shortcuts)
// what a store of before the counts left: the host-id counter with n alone,
// no count of shortcuts.
func uncount(t *testing.T, srv *dynamotest.Server) {
	t.Helper()
	seq := rawItem(t, srv, "OWNER#alice", "SEQ#HOST")
	putRaw(t, srv, map[string]types.AttributeValue{"pk": seq["pk"], "sk": seq["sk"], "n": seq["n"], "sv": seq["sv"]})
	if _, err := srv.Client.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{
		TableName: &srv.Table, Key: key("OWNER#alice", "FILE#0000000000000000001#COUNT#SHORTCUT"),
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCountsOfBefore: counter items without a count (written before there
// were counts) still hold the limits: the first add counts the items once
// (a Query), deletes before it are noted, and the count is then exact.
func TestCountsOfBefore(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	mustCreateHosts(t, s, "alice", 3)
	for i := range 3 {
		if _, err := s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, fmt.Sprintf("/s%d", i)), 10); err != nil {
			t.Fatal(err)
		}
	}
	uncount(t, srv)

	// A delete without a count notes itself in uncountedDeletes.
	if err := s.DeleteHost(ctx, "alice", 3, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteFile(ctx, "alice", 1, sshdeck.Shortcut, "/s2"); err != nil {
		t.Fatal(err)
	}
	seq := rawItem(t, srv, "OWNER#alice", "SEQ#HOST")
	if got := attr(seq, "count") + " " + attr(seq, "uncountedDeletes"); got != "- N:1" {
		t.Errorf("counter after a delete without a count: count, uncountedDeletes %s, want - N:1", got)
	}

	// Two hosts are left: at a limit of 3, one more, then none.
	srv.ResetCalls()
	if err := s.CreateHost(ctx, newHost("alice", nextID(t, s, "alice"), 1), 3); err != nil {
		t.Fatal(err)
	}
	if got := srv.Calls()["Query"]; got != 1 {
		t.Errorf("the first create without a count made %d Queries, want 1", got)
	}
	if got := attr(rawItem(t, srv, "OWNER#alice", "SEQ#HOST"), "count"); got != "N:3" {
		t.Errorf("count after the first create: %s, want N:3", got)
	}
	code := sshdeck.ErrorCode(s.CreateHost(ctx, newHost("alice", nextID(t, s, "alice"), 1), 3))
	if code != sshdeck.LimitExceeded {
		t.Errorf("create past the limit: code %q, want limit_exceeded", code)
	}
	// The same for shortcuts: 2 left, limit 3.
	if added, err := s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, "/t"), 3); err != nil || !added {
		t.Fatalf("AddShortcut without a count: %t, %v", added, err)
	}
	_, err := s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, "/u"), 3)
	if code := sshdeck.ErrorCode(err); code != sshdeck.LimitExceeded {
		t.Errorf("AddShortcut past the limit: code %q, want limit_exceeded", code)
	}
	// Counted deletes count down.
	if err := s.DeleteHost(ctx, "alice", 1, 0); err != nil {
		t.Fatal(err)
	}
	if got := attr(rawItem(t, srv, "OWNER#alice", "SEQ#HOST"), "count"); got != "N:2" {
		t.Errorf("count after a delete: %s, want N:2", got)
	}
}

// deleting runs before() before the nth TransactWriteItems.
type deleting struct {
	dynamo.API
	n      int
	before func()
}

func (d *deleting) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if d.n--; d.n == 0 {
		d.before()
	}
	return d.API.TransactWriteItems(ctx, in, optFns...)
}

// TestCountRacesDelete: a delete between the Query that counts and the
// transaction that sets the count sends the add back to count again, so
// the host it counted and another deleted is not counted.
func TestCountRacesDelete(t *testing.T) {
	ctx := t.Context()
	other, srv := start(t)
	mustCreateHosts(t, other, "alice", 2)
	uncount(t, srv)
	// The first transaction is refused (no count), the counter is read,
	// the Query counts 2, and before the second transaction host 2 goes.
	api := &deleting{API: srv.Client, n: 2, before: func() {
		if err := other.DeleteHost(ctx, "alice", 2, 0); err != nil {
			t.Error(err)
		}
	}}
	s := dynamo.New(api, srv.Table)
	srv.ResetCalls()
	if err := s.CreateHost(ctx, newHost("alice", nextID(t, s, "alice"), 1), 10); err != nil {
		t.Fatal(err)
	}
	if got := srv.Calls()["Query"]; got < 2 {
		t.Errorf("the add counted %d times, want a second count after the delete", got)
	}
	if got := attr(rawItem(t, srv, "OWNER#alice", "SEQ#HOST"), "count"); got != "N:2" {
		t.Errorf("count: %s, want N:2 (host 1 and the new one)", got)
	}
}
