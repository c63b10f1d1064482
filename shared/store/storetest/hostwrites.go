package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func testHostUpdateStale(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	v2 := edited(h)
	must(t, s.UpdateHost(t.Context(), v2), "UpdateHost")
	for _, version := range []int64{1, 2, 4} {
		stale := fullHost("alice", h.ID, 99)
		stale.Version = version
		wantCode(t, s.UpdateHost(t.Context(), stale), sshdeck.Conflict, fmt.Sprintf("UpdateHost to version %d of a host at 2", version))
	}
	sameHost(t, getHost(t, s, "alice", h.ID), v2, "Host after the refused updates")
}

func testHostDeleteVersion(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	h := createHost(t, s, "alice", 1)
	v2 := edited(h)
	must(t, s.UpdateHost(ctx, v2), "UpdateHost")
	for _, version := range []int64{1, 3} {
		wantCode(t, s.DeleteHost(ctx, "alice", h.ID, version), sshdeck.Conflict, fmt.Sprintf("DeleteHost at version %d of a host at 2", version))
	}
	sameHost(t, getHost(t, s, "alice", h.ID), v2, "Host after the refused deletes")
	must(t, s.DeleteHost(ctx, "alice", h.ID, 2), "DeleteHost at the right version")
	_, err := s.Host(ctx, "alice", h.ID)
	wantCode(t, err, sshdeck.NotFound, "Host after delete")
}

func testHostNotFound(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	check := func(owner string, id int64) {
		t.Helper()
		_, err := s.Host(ctx, owner, id)
		wantCode(t, err, sshdeck.NotFound, fmt.Sprintf("Host(%s, %d)", owner, id))
		missing := fullHost(owner, id, 1)
		missing.Version = 2
		wantCode(t, s.UpdateHost(ctx, missing), sshdeck.NotFound, fmt.Sprintf("UpdateHost(%s, %d)", owner, id))
		wantCode(t, s.DeleteHost(ctx, owner, id, 0), sshdeck.NotFound, fmt.Sprintf("DeleteHost(%s, %d, 0)", owner, id))
		wantCode(t, s.DeleteHost(ctx, owner, id, 1), sshdeck.NotFound, fmt.Sprintf("DeleteHost(%s, %d, 1)", owner, id))
	}
	check("nobody", 1) // an owner who never had a host
	h := createHost(t, s, "alice", 1)
	check("alice", h.ID+1)
	must(t, s.DeleteHost(ctx, "alice", h.ID, 0), "DeleteHost")
	check("alice", h.ID)
	if hs := listHosts(t, s, "nobody"); len(hs) != 0 {
		t.Fatalf("Hosts(nobody): got %d hosts", len(hs))
	}
}

func testHostOwnerIsolation(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	createHost(t, s, "alice", 1)
	a := createHost(t, s, "alice", 2) // an id bob does not have
	b := createHost(t, s, "bob", 3)

	_, err := s.Host(ctx, "bob", a.ID)
	wantCode(t, err, sshdeck.NotFound, "bob's Host of alice's id")
	steal := edited(a)
	steal.Owner = "bob"
	wantCode(t, s.UpdateHost(ctx, steal), sshdeck.NotFound, "bob's UpdateHost of alice's id")
	wantCode(t, s.DeleteHost(ctx, "bob", a.ID, 0), sshdeck.NotFound, "bob's DeleteHost of alice's id")

	hs := listHosts(t, s, "bob")
	if len(hs) != 1 {
		t.Fatalf("Hosts(bob): got %d hosts, want 1", len(hs))
	}
	sameHost(t, hs[0], b, "Hosts(bob)[0]")
	sameHost(t, getHost(t, s, "alice", a.ID), a, "alice's host after bob's attempts")
	if n := len(listHosts(t, s, "alice")); n != 2 {
		t.Fatalf("Hosts(alice): got %d hosts, want 2", n)
	}
}

// testHostConcurrentUpdates runs read-modify-write loops that retry on
// Conflict, as the API does: every update must land exactly once.
func testHostConcurrentUpdates(t *testing.T, s sshdeck.Store) {
	const writers, updates = 8, 10
	h := fullHost("alice", nextID(t, s, "alice"), 1)
	h.Tags = nil
	must(t, s.CreateHost(t.Context(), h, maxHosts), "CreateHost")

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range updates {
				if err := appendTag(t, s, h.ID, fmt.Sprintf("w%d-%d", w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	got := getHost(t, s, "alice", h.ID)
	if got.Version != 1+writers*updates {
		t.Errorf("Version: got %d, want %d", got.Version, 1+writers*updates)
	}
	if len(got.Tags) != writers*updates {
		t.Errorf("Tags: got %d, want %d: %v", len(got.Tags), writers*updates, got.Tags)
	}
	for w := range writers {
		for i := range updates {
			if tag := fmt.Sprintf("w%d-%d", w, i); !slices.Contains(got.Tags, tag) {
				t.Errorf("update %s was lost", tag)
			}
		}
	}
}

func appendTag(t *testing.T, s sshdeck.Store, id int64, tag string) error {
	for range 10_000 {
		h, err := s.Host(t.Context(), "alice", id)
		if err != nil {
			return fmt.Errorf("Host: %w", err)
		}
		h.Tags = append(h.Tags, tag)
		h.Version++
		err = s.UpdateHost(t.Context(), h)
		if err == nil {
			return nil
		}
		if sshdeck.ErrorCode(err) != sshdeck.Conflict {
			return fmt.Errorf("UpdateHost adding %s: %w", tag, err)
		}
	}
	return fmt.Errorf("UpdateHost adding %s: still conflicting after 10000 tries", tag)
}
