package tunnelrecord_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/shared/tunnelrecord"
)

// stores runs fn over each store, a fresh one per run.
func stores(t *testing.T, fn func(t *testing.T, s sshdeck.TunnelStore)) {
	t.Run("embedded", func(t *testing.T) {
		s, err := embedded.Open(filepath.Join(t.TempDir(), "db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
	t.Run("dynamo", func(t *testing.T) {
		srv := dynamotest.Start(t)
		fn(t, dynamo.New(srv.Client, srv.Table))
	})
}

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func writer(s sshdeck.TunnelStore, limit int) *tunnelrecord.Writer {
	return &tunnelrecord.Writer{Store: s, Limit: limit, Now: func() time.Time { return now }}
}

// setPort is a change: the tunnel's endpointPort.
func setPort(port int) func(*sshdeck.Tunnel) error {
	return func(t *sshdeck.Tunnel) error {
		t.Spec.EndpointPort = port
		return nil
	}
}

func TestCreateWithinLimit(t *testing.T) {
	stores(t, func(t *testing.T, s sshdeck.TunnelStore) {
		ctx := t.Context()
		w := writer(s, 2)
		for i, name := range []string{"a", "b"} {
			got, err := w.Write(ctx, "usr_a", name, true, setPort(8000+i))
			if err != nil {
				t.Fatalf("create %s: %v", name, err)
			}
			if got.Generation != 1 || got.Owner != "usr_a" || got.Name != name || !got.CreatedAt.Equal(now) || !got.UpdatedAt.Equal(now) || !got.Status.UpdatedAt.Equal(now) {
				t.Errorf("create %s = %+v, want generation 1 created and updated now", name, got)
			}
			stored, err := s.Tunnel(ctx, "usr_a", name)
			if err != nil || stored.Generation != 1 || stored.Spec.EndpointPort != 8000+i {
				t.Errorf("stored %s = %+v, %v", name, stored, err)
			}
		}
		// The limit: a new record past it is LimitExceeded, and nothing
		// is written.
		_, err := w.Write(ctx, "usr_a", "c", true, setPort(8002))
		if sshdeck.ErrorCode(err) != sshdeck.LimitExceeded {
			t.Fatalf("third create at a limit of 2 = %v, want LimitExceeded", err)
		}
		if _, err := s.Tunnel(ctx, "usr_a", "c"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
			t.Errorf("a create past the limit stored it: %v", err)
		}
		// At the limit, changing a record (create set or not) is no new
		// tunnel; another owner has a limit of their own.
		for _, create := range []bool{true, false} {
			if got, err := w.Write(ctx, "usr_a", "a", create, setPort(9000)); err != nil || got.Spec.EndpointPort != 9000 {
				t.Errorf("change at the limit (create %v) = %+v, %v", create, got, err)
			}
		}
		if got, _ := s.Tunnel(ctx, "usr_a", "a"); got.Generation != 3 || !got.CreatedAt.Equal(now) {
			t.Errorf("after two changes: %+v, want generation 3", got)
		}
		if _, err := w.Write(ctx, "usr_b", "c", true, setPort(1)); err != nil {
			t.Errorf("another owner's create: %v", err)
		}
	})
}

func TestNotFound(t *testing.T) {
	stores(t, func(t *testing.T, s sshdeck.TunnelStore) {
		called := false
		_, err := writer(s, 0).Write(t.Context(), "usr_a", "gone", false, func(*sshdeck.Tunnel) error {
			called = true
			return nil
		})
		if sshdeck.ErrorCode(err) != sshdeck.NotFound || called {
			t.Fatalf("Write without create of no record = %v (change called: %v), want NotFound before any change", err, called)
		}
	})
}

func TestUnchanged(t *testing.T) {
	stores(t, func(t *testing.T, s sshdeck.TunnelStore) {
		ctx := t.Context()
		w := writer(s, 0)
		unchanged := func(*sshdeck.Tunnel) error { return tunnelrecord.Unchanged }
		// No record and nothing to write: none is made.
		got, err := w.Write(ctx, "usr_a", "t", true, unchanged)
		if !errors.Is(err, tunnelrecord.Unchanged) || got != nil {
			t.Fatalf("Unchanged create = %+v, %v; want nil, Unchanged", got, err)
		}
		if _, err := s.Tunnel(ctx, "usr_a", "t"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
			t.Fatalf("an Unchanged create stored a record: %v", err)
		}
		if _, err := w.Write(ctx, "usr_a", "t", true, setPort(22)); err != nil {
			t.Fatal(err)
		}
		// A record: the stored one comes back, at its generation, as it
		// was even if change touched its copy.
		got, err = w.Write(ctx, "usr_a", "t", false, func(t *sshdeck.Tunnel) error {
			t.Spec.EndpointPort = 99
			return tunnelrecord.Unchanged
		})
		if !errors.Is(err, tunnelrecord.Unchanged) || got == nil || got.Generation != 1 || got.Spec.EndpointPort != 22 {
			t.Fatalf("Unchanged = %+v, %v; want the stored record at generation 1", got, err)
		}
		if stored, _ := s.Tunnel(ctx, "usr_a", "t"); stored.Generation != 1 || stored.Spec.EndpointPort != 22 {
			t.Errorf("Unchanged wrote: %+v", stored)
		}
		// Another error of change is Write's, and nothing is written.
		boom := errors.New("boom")
		if _, err := w.Write(ctx, "usr_a", "t", false, func(*sshdeck.Tunnel) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("change's error = %v, want boom", err)
		}
		if stored, _ := s.Tunnel(ctx, "usr_a", "t"); stored.Generation != 1 {
			t.Errorf("a failed change wrote: %+v", stored)
		}
	})
}

// TestConcurrentWriters: writers that each add one to the same tunnel's
// endpointPort, some of them creating it. The generation guard makes
// every write that returns nil applied exactly once (the count is the
// number of successes, and so is the generation), and a write that does
// not is Conflict (three attempts raced) and applied not at all; change
// may be called more than once, on a fresh read each time.
func TestConcurrentWriters(t *testing.T) {
	stores(t, func(t *testing.T, s sshdeck.TunnelStore) {
		ctx := t.Context()
		w := writer(s, 1)
		const writers, rounds = 8, 5
		var (
			mu        sync.Mutex
			successes int
			conflicts int
			wg        sync.WaitGroup
		)
		for g := range writers {
			wg.Go(func() {
				for r := range rounds {
					_, err := w.Write(ctx, "usr_a", "shared", (g+r)%2 == 0, func(t *sshdeck.Tunnel) error {
						t.Spec.EndpointPort++
						t.Status.Reason = "writer " + strconv.Itoa(g)
						return nil
					})
					mu.Lock()
					switch code := sshdeck.ErrorCode(err); {
					case err == nil:
						successes++
					case code == sshdeck.Conflict, code == sshdeck.NotFound:
						// NotFound: a writer without create before any
						// writer created it.
						conflicts++
					default:
						t.Errorf("writer %d: %v", g, err)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		got, err := s.Tunnel(ctx, "usr_a", "shared")
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.EndpointPort != successes || got.Generation != int64(successes) {
			t.Fatalf("after %d successes and %d conflicts: endpointPort %d, generation %d; want both %d",
				successes, conflicts, got.Spec.EndpointPort, got.Generation, successes)
		}
		if successes == 0 {
			t.Fatal("no write succeeded")
		}
		t.Logf("%d writes applied, %d refused", successes, conflicts)
	})
}

// TestConcurrentCreates: writers creating the same new tunnel at a limit
// of one: one creates it, the others find it and change it (or give up
// with Conflict); none is LimitExceeded, since the tunnel is no new one
// by the time they write.
func TestConcurrentCreates(t *testing.T) {
	stores(t, func(t *testing.T, s sshdeck.TunnelStore) {
		ctx := t.Context()
		w := writer(s, 1)
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for g := range errs {
			wg.Go(func() {
				_, errs[g] = w.Write(ctx, "usr_a", "new", true, func(t *sshdeck.Tunnel) error {
					t.Spec.EndpointPort++
					return nil
				})
			})
		}
		wg.Wait()
		ok := 0
		for g, err := range errs {
			switch sshdeck.ErrorCode(err) {
			case "":
				ok++
			case sshdeck.Conflict:
			default:
				t.Errorf("writer %d: %v", g, err)
			}
		}
		got, err := s.Tunnel(ctx, "usr_a", "new")
		if err != nil || got.Spec.EndpointPort != ok || got.Generation != int64(ok) {
			t.Fatalf("%d writes succeeded; stored %+v, %v", ok, got, err)
		}
	})
}

// TestDeletedMidWrite: a record deleted between Write's read and its
// write is not written back at a generation past 1 (the store refuses a
// put of an absent tunnel), and Write, reading again, creates it anew
// when create is set, or is NotFound when not.
func TestDeletedMidWrite(t *testing.T) {
	stores(t, func(t *testing.T, s sshdeck.TunnelStore) {
		ctx := context.Background()
		w := writer(s, 0)
		for _, create := range []bool{true, false} {
			if _, err := w.Write(ctx, "usr_a", "t", true, setPort(1)); err != nil {
				t.Fatal(err)
			}
			calls := 0
			got, err := w.Write(ctx, "usr_a", "t", create, func(x *sshdeck.Tunnel) error {
				if calls++; calls == 1 {
					if err := s.DeleteTunnel(ctx, "usr_a", "t", 0); err != nil {
						t.Fatal(err)
					}
				}
				x.Spec.EndpointPort = 2
				return nil
			})
			switch {
			case create && (err != nil || got.Generation != 1 || calls != 2):
				t.Errorf("create after a delete = %+v, %v after %d changes; want generation 1 after 2", got, err, calls)
			case !create && sshdeck.ErrorCode(err) != sshdeck.NotFound:
				t.Errorf("change after a delete = %+v, %v; want NotFound", got, err)
			}
			if !create {
				if _, err := s.Tunnel(ctx, "usr_a", "t"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
					t.Errorf("a change of a deleted tunnel wrote it back: %v", err)
				}
			}
			s.DeleteTunnel(ctx, "usr_a", "t", 0)
		}
	})
}
