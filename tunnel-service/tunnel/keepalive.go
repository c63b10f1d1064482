package tunnel

import (
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Keepalive defaults of the contract: a request every 15 s, and a peer that
// leaves 3 in a row unanswered is dead.
const (
	DefaultKeepaliveInterval = 15 * time.Second
	DefaultKeepaliveMisses   = 3
)

// keepalives are the keepers of a tunnel's two connections, on one
// ticker. They have no goroutine of their own: the tunnel's loop
// (runner.serve) calls tick on every interval and answered with each
// answer, so an idle tunnel holds one goroutine for everything rather
// than one per keeper (plus one per request in flight).
type keepalives struct {
	keepers [2]keeper
	ticker  *time.Ticker
	answers chan keepaliveAnswer
}

func startKeepalives(l *link, every time.Duration, misses int) *keepalives {
	return &keepalives{
		keepers: [2]keeper{
			{c: l.source, misses: misses, every: every},
			{c: l.endpoint, misses: misses, every: every},
		},
		ticker:  time.NewTicker(every),
		answers: make(chan keepaliveAnswer, 2),
	}
}

func (ks *keepalives) stop() { ks.ticker.Stop() }

// tick ticks every keeper.
func (ks *keepalives) tick() error {
	for i := range ks.keepers {
		if err := ks.keepers[i].tick(ks.answers); err != nil {
			return err
		}
	}
	return nil
}

// keeper sends keepalive@openssh.com requests on one SSH connection (any
// answer, even a refusal, proves the peer alive). A keeper that finds its peer dead closes the connection, so
// that everything riding on it ends too, and returns the failure.
type keeper struct {
	c       *sshConn
	misses  int
	every   time.Duration
	pending bool // a request is in flight
	missed  int  // ticks in a row that found it still in flight
}

// keepaliveAnswer is a keeper's request's answer.
type keepaliveAnswer struct {
	k   *keeper
	err error
}

// tick sends a request, or counts one more miss when the last is still
// unanswered. answers must have room for one answer per keeper: the
// request's goroutine never blocks, even after the loop has gone.
func (k *keeper) tick(answers chan<- keepaliveAnswer) error {
	if k.pending {
		if k.missed++; k.missed >= k.misses {
			k.c.Close()
			return fail(sshdeck.TunnelErrTimeout, true, nil, "%s: %d keepalives unanswered in %s", k.c.what, k.misses, time.Duration(k.misses)*k.every)
		}
		return nil
	}
	k.pending = true
	go func() {
		_, _, err := k.c.SendRequest("keepalive@openssh.com", true, nil)
		answers <- keepaliveAnswer{k, err}
	}()
	return nil
}

// answered records the answer to the request in flight.
func (k *keeper) answered(err error) error {
	k.pending, k.missed = false, 0
	if err != nil {
		k.c.Close()
		return asFailure(err, k.c.what)
	}
	return nil
}
