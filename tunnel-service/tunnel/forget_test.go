package tunnel_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// TestDeleteStopsItOnAnotherReplica: a tunnel connected through replica a
// and deleted through replica b stops on a (at a's next heartbeat, which
// finds no lease to renew) and is gone from the store.
func TestDeleteStopsItOnAnotherReplica(t *testing.T) {
	w := tunneltest.NewWorld(t)
	a, b := w.Manager("a"), w.Manager("b")
	port := sshdtest.FreePort(t)
	connect(t, a, w.Request("web", port))
	waitFor(t, a, "web", "connected", state(sshdeck.TunnelConnected))
	if err := b.Delete(context.Background(), owner, "web"); err != nil {
		t.Fatal(err)
	}
	sshdtest.WaitUntil(t, "a stopping the deleted tunnel", func() bool { return !a.Running(owner, "web") })
	sshdtest.WaitUntil(t, "the endpoint's port to close", func() bool { return sshdtest.RoundTrip(port, 1) != nil })
	if _, err := w.Store.Tunnel(context.Background(), owner, "web"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Fatalf("stored tunnel after the delete: %v", err)
	}
	// Nothing of it comes back: not a's last status, nor a's reconcile.
	time.Sleep(3 * tunneltest.Options("").Reconcile)
	if _, err := w.Store.Tunnel(context.Background(), owner, "web"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Fatalf("stored tunnel a while after the delete: %v", err)
	}
	if err := b.Delete(context.Background(), owner, "web"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Fatalf("deleting it again: %v, want NotFound", err)
	}
}

// clock is a settable clock for a Manager.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestStoppedTunnelsForgotten drives the Manager's clock past 24 h: the
// tunnels that are neither autoStart nor running are forgotten by the
// replica's reconcile loop, the others kept. No test waits 24 h: the
// clock jumps, and the loop's reconciles (every 300 ms) see it.
func TestStoppedTunnelsForgotten(t *testing.T) {
	w := tunneltest.NewWorld(t)
	c := &clock{now: time.Now()}
	opts := tunneltest.Options("a")
	opts.Now = c.Now
	m := tunnel.NewManager(w.Store, w.Sealer, opts)
	m.Start()
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	ctx := context.Background()

	// failed: nothing listens at its source, and it does not retry.
	failed := w.Request("failed", sshdtest.FreePort(t))
	failed.SourceSSHPort, failed.MaxRetries = tunneltest.Ptr(sshdtest.FreePort(t)), tunneltest.Ptr(0)
	connect(t, m, failed)
	waitFor(t, m, "failed", "failed", state(sshdeck.TunnelFailed))
	// disconnected, and an autoStart one disconnected too.
	connect(t, m, w.Request("disconnected", sshdtest.FreePort(t)))
	auto := w.Request("auto", sshdtest.FreePort(t))
	auto.AutoStart = true
	connect(t, m, auto)
	for _, name := range []string{"disconnected", "auto"} {
		waitFor(t, m, name, "connected", state(sshdeck.TunnelConnected))
		if err := m.Disconnect(ctx, owner, name, false); err != nil {
			t.Fatal(err)
		}
	}
	// connected: it runs on, however long.
	port := sshdtest.FreePort(t)
	connect(t, m, w.Request("connected", port))
	waitFor(t, m, "connected", "connected", state(sshdeck.TunnelConnected))

	names := func() map[string]bool {
		ts, err := w.Store.Tunnels(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, x := range ts {
			out[x.Name] = true
		}
		return out
	}
	// 23 h on: all kept, reconcile after reconcile.
	c.advance(23 * time.Hour)
	for range 3 {
		time.Sleep(opts.Reconcile)
	}
	if got := names(); len(got) != 4 {
		t.Fatalf("after 23 h: %v, want all four", got)
	}
	// 25 h: the stopped ones that are not autoStart go; a stopped
	// autoStart one and a connected one stay. The loop's next sweep is an
	// hour (SweepEvery) after the last, which the jump passed too.
	c.advance(2 * time.Hour)
	sshdtest.WaitUntil(t, "the sweep", func() bool { return len(names()) == 2 })
	if got := names(); !got["auto"] || !got["connected"] {
		t.Fatalf("after 25 h: %v, want auto and connected", got)
	}
	if !m.Running(owner, "connected") {
		t.Fatal("the connected tunnel stopped")
	}
	if err := sshdtest.RoundTrip(port, 1<<10); err != nil {
		t.Fatal(err)
	}
	// A tunnel stopped later is kept until its own 24 h are up.
	if err := m.Disconnect(ctx, owner, "connected", false); err != nil {
		t.Fatal(err)
	}
	c.advance(23 * time.Hour)
	for range 3 {
		time.Sleep(opts.Reconcile)
	}
	if !names()["connected"] {
		t.Fatal("a tunnel stopped 23 h ago was forgotten")
	}
	c.advance(2 * time.Hour)
	sshdtest.WaitUntil(t, "the second sweep", func() bool { return !names()["connected"] })
}

// TestStoppedHostTunnelsKept: a host's tunnel that is not autoStart waits,
// stopped, for a connect by name as long as its host lists it: the sweep
// of stopped tunnels keeps it past 24 h. One whose host went without it
// (a crash between the host's delete and its tunnels') is forgotten.
func TestStoppedHostTunnelsKept(t *testing.T) {
	w := tunneltest.NewWorld(t)
	c := &clock{now: time.Now()}
	opts := tunneltest.Options("a")
	opts.Now, opts.Hosts = c.Now, w.Hosts()
	m := tunnel.NewManager(w.Store, w.Sealer, opts)
	m.Start()
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	ctx := context.Background()
	svc := hostsOf(w)
	saveHost(t, svc, owner, rootHost(w, "web", &w.Endpoint.Port))
	kept, gone := rootHost(w, "kept", &w.Source.Port), rootHost(w, "gone", &w.Source.Port)
	kept.TunnelConnections = []hosts.TunnelInput{item(w, sshdtest.FreePort(t), "web", false)}
	gone.TunnelConnections = []hosts.TunnelInput{item(w, sshdtest.FreePort(t), "web", false)}
	keptName := sshdeck.HostTunnelName(saveHost(t, svc, owner, kept), 0)
	goneID := saveHost(t, svc, owner, gone)
	goneName := sshdeck.HostTunnelName(goneID, 0)
	// The host deleted from the store alone, as a crash after the host's
	// delete and before its tunnels' leaves it.
	if err := w.Store.DeleteHost(ctx, owner, goneID, 0); err != nil {
		t.Fatal(err)
	}
	stored := func(name string) bool {
		_, err := w.Store.Tunnel(ctx, owner, name)
		return err == nil
	}
	if !stored(keptName) || !stored(goneName) {
		t.Fatal("the host tunnels were not written")
	}
	c.advance(25 * time.Hour)
	sshdtest.WaitUntil(t, "the sweep to forget "+goneName, func() bool { return !stored(goneName) })
	if !stored(keptName) {
		t.Fatalf("%s, its host's item, was forgotten by the sweep", keptName)
	}
	// And it still starts by name.
	if err := m.Connect(ctx, owner, &tunnel.ConnectRequest{Name: keptName}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, keptName, "connected", state(sshdeck.TunnelConnected))
}
