package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// batch allocates n ids of the owner and returns full hosts under them,
// seeds from seed on. Past MaxHostBatch, NextHostIDs cannot allocate them
// at once: NextHostID does.
func batch(t *testing.T, s sshdeck.Store, owner string, n, seed int) []*sshdeck.Host {
	t.Helper()
	hs := make([]*sshdeck.Host, n)
	if n > sshdeck.MaxHostBatch {
		for i := range hs {
			hs[i] = fullHost(owner, nextID(t, s, owner), seed+i)
		}
		return hs
	}
	first, err := s.NextHostIDs(t.Context(), owner, n)
	must(t, err, "NextHostIDs")
	for i := range hs {
		hs[i] = fullHost(owner, first+int64(i), seed+i)
	}
	return hs
}

// testNextHostIDs: n ids at once are the next n, never handed out again.
func testNextHostIDs(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	a := nextID(t, s, "alice")
	first, err := s.NextHostIDs(ctx, "alice", 5)
	must(t, err, "NextHostIDs")
	if first != a+1 {
		t.Fatalf("NextHostIDs(5) after id %d: first %d", a, first)
	}
	if b := nextID(t, s, "alice"); b != first+5 {
		t.Fatalf("NextHostID after ids %d..%d: got %d", first, first+4, b)
	}
	if first, err := s.NextHostIDs(ctx, "bob", 3); err != nil || first != 1 {
		t.Fatalf("bob's NextHostIDs(3): %d, %v; want 1", first, err)
	}
	for _, n := range []int{0, -1, sshdeck.MaxHostBatch + 1} {
		if _, err := s.NextHostIDs(ctx, "alice", n); err == nil {
			t.Errorf("NextHostIDs(%d): no error", n)
		}
	}
}

// wantHosts fails unless the owner's hosts are exactly want, in id order.
func wantHosts(t *testing.T, s sshdeck.Store, owner string, want []*sshdeck.Host, what string) {
	t.Helper()
	got := listHosts(t, s, owner)
	if len(got) != len(want) {
		t.Fatalf("%s: %d hosts, want %d", what, len(got), len(want))
	}
	for i := range want {
		sameHost(t, got[i], want[i], fmt.Sprintf("%s: host %d", what, i))
	}
}

// testHostsBatch: CreateHosts stores every host as CreateHost would, the
// batch's ids are never handed out again (one past the sequence too), and
// the hosts count against the limit as single creates do.
func testHostsBatch(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	first := createHost(t, s, "alice", 0)
	hs := batch(t, s, "alice", 3, 1)
	// An id that did not come from NextHostID, past the sequence.
	hs[2].ID += 40
	must(t, s.CreateHosts(ctx, hs, maxHosts), "CreateHosts")
	wantHosts(t, s, "alice", append([]*sshdeck.Host{first}, hs...), "after CreateHosts")
	if id := nextID(t, s, "alice"); id <= hs[2].ID {
		t.Fatalf("NextHostID after a batch up to id %d: got %d", hs[2].ID, id)
	}
	// Bob's first hosts, in a batch (ids 1..3: a new owner's counter).
	bobs := batch(t, s, "bob", 3, 10)
	must(t, s.CreateHosts(ctx, bobs, 4), "bob's CreateHosts")
	wantHosts(t, s, "bob", bobs, "bob's hosts")
	// They count: one more fits, then none.
	must(t, s.CreateHost(ctx, fullHost("bob", nextID(t, s, "bob"), 20), 4), "bob's 4th host")
	wantCode(t, s.CreateHost(ctx, fullHost("bob", nextID(t, s, "bob"), 21), 4), sshdeck.LimitExceeded, "bob's 5th host")
	// And deletes count down as for single creates.
	must(t, s.DeleteHost(ctx, "bob", bobs[0].ID, 0), "DeleteHost")
	must(t, s.CreateHosts(ctx, batch(t, s, "bob", 1, 22), 4), "CreateHosts of one after a delete")
	wantCode(t, s.CreateHosts(ctx, batch(t, s, "bob", 1, 23), 4), sshdeck.LimitExceeded, "CreateHosts when full")
}

// testHostsBatchConflict: a batch with one existing id stores none of its
// hosts, names that id, and takes nothing of the owner's count.
func testHostsBatchConflict(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	existing := createHost(t, s, "alice", 0)
	hs := batch(t, s, "alice", 3, 1)
	hs[1] = fullHost("alice", existing.ID, 9)
	err := s.CreateHosts(ctx, hs, maxHosts)
	wantCode(t, err, sshdeck.Conflict, "CreateHosts with an existing id")
	if want := fmt.Sprintf("host %d exists", existing.ID); sshdeck.ErrorMessage(err) != want {
		t.Errorf("CreateHosts with an existing id: %q, want %q", sshdeck.ErrorMessage(err), want)
	}
	wantHosts(t, s, "alice", []*sshdeck.Host{existing}, "after the refused batch")
	// Nothing was counted: the owner fills to the limit exactly.
	const max = 3
	must(t, s.CreateHosts(ctx, batch(t, s, "alice", max-1, 20), max), "CreateHosts up to the limit")
	wantCode(t, s.CreateHost(ctx, fullHost("alice", nextID(t, s, "alice"), 30), max), sshdeck.LimitExceeded, "CreateHost past the limit")
}

// testHostsBatchLimit: a batch that would take the owner past the limit
// stores nothing, even the hosts that would fit; one that fills it
// exactly passes.
func testHostsBatchLimit(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	const max = 5
	var have []*sshdeck.Host
	for i := range 2 {
		h := fullHost("alice", nextID(t, s, "alice"), i)
		must(t, s.CreateHost(ctx, h, max), "CreateHost")
		have = append(have, h)
	}
	err := s.CreateHosts(ctx, batch(t, s, "alice", 4, 10), max)
	wantCode(t, err, sshdeck.LimitExceeded, "CreateHosts past the limit")
	if want := sshdeck.HostsExceeded(max).Message; sshdeck.ErrorMessage(err) != want {
		t.Errorf("CreateHosts past the limit: %q, want %q", sshdeck.ErrorMessage(err), want)
	}
	wantHosts(t, s, "alice", have, "after the batch past the limit")
	// A batch larger than the limit on an empty owner fails alike.
	wantCode(t, s.CreateHosts(ctx, batch(t, s, "carol", max+1, 0), max), sshdeck.LimitExceeded, "CreateHosts of more than the limit")
	wantHosts(t, s, "carol", nil, "carol after her batch past the limit")
	fill := batch(t, s, "alice", 3, 20)
	must(t, s.CreateHosts(ctx, fill, max), "CreateHosts filling up")
	wantHosts(t, s, "alice", append(have, fill...), "after filling up")
	wantCode(t, s.CreateHost(ctx, fullHost("alice", nextID(t, s, "alice"), 30), max), sshdeck.LimitExceeded, "CreateHost when full")
}

// testHostsBatchConcurrent: batches racing for an owner's last places, with
// single creates among them, never take it past the limit, and each batch
// is whole or absent.
func testHostsBatchConcurrent(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	const max, racers, size = 10, 8, 3
	var stored atomic.Int64
	var wg sync.WaitGroup
	batches := make([][]*sshdeck.Host, racers)
	for i := range racers {
		wg.Go(func() {
			hs := make([]*sshdeck.Host, size)
			for j := range hs {
				id, err := s.NextHostID(ctx, "alice")
				if err != nil {
					t.Error(err)
					return
				}
				hs[j] = fullHost("alice", id, i*size+j)
			}
			batches[i] = hs
			switch err := s.CreateHosts(ctx, hs, max); sshdeck.ErrorCode(err) {
			case "":
				stored.Add(size)
			case sshdeck.LimitExceeded, sshdeck.Conflict: // Conflict: too many racers
			default:
				t.Error(err)
			}
		})
		wg.Go(func() {
			id, err := s.NextHostID(ctx, "alice")
			if err != nil {
				t.Error(err)
				return
			}
			switch err := s.CreateHost(ctx, fullHost("alice", id, 100+i), max); sshdeck.ErrorCode(err) {
			case "":
				stored.Add(1)
			case sshdeck.LimitExceeded, sshdeck.Conflict:
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	hs := listHosts(t, s, "alice")
	if len(hs) > max || int64(len(hs)) != stored.Load() {
		t.Fatalf("after racing batches: %d hosts, %d stored; want at most %d", len(hs), stored.Load(), max)
	}
	ids := map[int64]bool{}
	for _, h := range hs {
		ids[h.ID] = true
	}
	for i, b := range batches {
		n := 0
		for _, h := range b {
			if ids[h.ID] {
				n++
			}
		}
		if n != 0 && n != len(b) {
			t.Errorf("batch %d: %d of its %d hosts stored", i, n, len(b))
		}
	}
	for i := len(hs); i < max; i++ {
		must(t, s.CreateHost(ctx, fullHost("alice", nextID(t, s, "alice"), 200+i), max), fmt.Sprintf("CreateHost #%d filling up", i+1))
	}
	wantCode(t, s.CreateHost(ctx, fullHost("alice", nextID(t, s, "alice"), 300), max), sshdeck.LimitExceeded, "CreateHost when full")
}

// testHostsBatchInvalid: batches that are programming errors store nothing.
func testHostsBatchInvalid(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	id := nextID(t, s, "alice")
	for name, hs := range map[string][]*sshdeck.Host{
		"none":        {},
		"two owners":  {fullHost("alice", id, 1), fullHost("bob", id+1, 2)},
		"an id twice": {fullHost("alice", id, 1), fullHost("alice", id, 2)},
		"version 2":   {func() *sshdeck.Host { h := fullHost("alice", id, 1); h.Version = 2; return h }()},
		"too many":    batch(t, s, "alice", sshdeck.MaxHostBatch+1, 0),
	} {
		if err := s.CreateHosts(ctx, hs, maxHosts); err == nil {
			t.Errorf("CreateHosts with %s: no error", name)
		}
	}
	wantHosts(t, s, "alice", nil, "after invalid batches")
	wantHosts(t, s, "bob", nil, "bob after invalid batches")
}
