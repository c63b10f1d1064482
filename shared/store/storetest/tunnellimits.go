package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The tenancy cases of tunnels: the limit of an owner's tunnels, deleting
// one, and the list of stopped tunnels to forget.

func createTunnel(t *testing.T, s sshdeck.Store, x *sshdeck.Tunnel, limit int) {
	t.Helper()
	must(t, s.CreateTunnel(t.Context(), x, limit), fmt.Sprintf("CreateTunnel(%s, %q, limit %d)", x.Owner, x.Name, limit))
}

func testTunnelCreateLimit(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	// PutTunnel's creates count too.
	putTunnel(t, s, fullTunnel("usr_a", "a", 1))
	createTunnel(t, s, fullTunnel("usr_a", "b", 2), 3)
	createTunnel(t, s, fullTunnel("usr_a", "c", 3), 3)
	err := s.CreateTunnel(ctx, fullTunnel("usr_a", "d", 4), 3)
	wantCode(t, err, sshdeck.LimitExceeded, "the 4th tunnel at a limit of 3")
	if e, ok := err.(*sshdeck.Error); !ok || !containsNumber(e.Message, 3) {
		t.Errorf("limit error %q does not name the limit 3", err)
	}
	// An existing name is no new tunnel: Conflict, as below the limit.
	wantCode(t, s.CreateTunnel(ctx, fullTunnel("usr_a", "b", 5), 3), sshdeck.Conflict, "CreateTunnel of an existing name at the limit")
	// A next generation is no new tunnel either.
	x := getTunnel(t, s, "usr_a", "b")
	putTunnel(t, s, nextTunnel(x))
	// Another owner's limit is their own; no limit is none.
	createTunnel(t, s, fullTunnel("usr_b", "a", 6), 1)
	createTunnel(t, s, fullTunnel("usr_a", "d", 4), 0)
	if got := tunnelNames(listTunnels(t, s, "usr_a")); !slices.Equal(got, []string{"usr_a/a", "usr_a/b", "usr_a/c", "usr_a/d"}) {
		t.Fatalf("usr_a's tunnels: %v", got)
	}
	wantCode(t, s.CreateTunnel(ctx, fullTunnel("usr_a", "e", 7), 4), sshdeck.LimitExceeded, "the 5th tunnel at a limit of 4")
	// A delete makes room for one.
	must(t, s.DeleteTunnel(ctx, "usr_a", "a", 0), "DeleteTunnel")
	createTunnel(t, s, fullTunnel("usr_a", "e", 7), 4)
	wantCode(t, s.CreateTunnel(ctx, fullTunnel("usr_a", "f", 8), 4), sshdeck.LimitExceeded, "the 5th tunnel after a delete and a create")
	// Generations must be 1.
	x = fullTunnel("usr_a", "g", 9)
	x.Generation = 2
	if err := s.CreateTunnel(ctx, x, 0); err == nil {
		t.Error("CreateTunnel of generation 2: no error")
	}
}

func containsNumber(s string, n int) bool {
	return slices.Contains(splitWords(s), fmt.Sprint(n))
}

func splitWords(s string) []string {
	var words []string
	word := []rune{}
	for _, r := range s {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			word = append(word, r)
			continue
		}
		if len(word) > 0 {
			words = append(words, string(word))
			word = word[:0]
		}
	}
	if len(word) > 0 {
		words = append(words, string(word))
	}
	return words
}

// testTunnelCreateLimitConcurrent: creates racing each other never pass
// the limit, and every one below it succeeds.
func testTunnelCreateLimitConcurrent(t *testing.T, s sshdeck.Store) {
	const limit, tries = 5, 20
	createTunnel(t, s, fullTunnel("usr_a", "first", 0), limit) // the count exists
	var wg sync.WaitGroup
	errs := make([]error, tries)
	for i := range tries {
		wg.Go(func() { errs[i] = s.CreateTunnel(t.Context(), fullTunnel("usr_a", fmt.Sprintf("t%02d", i), i), limit) })
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch sshdeck.ErrorCode(err) {
		case "":
			ok++
		case sshdeck.LimitExceeded:
		default:
			t.Errorf("create %d: %v", i, err)
		}
	}
	if ok != limit-1 {
		t.Errorf("%d concurrent creates succeeded, want %d", ok, limit-1)
	}
	if n := len(listTunnels(t, s, "usr_a")); n != limit {
		t.Errorf("the owner has %d tunnels, want the limit %d", n, limit)
	}
}

// testTunnelCreateSameNameAtLimit: concurrent creates of one name that
// takes the owner's last place: one creates it, and the others find the
// name taken (Conflict, as a create of an existing name is at the limit
// or below it), never LimitExceeded, which would tell a writer that reads
// again and changes the tunnel (shared/tunnelrecord) to give up.
func testTunnelCreateSameNameAtLimit(t *testing.T, s sshdeck.Store) {
	// The owner's first tunnel (no count yet), then a last place with a
	// count.
	const tries = 8
	for round := range 4 {
		limit, name := 1, fmt.Sprintf("last%d", round)
		if round > 0 {
			limit = 2
			createTunnel(t, s, fullTunnel("usr_a", fmt.Sprintf("first%d", round), 0), limit)
		}
		var wg sync.WaitGroup
		errs := make([]error, tries)
		for i := range tries {
			wg.Go(func() { errs[i] = s.CreateTunnel(t.Context(), fullTunnel("usr_a", name, i), limit) })
		}
		wg.Wait()
		ok := 0
		for i, err := range errs {
			switch sshdeck.ErrorCode(err) {
			case "":
				ok++
			case sshdeck.Conflict:
			default:
				t.Errorf("round %d: create %d of %q: %v, want nil or Conflict", round, i, name, err)
			}
		}
		if ok != 1 {
			t.Errorf("round %d: %d concurrent creates of %q succeeded, want 1", round, ok, name)
		}
		must(t, s.DeleteTunnel(t.Context(), "usr_a", name, 0), "DeleteTunnel")
		if round > 0 {
			must(t, s.DeleteTunnel(t.Context(), "usr_a", fmt.Sprintf("first%d", round), 0), "DeleteTunnel")
		}
	}
}

func testTunnelDelete(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	x := fullTunnel("usr_a", "db", 1)
	putTunnel(t, s, x)
	putTunnel(t, s, fullTunnel("usr_b", "db", 2))
	putTunnel(t, s, fullTunnel("usr_a", "web", 3))
	acquire(t, s, "usr_a", "db", "replica-1", base, base.Add(time.Hour))
	must(t, s.AddKnownHost(ctx, &sshdeck.KnownHost{Owner: "usr_a", Addr: "10.0.0.5:22", Key: "ssh-ed25519 AAAA", CreatedAt: base}), "AddKnownHost")

	wantCode(t, s.DeleteTunnel(ctx, "usr_a", "db", 2), sshdeck.Conflict, "DeleteTunnel at another generation")
	getTunnel(t, s, "usr_a", "db")
	must(t, s.DeleteTunnel(ctx, "usr_a", "db", 1), "DeleteTunnel at its generation")
	_, err := s.Tunnel(ctx, "usr_a", "db")
	wantCode(t, err, sshdeck.NotFound, "Tunnel after DeleteTunnel")
	wantCode(t, s.DeleteTunnel(ctx, "usr_a", "db", 0), sshdeck.NotFound, "DeleteTunnel again")
	wantCode(t, s.DeleteTunnel(ctx, "usr_c", "db", 0), sshdeck.NotFound, "DeleteTunnel of an owner without tunnels")
	if got := tunnelNames(listTunnels(t, s, "usr_a")); !slices.Equal(got, []string{"usr_a/web"}) {
		t.Errorf("usr_a's tunnels after the delete: %v", got)
	}
	getTunnel(t, s, "usr_b", "db")
	if _, err := s.KnownHost(ctx, "usr_a", "10.0.0.5:22"); err != nil {
		t.Errorf("the owner's known host went with the tunnel: %v", err)
	}
	// A stale writer cannot bring it back, and its lease went with it: the
	// name is new again.
	wantCode(t, s.PutTunnel(ctx, nextTunnel(x)), sshdeck.Conflict, "PutTunnel of the next generation of a deleted tunnel")
	_, err = s.AcquireTunnelLease(ctx, "usr_a", "db", "replica-1", base, base.Add(time.Hour))
	wantCode(t, err, sshdeck.NotFound, "AcquireTunnelLease of a deleted tunnel")
	putTunnel(t, s, fullTunnel("usr_a", "db", 4))
	if got := getTunnel(t, s, "usr_a", "db"); got.Lease != (sshdeck.TunnelLease{}) || got.Generation != 1 {
		t.Errorf("the name created again: lease %+v, generation %d; want none and 1", got.Lease, got.Generation)
	}
}

func testTunnelStopped(t *testing.T, s sshdeck.Store) {
	cut := base.Add(24 * time.Hour)
	cases := []struct {
		owner, name string
		run, auto   bool
		updated     time.Time
		want        bool
	}{
		{"usr_b", "old", false, false, cut.Add(-time.Hour), true},
		{"usr_a", "old", false, false, cut.Add(-time.Millisecond), true},
		{"usr_a", "new", false, false, cut.Add(time.Second), false},
		{"usr_a", "at", false, false, cut, false},
		{"usr_a", "running", true, false, cut.Add(-time.Hour), false},
		{"usr_a", "auto", false, true, cut.Add(-time.Hour), false},
		{"usr_ab", "x#1", false, false, cut.Add(-48 * time.Hour), true},
	}
	var want []string
	for i, c := range cases {
		x := fullTunnel(c.owner, c.name, i)
		x.Run, x.Spec.AutoStart, x.UpdatedAt = c.run, c.auto, c.updated
		putTunnel(t, s, x)
		if c.want {
			want = append(want, c.owner+"/"+c.name)
		}
	}
	slices.Sort(want)
	ts, err := s.StoppedTunnels(t.Context(), cut)
	must(t, err, "StoppedTunnels")
	if ts == nil {
		t.Fatal("StoppedTunnels: got nil, want a non-nil slice")
	}
	if got := tunnelNames(ts); !slices.Equal(got, want) {
		t.Fatalf("StoppedTunnels: %v, want %v", got, want)
	}
	sameTunnel(t, ts[0], getTunnel(t, s, "usr_a", "old"), "a stopped tunnel as listed")
}
