package client

import (
	"math/rand/v2"
	"time"
)

// The waits between a forward's attempts to get its session back: from
// half a second, doubling to half a minute, so that a blip is mended at
// once and a long outage costs the service one attempt per half minute
// per user.
const (
	firstReconnectWait = 500 * time.Millisecond
	maxReconnectWait   = 30 * time.Second
	// A session that stayed up this long was not a flapping one: the
	// next loss starts again from the first wait.
	reconnectResetAfter = 30 * time.Second
)

// reconnectBackoff is the exponential wait between redials, with jitter
// (±20 %) so that the clients of many users whose sessions one deploy of
// the service ended do not all come back in the same instant.
type reconnectBackoff struct {
	next time.Duration
}

// wait returns the next wait, rounded to a tenth of a second so that the
// wait the user is told is the wait.
func (b *reconnectBackoff) wait() time.Duration {
	d := max(b.next, firstReconnectWait)
	b.next = min(2*d, maxReconnectWait)
	jittered := time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return max(jittered.Round(100*time.Millisecond), 100*time.Millisecond)
}

// atLeast makes the following waits no shorter than d: a service that
// said Retry-After.
func (b *reconnectBackoff) atLeast(d time.Duration) {
	b.next = max(b.next, min(d, maxReconnectWait))
}

func (b *reconnectBackoff) reset() { b.next = 0 }
