package webhook

import (
	"context"
	"math/rand/v2"
	"time"
)

// Timing is when a Deliverer retries, polls and gives up on an answer at
// shutdown. A zero field takes its default; tests shorten them.
type Timing struct {
	// FirstRetry is the wait after a first failure (1 s); each failure of
	// the same event doubles it, up to MaxRetry (5 min). Every wait is
	// shortened by up to half at random (jitter), so that deliverers that
	// failed together (a receiver that restarted) do not retry together.
	FirstRetry, MaxRetry time.Duration
	// Poll is how often the store is read for new records when nothing
	// signals them (1 s): a read transaction, cheap.
	Poll time.Duration
	// ShutdownGrace is how long an attempt in flight when Run's context
	// ends may still take (5 s): its answer, if it comes, is recorded, so
	// that a clean stop does not send the event again at the next start.
	ShutdownGrace time.Duration
}

func (t Timing) withDefaults() Timing {
	for _, f := range []struct {
		field *time.Duration
		def   time.Duration
	}{{&t.FirstRetry, time.Second}, {&t.MaxRetry, 5 * time.Minute}, {&t.Poll, time.Second}, {&t.ShutdownGrace, 5 * time.Second}} {
		if *f.field <= 0 {
			*f.field = f.def
		}
	}
	return t
}

// retryWait is the wait after the failed attempt (1, 2, …) of an event.
func (t Timing) retryWait(attempt int) time.Duration {
	wait := t.FirstRetry
	for i := 1; i < attempt && wait < t.MaxRetry; i++ {
		wait *= 2
	}
	wait = min(wait, t.MaxRetry)
	return wait - rand.N(wait/2+1)
}

// sleep waits d, or until ctx ends: it reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// withGrace is a context with ctx's values that ends grace after ctx
// does, or when cancel is called.
func withGrace(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	graced, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if !sleep(graced, grace) {
			return // the attempt ended within its grace
		}
		cancel()
	})
	return graced, func() { stop(); cancel() }
}
