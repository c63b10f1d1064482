package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func acquire(t *testing.T, s sshdeck.Store, owner, name, holder string, now, until time.Time) *sshdeck.Tunnel {
	t.Helper()
	x, err := s.AcquireTunnelLease(t.Context(), owner, name, holder, now, until)
	must(t, err, fmt.Sprintf("AcquireTunnelLease(%s, %q, %s)", owner, name, holder))
	return x
}

func connected(minute int) *sshdeck.TunnelStatus {
	return &sshdeck.TunnelStatus{
		State: sshdeck.TunnelConnected, Reason: fmt.Sprintf("connected at minute %d", minute),
		UpdatedAt: base.Add(time.Duration(minute) * time.Minute),
		// What a heartbeat writes of a busy tunnel: its counts grow.
		ConnectedAt: base, BytesIn: int64(minute) << 20, BytesOut: int64(minute) << 10,
		ActiveConnections: minute,
	}
}

// withLease returns a copy of x with the lease (holder, until).
func withLease(x *sshdeck.Tunnel, holder string, until time.Time) *sshdeck.Tunnel {
	c := *x
	c.Lease = sshdeck.TunnelLease{Holder: holder, Until: until}
	return &c
}

// testTunnelPutKeepsLease: PutTunnel writes no lease, whatever it is given:
// not on a create, and not over the lease of the replica running it.
func testTunnelPutKeepsLease(t *testing.T, s sshdeck.Store) {
	x := fullTunnel("usr_a", "db", 1)
	x.Lease = sshdeck.TunnelLease{Holder: "intruder", Until: base.Add(time.Hour)}
	putTunnel(t, s, x)
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), withLease(x, "", time.Time{}), "Tunnel created with a lease")
	// So the lease is free.
	acquire(t, s, "usr_a", "db", "replica-1", base, base.Add(time.Minute))

	n := nextTunnel(x)
	n.Lease = sshdeck.TunnelLease{Holder: "intruder", Until: base.Add(time.Hour)}
	putTunnel(t, s, n)
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), withLease(n, "replica-1", base.Add(time.Minute)), "Tunnel put over a lease with another lease")
	n2 := nextTunnel(n)
	putTunnel(t, s, n2)
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), withLease(n2, "replica-1", base.Add(time.Minute)), "Tunnel put over a lease with none")
}

// testTunnelStatusGuard: only the lease holder writes the status, and only
// of the generation it runs.
func testTunnelStatusGuard(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	x := fullTunnel("usr_a", "db", 1)
	putTunnel(t, s, x)
	wantCode(t, s.SetTunnelStatus(ctx, "usr_a", "db", 1, "replica-1", connected(1)), sshdeck.Conflict, "SetTunnelStatus of a free lease")
	wantCode(t, s.SetTunnelStatus(ctx, "usr_a", "db", 1, "", connected(1)), sshdeck.Conflict, "SetTunnelStatus by no holder of a free lease")

	until := base.Add(time.Minute)
	acquire(t, s, "usr_a", "db", "replica-1", base, until)
	want := withLease(x, "replica-1", until)
	for what, err := range map[string]error{
		"by another holder":                s.SetTunnelStatus(ctx, "usr_a", "db", 1, "replica-2", connected(2)),
		"by no holder":                     s.SetTunnelStatus(ctx, "usr_a", "db", 1, "", connected(2)),
		"at an older generation":           s.SetTunnelStatus(ctx, "usr_a", "db", 0, "replica-1", connected(2)),
		"at a newer generation":            s.SetTunnelStatus(ctx, "usr_a", "db", 2, "replica-1", connected(2)),
		"at another generation and holder": s.SetTunnelStatus(ctx, "usr_a", "db", 2, "replica-2", connected(2)),
	} {
		wantCode(t, err, sshdeck.Conflict, "SetTunnelStatus "+what)
	}
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), want, "Tunnel after the refused status writes")

	must(t, s.SetTunnelStatus(ctx, "usr_a", "db", 1, "replica-1", connected(3)), "SetTunnelStatus by the holder")
	want.Status = *connected(3)
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), want, "Tunnel after the holder's status")

	// The store does not know the time: an expired lease still lets its
	// holder report, until another replica takes it over.
	must(t, s.SetTunnelStatus(ctx, "usr_a", "db", 1, "replica-1", connected(4)), "SetTunnelStatus by the holder of an expired lease")
	want.Status = *connected(4)
	acquire(t, s, "usr_a", "db", "replica-2", until, until.Add(time.Minute))
	wantCode(t, s.SetTunnelStatus(ctx, "usr_a", "db", 1, "replica-1", connected(5)), sshdeck.Conflict, "SetTunnelStatus by the holder that lost the lease")
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), withLease(want, "replica-2", until.Add(time.Minute)), "Tunnel after the take-over")

	// A new generation (the tunnel was reconnected) refuses the status of
	// the old one, even from the holder.
	n := nextTunnel(x)
	putTunnel(t, s, n)
	wantCode(t, s.SetTunnelStatus(ctx, "usr_a", "db", 1, "replica-2", connected(6)), sshdeck.Conflict, "SetTunnelStatus at the generation before")
	must(t, s.SetTunnelStatus(ctx, "usr_a", "db", 2, "replica-2", connected(7)), "SetTunnelStatus at the new generation")
	want = withLease(n, "replica-2", until.Add(time.Minute))
	want.Status = *connected(7)
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), want, "Tunnel after the new generation's status")

	// Every field of a status is written, and what it leaves out is cleared.
	full := fullTunnel("usr_a", "other", 5).Status
	must(t, s.SetTunnelStatus(ctx, "usr_a", "db", 2, "replica-2", &full), "SetTunnelStatus of a full status")
	want.Status = full
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), want, "Tunnel after a full status")
	must(t, s.SetTunnelStatus(ctx, "usr_a", "db", 2, "replica-2", &sshdeck.TunnelStatus{}), "SetTunnelStatus of an empty status")
	want.Status = sshdeck.TunnelStatus{}
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), want, "Tunnel after an empty status")
}

// testTunnelLeaseAcquire: a lease is taken when free, renewed by its holder,
// refused to others while in force and taken over from its expiry on.
func testTunnelLeaseAcquire(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	x := fullTunnel("usr_a", "db", 1)
	putTunnel(t, s, x)
	// No holder is a programming error: "" would hold the lease unseen.
	if _, err := s.AcquireTunnelLease(ctx, "usr_a", "db", "", base, base.Add(time.Minute)); err == nil {
		t.Error("AcquireTunnelLease by no holder: no error")
	}
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), x, "Tunnel after acquiring with no holder")
	until := base.Add(30 * time.Second)
	got := acquire(t, s, "usr_a", "db", "replica-1", base, until)
	sameTunnel(t, got, withLease(x, "replica-1", until), "AcquireTunnelLease of a free lease")
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), withLease(x, "replica-1", until), "Tunnel after acquiring")

	// Renewing moves Until, also backwards, and also once expired.
	for _, u := range []time.Time{until.Add(time.Minute), until.Add(10 * time.Second)} {
		got = acquire(t, s, "usr_a", "db", "replica-1", base.Add(5*time.Second), u)
		sameTunnel(t, got, withLease(x, "replica-1", u), "AcquireTunnelLease renewing")
		until = u
	}
	got = acquire(t, s, "usr_a", "db", "replica-1", until.Add(time.Hour), until.Add(time.Hour+time.Minute))
	until = until.Add(time.Hour + time.Minute)
	sameTunnel(t, got, withLease(x, "replica-1", until), "AcquireTunnelLease renewing an expired lease")

	// Another holder, while the lease is in force, to its last nanosecond.
	for _, now := range []time.Time{base, until.Add(-time.Millisecond), until.Add(-time.Nanosecond)} {
		_, err := s.AcquireTunnelLease(ctx, "usr_a", "db", "replica-2", now, now.Add(time.Hour))
		wantCode(t, err, sshdeck.Conflict, fmt.Sprintf("AcquireTunnelLease by another holder %v before expiry", until.Sub(now)))
	}
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), withLease(x, "replica-1", until), "Tunnel after the refused acquires")

	// The lease is the tunnel's, as stored: its generation and status come
	// along, whoever holds it.
	n := nextTunnel(x)
	putTunnel(t, s, n)
	must(t, s.SetTunnelStatus(ctx, "usr_a", "db", 2, "replica-1", connected(1)), "SetTunnelStatus")
	want := withLease(n, "replica-2", until.Add(time.Minute))
	want.Status = *connected(1)
	got = acquire(t, s, "usr_a", "db", "replica-2", until, until.Add(time.Minute)) // at expiry
	sameTunnel(t, got, want, "AcquireTunnelLease at the expiry of another's lease")
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), want, "Tunnel after the take-over")
	_, err := s.AcquireTunnelLease(ctx, "usr_a", "db", "replica-1", until, until.Add(time.Hour))
	wantCode(t, err, sshdeck.Conflict, "AcquireTunnelLease by the holder that lost the lease")

	later := until.Add(time.Minute + time.Second)
	got = acquire(t, s, "usr_a", "db", "replica-3", later, later.Add(time.Minute)) // after expiry
	sameTunnel(t, got, withLease(want, "replica-3", later.Add(time.Minute)), "AcquireTunnelLease after the expiry of another's lease")
}

// testTunnelLeaseRelease: only the holder frees a lease, at once.
func testTunnelLeaseRelease(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	x := fullTunnel("usr_a", "db", 1)
	putTunnel(t, s, x)
	until := base.Add(time.Minute)
	acquire(t, s, "usr_a", "db", "replica-1", base, until)
	for _, holder := range []string{"replica-2", "", "replica-10", "Replica-1"} {
		must(t, s.ReleaseTunnelLease(ctx, "usr_a", "db", holder), fmt.Sprintf("ReleaseTunnelLease by %q", holder))
	}
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), withLease(x, "replica-1", until), "Tunnel after releases by others")
	_, err := s.AcquireTunnelLease(ctx, "usr_a", "db", "replica-2", base, until)
	wantCode(t, err, sshdeck.Conflict, "AcquireTunnelLease after releases by others")

	must(t, s.ReleaseTunnelLease(ctx, "usr_a", "db", "replica-1"), "ReleaseTunnelLease by the holder")
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), x, "Tunnel after the holder's release")
	wantCode(t, s.SetTunnelStatus(ctx, "usr_a", "db", 1, "replica-1", connected(1)), sshdeck.Conflict, "SetTunnelStatus by the holder that released")
	wantCode(t, s.SetTunnelStatus(ctx, "usr_a", "db", 1, "", connected(1)), sshdeck.Conflict, "SetTunnelStatus by no holder after the release")
	must(t, s.ReleaseTunnelLease(ctx, "usr_a", "db", "replica-1"), "ReleaseTunnelLease of a free lease")
	must(t, s.ReleaseTunnelLease(ctx, "usr_a", "db", ""), "ReleaseTunnelLease by no holder of a free lease")
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), x, "Tunnel after releasing a free lease")

	// Free at once, long before the old Until.
	got := acquire(t, s, "usr_a", "db", "replica-2", base, base.Add(time.Hour))
	sameTunnel(t, got, withLease(x, "replica-2", base.Add(time.Hour)), "AcquireTunnelLease after the release")
	must(t, s.ReleaseTunnelLease(ctx, "usr_a", "db", "replica-1"), "ReleaseTunnelLease by the former holder")
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), got, "Tunnel after the former holder's release")
}

// testTunnelLeaseConcurrent: replicas that find the same free lease at once
// get it one only.
func testTunnelLeaseConcurrent(t *testing.T, s sshdeck.Store) {
	const replicas = 8
	putTunnel(t, s, fullTunnel("usr_a", "db", 1))
	start := make(chan struct{})
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			<-start
			_, errs[i] = s.AcquireTunnelLease(t.Context(), "usr_a", "db", fmt.Sprintf("replica-%d", i), base, base.Add(time.Minute))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch sshdeck.ErrorCode(err) {
		case "":
			if winner >= 0 {
				t.Errorf("replica-%d and replica-%d both acquired the lease", winner, i)
			}
			winner = i
		case sshdeck.Conflict:
		default:
			t.Errorf("replica-%d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no replica acquired the lease")
	}
	if got := getTunnel(t, s, "usr_a", "db").Lease.Holder; got != fmt.Sprintf("replica-%d", winner) {
		t.Fatalf("lease holder: got %q, want replica-%d, the one that acquired it", got, winner)
	}
}
