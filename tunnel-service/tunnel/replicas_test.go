package tunnel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// holder returns the replica holding the tunnel's lease.
func holder(t *testing.T, w *tunneltest.World, name string) string {
	t.Helper()
	tn, err := w.Store.Tunnel(context.Background(), owner, name)
	if err != nil {
		t.Fatal(err)
	}
	return tn.Lease.Holder
}

// TestReplicasTakeOver: two replicas share one store; the autoStart
// tunnel runs on the lease holder only, and when that replica dies the
// other takes it over once the lease expires.
func TestReplicasTakeOver(t *testing.T) {
	w := tunneltest.NewWorld(t)
	a, b := w.Manager("a"), w.Manager("b")
	port := sshdtest.FreePort(t)
	req := w.Request("auto", port)
	req.AutoStart = true
	connect(t, a, req)
	waitFor(t, b, "auto", "connected (read through b)", state(sshdeck.TunnelConnected))
	// Several reconcile rounds of b pass while a holds the lease.
	for range 5 {
		time.Sleep(tunneltest.Options("").Reconcile)
		if b.Running(owner, "auto") || holder(t, w, "auto") != "a" {
			t.Fatalf("b runs the tunnel (%t) or holds it (%q) while a is alive", b.Running(owner, "auto"), holder(t, w, "auto"))
		}
	}

	crashed := time.Now()
	a.Crash()
	sshdtest.WaitUntil(t, "b taking the tunnel over", func() bool { return b.Running(owner, "auto") })
	if took := time.Since(crashed); took < tunneltest.Options("").LeaseTTL/2 {
		t.Errorf("b took over %s after the crash, before a's lease could expire", took)
	}
	waitFor(t, b, "auto", "connected through b", state(sshdeck.TunnelConnected))
	if h := holder(t, w, "auto"); h != "b" {
		t.Errorf("lease holder %q, want b", h)
	}
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestEachTunnelOnOneReplica: with three replicas running, every autoStart
// tunnel runs on exactly one of them, round after round.
func TestEachTunnelOnOneReplica(t *testing.T) {
	w := tunneltest.NewWorld(t)
	replicas := []*tunnel.Manager{w.Manager("a"), w.Manager("b"), w.Manager("c")}
	const tunnels = 6
	for i := range tunnels {
		req := w.Request(fmt.Sprintf("t%d", i), sshdtest.FreePort(t))
		req.AutoStart = true
		connect(t, replicas[i%len(replicas)], req)
	}
	for i := range tunnels {
		waitFor(t, replicas[0], fmt.Sprintf("t%d", i), "connected", state(sshdeck.TunnelConnected))
	}
	for range 10 {
		for i := range tunnels {
			name := fmt.Sprintf("t%d", i)
			n := 0
			for _, m := range replicas {
				if m.Running(owner, name) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("tunnel %s runs on %d replicas", name, n)
			}
		}
		time.Sleep(tunneltest.Options("").Heartbeat)
	}
}

// TestAutoStartOnStart: a replica that shuts down hands its autoStart
// tunnels back; the next one to start runs them.
func TestAutoStartOnStart(t *testing.T) {
	w := tunneltest.NewWorld(t)
	first := w.Manager("first")
	port := sshdtest.FreePort(t)
	req := w.Request("boot", port)
	req.AutoStart = true
	connect(t, first, req)
	waitFor(t, first, "boot", "connected", state(sshdeck.TunnelConnected))
	first.Shutdown(context.Background())
	sshdtest.WaitPort(t, port, true)
	st, err := first.Status(context.Background(), owner, "boot")
	if err != nil || st.Status != sshdeck.TunnelWaiting || holder(t, w, "boot") != "" {
		t.Fatalf("after shutdown: %+v, %v, holder %q: want waiting with the lease released", st, err, holder(t, w, "boot"))
	}

	next := w.Manager("next")
	waitFor(t, next, "boot", "connected again", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestOtherTunnelsEndWithTheirReplica: a tunnel without autoStart is not
// taken over; the surviving replicas record that it ended.
func TestOtherTunnelsEndWithTheirReplica(t *testing.T) {
	w := tunneltest.NewWorld(t)
	a, b := w.Manager("a"), w.Manager("b")
	connect(t, a, w.Request("manual", sshdtest.FreePort(t)))
	waitFor(t, b, "manual", "connected", state(sshdeck.TunnelConnected))
	a.Crash()
	st := waitFor(t, b, "manual", "failed", state(sshdeck.TunnelFailed))
	if b.Running(owner, "manual") || st.ManualDisconnect {
		t.Errorf("status %+v: b must not run it, nor call it a manual disconnect", st)
	}
}

// TestChangesThroughAnotherReplica: disconnect and connect-again reach the
// replica running the tunnel within its heartbeat.
func TestChangesThroughAnotherReplica(t *testing.T) {
	w := tunneltest.NewWorld(t)
	a, b := w.Manager("a"), w.Manager("b")
	first := sshdtest.FreePort(t)
	connect(t, a, w.Request("moved", first))
	waitFor(t, b, "moved", "connected", state(sshdeck.TunnelConnected))
	sshdtest.WaitPort(t, first, false)

	second := sshdtest.FreePort(t)
	connect(t, b, w.Request("moved", second))
	// Connected, not merely an open port: sshd listens a moment before
	// the client has registered the forward, and a connection in that
	// moment is refused by the client (as with ssh -R).
	waitFor(t, b, "moved", "connected on the second port", func(st tunnel.Status) bool {
		return st.Status == sshdeck.TunnelConnected && st.EndpointPort == second
	})
	sshdtest.WaitPort(t, first, true)
	if !a.Running(owner, "moved") || b.Running(owner, "moved") {
		t.Error("the tunnel should have stayed on a, its lease holder")
	}
	if err := sshdtest.RoundTrip(second, 1<<20); err != nil {
		t.Fatal(err)
	}

	if err := b.Disconnect(context.Background(), owner, "moved", false); err != nil {
		t.Fatal(err)
	}
	sshdtest.WaitPort(t, second, true)
	sshdtest.WaitUntil(t, "a stopping it", func() bool { return !a.Running(owner, "moved") })
}
