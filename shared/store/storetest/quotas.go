package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// testHostLimit: an owner may have max hosts; the next create is
// LimitExceeded and stores nothing, another owner is not concerned, a
// delete makes room again, and an existing id is still a Conflict.
func testHostLimit(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	const max = 3
	var ids []int64
	for i := range max {
		h := fullHost("alice", nextID(t, s, "alice"), i)
		must(t, s.CreateHost(ctx, h, max), "CreateHost below the limit")
		ids = append(ids, h.ID)
	}
	extra := fullHost("alice", nextID(t, s, "alice"), 9)
	err := s.CreateHost(ctx, extra, max)
	wantCode(t, err, sshdeck.LimitExceeded, "CreateHost past the limit")
	if want := sshdeck.HostsExceeded(max).Message; sshdeck.ErrorMessage(err) != want {
		t.Errorf("CreateHost past the limit: message %q, want %q", sshdeck.ErrorMessage(err), want)
	}
	_, err = s.Host(ctx, "alice", extra.ID)
	wantCode(t, err, sshdeck.NotFound, "Host refused by the limit")
	wantCode(t, s.CreateHost(ctx, fullHost("alice", ids[0], 1), max), sshdeck.Conflict, "CreateHost of an existing id at the limit")
	if n := len(listHosts(t, s, "alice")); n != max {
		t.Fatalf("Hosts at the limit: %d, want %d", n, max)
	}
	// Bob's hosts are counted apart.
	must(t, s.CreateHost(ctx, fullHost("bob", nextID(t, s, "bob"), 1), max), "bob's CreateHost")
	// A refused delete frees nothing; a delete frees one.
	wantCode(t, s.DeleteHost(ctx, "alice", ids[1], 99), sshdeck.Conflict, "DeleteHost at a stale version")
	wantCode(t, s.CreateHost(ctx, extra, max), sshdeck.LimitExceeded, "CreateHost after a refused delete")
	must(t, s.DeleteHost(ctx, "alice", ids[1], 0), "DeleteHost")
	wantCode(t, s.DeleteHost(ctx, "alice", ids[1], 0), sshdeck.NotFound, "DeleteHost again")
	must(t, s.CreateHost(ctx, extra, max), "CreateHost after a delete")
	wantCode(t, s.CreateHost(ctx, fullHost("alice", nextID(t, s, "alice"), 10), max), sshdeck.LimitExceeded, "CreateHost past the limit again")
	// A higher limit (a setting raised) lets more in.
	must(t, s.CreateHost(ctx, fullHost("alice", nextID(t, s, "alice"), 11), max+1), "CreateHost under a raised limit")
	if n := len(listHosts(t, s, "alice")); n != max+1 {
		t.Fatalf("Hosts: %d, want %d", n, max+1)
	}
}

// testHostLimitConcurrent: creates racing for the last places of an owner
// never take it past the limit, and deletes racing with creates keep the
// count exact: once they are over, the owner can fill exactly to the limit.
func testHostLimitConcurrent(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	const max, racers = 5, 16
	must(t, s.CreateHost(ctx, fullHost("alice", nextID(t, s, "alice"), 0), max), "CreateHost")
	var created atomic.Int64
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			id, err := s.NextHostID(ctx, "alice")
			if err != nil {
				t.Error(err)
				return
			}
			switch err := s.CreateHost(ctx, fullHost("alice", id, i), max); sshdeck.ErrorCode(err) {
			case "":
				created.Add(1)
			case sshdeck.LimitExceeded, sshdeck.Conflict: // Conflict: too many racers, try again
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	hs := listHosts(t, s, "alice")
	if len(hs) > max || int64(len(hs)) != 1+created.Load() {
		t.Fatalf("after racing creates: %d hosts, %d created; want at most %d", len(hs), created.Load(), max)
	}

	// Delete every host while others create, then fill up.
	for _, h := range hs {
		wg.Go(func() {
			if err := s.DeleteHost(ctx, "alice", h.ID, 0); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			id, err := s.NextHostID(ctx, "alice")
			if err != nil {
				t.Error(err)
				return
			}
			switch err := s.CreateHost(ctx, fullHost("alice", id, 1), max); sshdeck.ErrorCode(err) {
			case "", sshdeck.LimitExceeded, sshdeck.Conflict:
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	n := len(listHosts(t, s, "alice"))
	if n > max {
		t.Fatalf("after racing deletes and creates: %d hosts, more than %d", n, max)
	}
	for i := n; i < max; i++ {
		must(t, s.CreateHost(ctx, fullHost("alice", nextID(t, s, "alice"), i), max), fmt.Sprintf("CreateHost #%d filling up", i+1))
	}
	wantCode(t, s.CreateHost(ctx, fullHost("alice", nextID(t, s, "alice"), 9), max), sshdeck.LimitExceeded, "CreateHost when full")
}

// testFileShortcutMaxConcurrent: adds racing for a host's last shortcuts
// never take it past the limit; deletes make room exactly.
func testFileShortcutMaxConcurrent(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	h := createHost(t, s, "alice", 1)
	const max, racers = 4, 16
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			_, err := s.AddShortcut(ctx, entry("alice", h.ID, sshdeck.Shortcut, fmt.Sprintf("/s%02d", i), i), max)
			switch sshdeck.ErrorCode(err) {
			case "", sshdeck.LimitExceeded, sshdeck.Conflict:
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := listFiles(t, s, "alice", h.ID, sshdeck.Shortcut)
	if len(got) > max {
		t.Fatalf("after racing adds: %d shortcuts %v, more than %d", len(got), paths(got), max)
	}
	for _, e := range got {
		must(t, s.DeleteFile(ctx, "alice", h.ID, sshdeck.Shortcut, e.Path), "DeleteFile")
	}
	for i := range max {
		addShortcut(t, s, entry("alice", h.ID, sshdeck.Shortcut, fmt.Sprintf("/t%d", i), i), max, true)
	}
	_, err := s.AddShortcut(ctx, entry("alice", h.ID, sshdeck.Shortcut, "/t9", 9), max)
	wantCode(t, err, sshdeck.LimitExceeded, "AddShortcut when full")
	// Recent entries are not shortcuts: a full list of them changes nothing.
	putRecent(t, s, entry("alice", h.ID, sshdeck.RecentFile, "/r", 1), 1)
	must(t, s.DeleteFile(ctx, "alice", h.ID, sshdeck.RecentFile, "/r"), "DeleteFile of a recent entry")
	_, err = s.AddShortcut(ctx, entry("alice", h.ID, sshdeck.Shortcut, "/t9", 9), max)
	wantCode(t, err, sshdeck.LimitExceeded, "AddShortcut when full, after a recent entry came and went")
}
