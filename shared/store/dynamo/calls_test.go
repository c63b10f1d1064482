package dynamo_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

func newHost(owner string, id, version int64) *sshdeck.Host {
	h := &sshdeck.Host{Owner: owner, ID: id, Version: version, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	h.Name = "web"
	h.Sealed.Password = []byte{0, 1, 2}
	return h
}

func mustCreateHosts(t *testing.T, s *dynamo.Store, owner string, n int) {
	t.Helper()
	for range n {
		id, err := s.NextHostID(t.Context(), owner)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateHost(t.Context(), newHost(owner, id, 1)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCallCounts pins the DynamoDB calls of each store method, in the order
// of a scenario; README.md adds them up per route.
func TestCallCounts(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	mustCreateHosts(t, s, "alice", 2)
	now := time.Now()

	steps := []struct {
		name string
		run  func() error
		code sshdeck.Code // of the error; "" for success
		want map[string]int
	}{
		{"Ping", func() error { return s.Ping(ctx) }, "", map[string]int{"GetItem": 1}},
		{"CreateUser", func() error {
			return s.CreateUser(ctx, &sshdeck.User{ID: "u-1", Name: "alice", CreatedAt: now})
		}, "", map[string]int{"TransactWriteItems": 1}},
		{"CreateUser of a taken name", func() error {
			return s.CreateUser(ctx, &sshdeck.User{ID: "u-2", Name: "alice", CreatedAt: now})
		}, sshdeck.Conflict, map[string]int{"TransactWriteItems": 1}},
		{"User", func() error { _, err := s.User(ctx, "u-1"); return err }, "", map[string]int{"GetItem": 1}},
		{"UserByName", func() error { _, err := s.UserByName(ctx, "alice"); return err }, "", map[string]int{"GetItem": 1}},
		{"Users", func() error { _, err := s.Users(ctx); return err }, "", map[string]int{"Query": 1}},
		{"CreateToken", func() error {
			return s.CreateToken(ctx, &sshdeck.Token{ID: "t-1", UserID: "u-1", Hash: "h-1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
		}, "", map[string]int{"TransactWriteItems": 1}},
		{"TokenByHash", func() error { _, err := s.TokenByHash(ctx, "h-1"); return err }, "", map[string]int{"GetItem": 1}},
		{"Tokens", func() error { _, err := s.Tokens(ctx, "u-1"); return err }, "", map[string]int{"Query": 1}},
		{"RevokeToken", func() error { _, err := s.RevokeToken(ctx, "t-1", now); return err }, "", map[string]int{"GetItem": 1, "UpdateItem": 1}},
		{"Host", func() error { _, err := s.Host(ctx, "alice", 1); return err }, "", map[string]int{"GetItem": 1}},
		{"Host absent", func() error { _, err := s.Host(ctx, "alice", 99); return err }, sshdeck.NotFound, map[string]int{"GetItem": 1}},
		{"Hosts", func() error { _, err := s.Hosts(ctx, "alice"); return err }, "", map[string]int{"Query": 1}},
		{"NextHostID", func() error { _, err := s.NextHostID(ctx, "alice"); return err }, "", map[string]int{"UpdateItem": 1}},
		{"CreateHost", func() error { return s.CreateHost(ctx, newHost("alice", 3, 1)) }, "", map[string]int{"GetItem": 1, "PutItem": 1}},
		{"CreateHost of an existing id", func() error { return s.CreateHost(ctx, newHost("alice", 3, 1)) }, sshdeck.Conflict, map[string]int{"GetItem": 1, "PutItem": 1}},
		{"CreateHost past the counter", func() error { return s.CreateHost(ctx, newHost("alice", 10, 1)) }, "", map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		{"UpdateHost", func() error { return s.UpdateHost(ctx, newHost("alice", 1, 2)) }, "", map[string]int{"PutItem": 1}},
		{"UpdateHost stale", func() error { return s.UpdateHost(ctx, newHost("alice", 1, 2)) }, sshdeck.Conflict, map[string]int{"PutItem": 1, "GetItem": 1}},
		{"UpdateHost absent", func() error { return s.UpdateHost(ctx, newHost("alice", 99, 2)) }, sshdeck.NotFound, map[string]int{"PutItem": 1, "GetItem": 1}},
		{"DeleteHost at another version", func() error { return s.DeleteHost(ctx, "alice", 1, 1) }, sshdeck.Conflict, map[string]int{"DeleteItem": 1, "GetItem": 1}},
		{"DeleteHost at its version", func() error { return s.DeleteHost(ctx, "alice", 1, 2) }, "", map[string]int{"DeleteItem": 1}},
		{"DeleteHost at any version", func() error { return s.DeleteHost(ctx, "alice", 2, 0) }, "", map[string]int{"DeleteItem": 1}},
		{"DeleteHost absent", func() error { return s.DeleteHost(ctx, "alice", 2, 0) }, sshdeck.NotFound, map[string]int{"DeleteItem": 1}},
	}
	for _, step := range steps {
		srv.ResetCalls()
		err := step.run()
		if step.code == "" && err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := sshdeck.ErrorCode(err); step.code != "" && got != step.code {
			t.Fatalf("%s: got error %v, want code %s", step.name, err, step.code)
		}
		if got := srv.Calls(); !maps.Equal(got, step.want) {
			t.Errorf("%s: got calls %v, want %v", step.name, got, step.want)
		}
	}
}

// TestPagination lists more items than fit in a page: every list follows
// LastEvaluatedKey to the end, in order.
func TestPagination(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	dynamo.SetPageSize(s, 2)
	mustCreateHosts(t, s, "alice", 5)
	for i := range 5 {
		u := &sshdeck.User{ID: fmt.Sprintf("u-%d", i), Name: fmt.Sprintf("user-%d", i), CreatedAt: time.Now()}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		k := &sshdeck.Token{ID: fmt.Sprintf("t-%d", i), UserID: "u-0", Hash: fmt.Sprintf("h-%d", i), CreatedAt: time.Now()}
		if err := s.CreateToken(ctx, k); err != nil {
			t.Fatal(err)
		}
	}

	srv.ResetCalls()
	hosts, err := s.Hosts(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, h := range hosts {
		ids = append(ids, h.ID)
	}
	if got := fmt.Sprint(ids); got != "[1 2 3 4 5]" {
		t.Errorf("Hosts: got ids %s, want [1 2 3 4 5]", got)
	}
	// Pages of 2, 2 and 1 host: the last one is short, so it is the last.
	if n := srv.Calls()["Query"]; n != 3 {
		t.Errorf("Hosts made %d Query calls, want 3", n)
	}

	users, err := s.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := s.Tokens(ctx, "u-0")
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 5 || len(tokens) != 5 {
		t.Errorf("got %d users and %d tokens, want 5 of each", len(users), len(tokens))
	}
}

// reads records whether each read asked for strong consistency, which
// minidyn, always consistent, cannot show.
type reads struct {
	dynamo.API
	consistent []bool
}

func (r *reads) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.consistent = append(r.consistent, aws.ToBool(in.ConsistentRead))
	return r.API.GetItem(ctx, in, optFns...)
}

func (r *reads) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.consistent = append(r.consistent, aws.ToBool(in.ConsistentRead))
	return r.API.Query(ctx, in, optFns...)
}

// TestConsistentReads checks that every read of the base table is strongly
// consistent, so that a write is seen by the next request: only Ping (which
// reads nothing) and Tokens (an index cannot be read consistently) are not.
func TestConsistentReads(t *testing.T) {
	ctx := t.Context()
	_, srv := start(t)
	r := &reads{API: srv.Client}
	s := dynamo.New(r, srv.Table)
	mustCreateHosts(t, s, "alice", 1)
	calls := map[string]func() error{
		"User":        func() error { _, err := s.User(ctx, "u-1"); return err },
		"UserByName":  func() error { _, err := s.UserByName(ctx, "alice"); return err },
		"Users":       func() error { _, err := s.Users(ctx); return err },
		"TokenByHash": func() error { _, err := s.TokenByHash(ctx, "h-1"); return err },
		"RevokeToken": func() error { _, err := s.RevokeToken(ctx, "t-1", time.Now()); return err },
		"Host":        func() error { _, err := s.Host(ctx, "alice", 1); return err },
		"Hosts":       func() error { _, err := s.Hosts(ctx, "alice"); return err },
		"CreateHost":  func() error { return s.CreateHost(ctx, newHost("alice", 1, 1)) },
		"UpdateHost":  func() error { return s.UpdateHost(ctx, newHost("alice", 1, 5)) },
		"DeleteHost":  func() error { return s.DeleteHost(ctx, "alice", 1, 5) },
	}
	for name, read := range calls {
		r.consistent = nil
		read() // the outcome does not matter, only the reads made
		if len(r.consistent) == 0 || slices.Contains(r.consistent, false) {
			t.Errorf("%s: reads' ConsistentRead: %v, want all true", name, r.consistent)
		}
	}
}
