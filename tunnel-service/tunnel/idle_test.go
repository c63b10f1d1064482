package tunnel_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
)

// What idle connected tunnels may run: per SSH connection, x/crypto's
// three (readLoop, kexLoop, mux loop) and the pool's one serving it
// (node.serve: its peer's requests, the forwarded connections, the
// keepalives); per tunnel, its own loop (runner.serve), which only waits.
// Every goroutine holds a stack of 2 to 8 KiB: see
// bench/tunnelbench/memory.go for what an idle tunnel costs.
const (
	idleGoroutinesPerConn   = 4
	idleGoroutinesPerTunnel = 1
)

// TestIdleGoroutines connects a few tunnels that share their two
// connections, carries a connection through each, and checks that once
// idle they hold no more goroutines than those.
func TestIdleGoroutines(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	before := settledGoroutines(t, -1)

	const tunnels = 4
	ports := make([]int, tunnels)
	for i := range ports {
		ports[i] = sshdtest.FreePort(t)
		connect(t, m, w.Request(fmt.Sprintf("idle-%d", i), ports[i]))
	}
	for i := range ports {
		waitFor(t, m, fmt.Sprintf("idle-%d", i), "connected", state(sshdeck.TunnelConnected))
		if err := sshdtest.RoundTrip(ports[i], 64<<10); err != nil {
			t.Fatal(err)
		}
	}
	limit := before + 2*idleGoroutinesPerConn + tunnels*idleGoroutinesPerTunnel
	if got := settledGoroutines(t, limit); got > limit {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d idle tunnels on 2 connections run %d goroutines, want at most %d per connection and %d per tunnel (%d in all over %d before)\n%s",
			tunnels, got-before, idleGoroutinesPerConn, idleGoroutinesPerTunnel, limit, before, buf[:runtime.Stack(buf, true)])
	}
}

// settledGoroutines counts goroutines until the count is at most want (or,
// with want < 0, stops changing), so that goroutines about to end (a
// carried connection closing, a keepalive request in flight) are not
// counted; it returns the last count after a few seconds at most.
func settledGoroutines(t *testing.T, want int) int {
	t.Helper()
	last := -1
	for deadline := time.Now().Add(5 * time.Second); ; {
		n := runtime.NumGoroutine()
		if (want >= 0 && n <= want) || (want < 0 && n == last) || time.Now().After(deadline) {
			return n
		}
		last = n
		time.Sleep(100 * time.Millisecond)
	}
}
