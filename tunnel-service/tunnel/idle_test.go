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

// idleGoroutines is what an idle connected tunnel may run: x/crypto's
// three per SSH connection (readLoop, kexLoop, mux loop) for its two
// connections, and the tunnel's own loop (runner.serve), which serves
// both connections' channel opens and requests and the keepalives.
// Every goroutine holds a stack of 2 to 8 KiB: see
// bench/tunnelbench/memory.go for what an idle tunnel costs.
const idleGoroutines = 7

// TestIdleGoroutines connects a few tunnels, carries a connection through
// each, and checks that once idle they hold no more goroutines than
// idleGoroutines each.
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
	limit := before + tunnels*idleGoroutines
	if got := settledGoroutines(t, limit); got > limit {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d idle tunnels run %d goroutines, want at most %d each (%d in all over %d before)\n%s",
			tunnels, got-before, idleGoroutines, limit, before, buf[:runtime.Stack(buf, true)])
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
