package tunnel

import (
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Keepalive defaults of the contract: a request every 15 s, and a peer that
// leaves 3 in a row unanswered is dead.
const (
	DefaultKeepaliveInterval = 15 * time.Second
	DefaultKeepaliveMisses   = 3
)

// keeper sends keepalive@openssh.com requests on one SSH connection (any
// answer, even a refusal, proves the peer alive). It has no goroutine of
// its own: the tunnel's attempt loop calls tick on every interval and
// answered with each answer, so an idle tunnel holds one goroutine for its
// two connections' keepalives rather than two (plus one per request in
// flight). A keeper that finds its peer dead closes the connection, so
// that everything riding on it ends too, and returns the failure.
type keeper struct {
	c       *ssh.Client
	what    string
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
			return fail(sshdeck.TunnelErrTimeout, true, nil, "%s: %d keepalives unanswered in %s", k.what, k.misses, time.Duration(k.misses)*k.every)
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
		return asFailure(err, k.what)
	}
	return nil
}
