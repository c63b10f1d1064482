package tunnel

import (
	"context"
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

// keepalive sends keepalive@openssh.com requests on c (any answer, even a
// refusal, proves the peer alive) until ctx ends or the peer is dead. It
// returns the failure that says so, having closed c so that everything
// riding on it ends too.
func keepalive(ctx context.Context, c *ssh.Client, interval time.Duration, misses int, what string) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	answers := make(chan error, 1)
	pending, missed := false, 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-answers:
			pending, missed = false, 0
			if err != nil {
				c.Close()
				return asFailure(err, what)
			}
		case <-ticker.C:
			if pending {
				// The last request is still unanswered: one more miss.
				if missed++; missed >= misses {
					c.Close()
					return fail(sshdeck.TunnelErrTimeout, true, nil, "%s: %d keepalives unanswered in %s", what, misses, time.Duration(misses)*interval)
				}
				continue
			}
			pending = true
			go func() {
				_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
				answers <- err
			}()
		}
	}
}
