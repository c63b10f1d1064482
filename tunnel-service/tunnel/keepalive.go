package tunnel

import (
	"sync/atomic"
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

// keeper sends keepalive@openssh.com requests on one SSH connection of the
// pool (any answer, even a refusal, proves the peer alive). It has no
// goroutine of its own: the goroutine serving the connection (node.serve)
// ticks it and hands it the answers, so that a connection costs the same
// whatever the number of tunnels on it, and a tunnel has no keepalive of
// its own.
type keeper struct {
	misses  int
	every   time.Duration
	pending bool // a request is in flight
	// missed counts the ticks in a row that found a request still in
	// flight; the goroutines serving the connections inside this one
	// read it (node.outermostMissed).
	missed atomic.Int32
}

// tick sends a request, or counts one more miss when the last is still
// unanswered; it reports whether the peer is dead: misses in a row.
// answers must have room for the answer: the request's goroutine never
// blocks, even after the connection's goroutine has gone.
func (k *keeper) tick(c ssh.Conn, answers chan<- error) (dead bool) {
	if k.pending {
		return int(k.missed.Add(1)) >= k.misses
	}
	k.pending = true
	go func() {
		_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
		answers <- err
	}()
	return false
}

// answered records the answer to the request in flight.
func (k *keeper) answered() {
	k.pending = false
	k.missed.Store(0)
}

// dead is the failure of the connection named what, found dead.
func (k *keeper) dead(what string) *failure {
	missed := time.Duration(k.missed.Load())
	return fail(sshdeck.TunnelErrTimeout, true, nil, "%s: %d keepalives unanswered in %s", what, missed, missed*k.every)
}
