package tunnel

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// holder returns the replica holding the tunnel's lease.
func (w *world) holder(t *testing.T, name string) string {
	t.Helper()
	tn, err := w.store.Tunnel(context.Background(), owner, name)
	if err != nil {
		t.Fatal(err)
	}
	return tn.Lease.Holder
}

// TestReplicasTakeOver: two replicas share one store; the autoStart
// tunnel runs on the lease holder only, and when that replica dies the
// other takes it over once the lease expires.
func TestReplicasTakeOver(t *testing.T) {
	w := newWorld(t)
	a, b := w.manager("a"), w.manager("b")
	port := sshdtest.FreePort(t)
	req := w.request("auto", port)
	req.AutoStart = true
	connect(t, a, req)
	waitFor(t, b, "auto", "connected (read through b)", state(sshdeck.TunnelConnected))
	k := tunnelKey{owner, "auto"}
	// Several reconcile rounds of b pass while a holds the lease.
	for range 5 {
		time.Sleep(testOptions("").Reconcile)
		if b.running(k) || w.holder(t, "auto") != "a" {
			t.Fatalf("b runs the tunnel (%t) or holds it (%q) while a is alive", b.running(k), w.holder(t, "auto"))
		}
	}

	crashed := time.Now()
	a.crash()
	sshdtest.WaitUntil(t, "b taking the tunnel over", func() bool { return b.running(k) })
	if took := time.Since(crashed); took < testOptions("").LeaseTTL/2 {
		t.Errorf("b took over %s after the crash, before a's lease could expire", took)
	}
	waitFor(t, b, "auto", "connected through b", state(sshdeck.TunnelConnected))
	if h := w.holder(t, "auto"); h != "b" {
		t.Errorf("lease holder %q, want b", h)
	}
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestEachTunnelOnOneReplica: with three replicas running, every autoStart
// tunnel runs on exactly one of them, round after round.
func TestEachTunnelOnOneReplica(t *testing.T) {
	w := newWorld(t)
	replicas := []*Manager{w.manager("a"), w.manager("b"), w.manager("c")}
	const tunnels = 6
	for i := range tunnels {
		req := w.request(fmt.Sprintf("t%d", i), sshdtest.FreePort(t))
		req.AutoStart = true
		connect(t, replicas[i%len(replicas)], req)
	}
	for i := range tunnels {
		waitFor(t, replicas[0], fmt.Sprintf("t%d", i), "connected", state(sshdeck.TunnelConnected))
	}
	for range 10 {
		for i := range tunnels {
			k := tunnelKey{owner, fmt.Sprintf("t%d", i)}
			n := 0
			for _, m := range replicas {
				if m.running(k) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("tunnel %s runs on %d replicas", k.name, n)
			}
		}
		time.Sleep(testOptions("").Heartbeat)
	}
}

// TestAutoStartOnStart: a replica that shuts down hands its autoStart
// tunnels back; the next one to start runs them.
func TestAutoStartOnStart(t *testing.T) {
	w := newWorld(t)
	first := w.manager("first")
	port := sshdtest.FreePort(t)
	req := w.request("boot", port)
	req.AutoStart = true
	connect(t, first, req)
	waitFor(t, first, "boot", "connected", state(sshdeck.TunnelConnected))
	first.Shutdown(context.Background())
	sshdtest.WaitPort(t, port, true)
	st, err := first.Status(context.Background(), owner, "boot")
	if err != nil || st.Status != sshdeck.TunnelWaiting || w.holder(t, "boot") != "" {
		t.Fatalf("after shutdown: %+v, %v, holder %q: want waiting with the lease released", st, err, w.holder(t, "boot"))
	}

	next := w.manager("next")
	waitFor(t, next, "boot", "connected again", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestOtherTunnelsEndWithTheirReplica: a tunnel without autoStart is not
// taken over; the surviving replicas record that it ended.
func TestOtherTunnelsEndWithTheirReplica(t *testing.T) {
	w := newWorld(t)
	a, b := w.manager("a"), w.manager("b")
	connect(t, a, w.request("manual", sshdtest.FreePort(t)))
	waitFor(t, b, "manual", "connected", state(sshdeck.TunnelConnected))
	a.crash()
	st := waitFor(t, b, "manual", "failed", state(sshdeck.TunnelFailed))
	if b.running(tunnelKey{owner, "manual"}) || st.ManualDisconnect {
		t.Errorf("status %+v: b must not run it, nor call it a manual disconnect", st)
	}
}

// TestChangesThroughAnotherReplica: disconnect and connect-again reach the
// replica running the tunnel within its heartbeat.
func TestChangesThroughAnotherReplica(t *testing.T) {
	w := newWorld(t)
	a, b := w.manager("a"), w.manager("b")
	first := sshdtest.FreePort(t)
	connect(t, a, w.request("moved", first))
	waitFor(t, b, "moved", "connected", state(sshdeck.TunnelConnected))
	sshdtest.WaitPort(t, first, false)

	second := sshdtest.FreePort(t)
	connect(t, b, w.request("moved", second))
	// Connected, not merely an open port: sshd listens a moment before
	// the client has registered the forward, and a connection in that
	// moment is refused by the client (as with ssh -R).
	waitFor(t, b, "moved", "connected on the second port", func(st Status) bool {
		return st.Status == sshdeck.TunnelConnected && st.EndpointPort == second
	})
	sshdtest.WaitPort(t, first, true)
	if !a.running(tunnelKey{owner, "moved"}) || b.running(tunnelKey{owner, "moved"}) {
		t.Error("the tunnel should have stayed on a, its lease holder")
	}
	if err := sshdtest.RoundTrip(second, 1<<20); err != nil {
		t.Fatal(err)
	}

	if err := b.Disconnect(context.Background(), owner, "moved", false); err != nil {
		t.Fatal(err)
	}
	sshdtest.WaitPort(t, second, true)
	sshdtest.WaitUntil(t, "a stopping it", func() bool { return !a.running(tunnelKey{owner, "moved"}) })
}
