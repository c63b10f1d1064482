package tunnel

import (
	"context"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The loop of a tunnel running here: the functions whose frames stay on
// the stack of its goroutine for as long as it is up (runTunnel, run,
// attempt, and serve, parked in its select), and all that runs in that
// goroutine while the tunnel is idle.
//
// They are written for memory, not for reading: the GC halves a
// goroutine's stack only while less than a quarter of it is in use,
// counting the 800 bytes the runtime keeps for nosplit functions, so a
// loop parked with its frames under 1248 bytes keeps a 4 KiB stack, and
// one over it 8 KiB for as long as the tunnel is up. Hence, in these four
// functions only: no defer, and whatever a helper can make (statuses, log
// lines, failures, the dial) is made in runner.go's plain functions, whose
// frames are gone once they return. Written plainly (the statuses and
// giving up inline in run, attempt's teardown deferred), the loop took
// 2392 bytes, against 1064: on the bench's memory per idle tunnel
// (bench/tunnelbench/memory.go, `go run ./bench -only tunnel`), 75
// against 70 KiB of Go heap and stacks per tunnel at 100 and 200 idle
// tunnels.
//
// TestIdleStack holds the budget: it reads each idle loop's stack from a
// heap dump and fails when one is over 4 KiB or uses more than 1248
// bytes, listing the loop's frames.

// runTunnel is the goroutine of a tunnel running here, started with the
// run's cancellable ctx.
func (m *Manager) runTunnel(ctx context.Context, r *run, rn *runner) {
	// Stopped (nil): whoever stopped it recorded why.
	if final := rn.run(ctx); final != nil {
		m.ranOut(r, final)
	}
	close(r.done)
	m.runners.Done()
}

// run returns the tunnel's final status (failed), or nil when ctx ended
// first: whoever stopped it records why.
func (r *runner) run(ctx context.Context) *sshdeck.TunnelStatus {
	retries := 0
	var last *failure
	for {
		r.reportAttempt(retries, last)
		f, up := r.attempt(ctx, retries)
		if ctx.Err() != nil {
			return nil
		}
		last = f
		if up >= r.stableAfter {
			retries = 0
		}
		if final := r.giveUp(f, retries); final != nil {
			return final
		}
		retries++
		r.reportWaiting(retries, f)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(r.spec.RetryInterval):
		}
	}
}

// attempt connects and serves until the tunnel breaks or ctx ends, then
// tears its part down (the endpoint's listener first) so that a redial
// starts clean. It returns why it ended and how long it was connected.
// What it sets up it stops without defer (a panic ends the process
// anyway).
func (r *runner) attempt(ctx context.Context, retries int) (*failure, time.Duration) {
	l, f := r.connect(ctx)
	if f != nil {
		return f, 0
	}
	r.reportUp(retries)
	since := r.now()
	stable := time.NewTimer(r.stableAfter)
	f = r.serve(ctx, l.down(), stable.C, retries)
	if f == nil && ctx.Err() == nil {
		f = l.cause()
	}
	stable.Stop()
	r.disconnect(l)
	return f, r.now().Sub(since)
}

// serve is the tunnel's goroutine while it is up: it waits for the link
// to end (down: for a relay tunnel, the endpoint's connection, which the
// pool's goroutine serving it closes, after serving the connection's
// peers, the forwarded connections and the keepalives, for every tunnel
// on it; for a direct one, its client on the source), for ctx, and
// for stable, which fires once the tunnel has been up for stableAfter.
// It returns nil: attempt asks the link why it ended.
func (r *runner) serve(ctx context.Context, down <-chan struct{}, stable <-chan time.Time, retries int) *failure {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-down:
			return nil
		case <-stable:
			if retries > 0 {
				r.reportConnected(0)
			}
		}
	}
}
