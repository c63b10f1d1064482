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

// keepalives are the keepers of a tunnel's connections, on one ticker:
// the source's and the endpoint's here, a source's jump hosts' in its
// chain (chained.keepers). They have no goroutine of their own: the
// tunnel's loop (runner.serve) calls tick on every interval and answered
// with each answer, so an idle tunnel holds one goroutine for everything
// rather than one per keeper (plus one per request in flight).
type keepalives struct {
	keepers [2]keeper
	ticker  *time.Ticker
	answers chan keepaliveAnswer
}

func startKeepalives(l *link, every time.Duration, misses int) *keepalives {
	n := 2
	if ch := l.chain(); ch != nil {
		ch.keepers = make([]keeper, len(ch.jumps))
		for i := range ch.jumps {
			ch.keepers[i] = keeper{c: ch.jumps[i].c, misses: misses, every: every}
		}
		n += len(ch.keepers)
	}
	return &keepalives{
		keepers: [2]keeper{
			{c: l.source, misses: misses, every: every},
			{c: l.endpoint, misses: misses, every: every},
		},
		ticker:  time.NewTicker(every),
		answers: make(chan keepaliveAnswer, n),
	}
}

func (ks *keepalives) stop() { ks.ticker.Stop() }

// tick ticks every keeper, from the outermost connection inwards: a
// source's jump hosts first hop first, the source, the endpoint. Each
// connection rides in the one before it, so when one is found dead, the
// outermost one whose request is also unanswered after a whole interval
// is the one that hung, and is reported rather than it.
func (ks *keepalives) tick() error {
	var outer *keeper // the outermost keeper with a request missed so far
	tick := func(k *keeper) error {
		dead := k.tick(ks.answers)
		if outer == nil && k.missed > 0 {
			outer = k
		}
		if dead {
			return outer.dead()
		}
		return nil
	}
	if ch, ok := ks.keepers[0].c.Conn.(*chained); ok {
		for i := range ch.keepers {
			if err := tick(&ch.keepers[i]); err != nil {
				return err
			}
		}
	}
	for i := range ks.keepers {
		if err := tick(&ks.keepers[i]); err != nil {
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
// unanswered; it reports whether the peer is dead: misses in a row. answers
// must have room for one answer per keeper: the request's goroutine never
// blocks, even after the loop has gone.
func (k *keeper) tick(answers chan<- keepaliveAnswer) (dead bool) {
	if k.pending {
		k.missed++
		return k.missed >= k.misses
	}
	k.pending = true
	go func() {
		_, _, err := k.c.SendRequest("keepalive@openssh.com", true, nil)
		answers <- keepaliveAnswer{k, err}
	}()
	return false
}

// dead closes the connection of a peer found dead, so that everything
// riding on it ends too, and returns the failure.
func (k *keeper) dead() error {
	k.c.Close()
	return fail(sshdeck.TunnelErrTimeout, true, nil, "%s: %d keepalives unanswered in %s", k.c.what, k.missed, time.Duration(k.missed)*k.every)
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
