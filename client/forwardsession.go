package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/shared/forwarding"
)

// forwardSessions is a forward's current session, shared by its
// connections. One goroutine (keep) replaces it when it ends, so that
// however many connections notice the loss there is one redial.
type forwardSessions struct {
	mu sync.Mutex
	// current is the live session; nil while the forward redials.
	current *forwarding.Session
	// changed is closed, and replaced, at every change, to wake the
	// connections waiting for a session.
	changed chan struct{}
	// ended is the forward's end: no session will come any more.
	ended error
}

func newForwardSessions(s *forwarding.Session) *forwardSessions {
	return &forwardSessions{current: s, changed: make(chan struct{})}
}

func (f *forwardSessions) set(s *forwarding.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.current = s
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *forwardSessions) end(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.current, f.ended = nil, err
	close(f.changed)
	f.changed = make(chan struct{})
}

// get returns the live session, waiting for one while the forward
// redials, until giveUp fires or ctx is done.
func (f *forwardSessions) get(ctx context.Context, giveUp <-chan time.Time, waited time.Duration) (*forwarding.Session, error) {
	for {
		f.mu.Lock()
		s, changed, ended := f.current, f.changed, f.ended
		f.mu.Unlock()
		if ended != nil {
			return nil, ended
		}
		if s != nil && !sessionDone(s) {
			return s, nil
		}
		// Either redialing, or the session just ended and keep has yet to
		// notice: both change the state.
		select {
		case <-changed:
		case <-giveUp:
			return nil, fmt.Errorf("no session to the tunnel service within %s (reconnecting)", waited)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func sessionDone(s *forwarding.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// keep watches the session and, when it ends, dials the next with
// backoff, telling the user each wait, until ctx is done (nil) or the
// service answers a redial in a way that no retry mends (that error).
func (r *forwardRun) keep(ctx context.Context, s *forwarding.Session) error {
	var backoff reconnectBackoff
	up := time.Now()
	for {
		select {
		case <-ctx.Done():
			r.sessions.end(ctx.Err())
			s.Close()
			return nil
		case <-s.Done():
		}
		// The connections it carried ended with it; new ones wait.
		r.sessions.set(nil)
		s.Close()
		if time.Since(up) >= reconnectResetAfter {
			backoff.reset()
		}
		var err error
		for failure := error(nil); ; failure = err {
			wait := backoff.wait()
			if failure == nil {
				r.log("connection to the tunnel service lost; reconnecting in %s", wait)
			} else {
				r.log("reconnecting failed (%v); retrying in %s", failure, wait)
			}
			if !sleepCtx(ctx, wait) {
				r.sessions.end(ctx.Err())
				return nil
			}
			s, err = r.dial(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				r.sessions.end(ctx.Err())
				return nil
			}
			if endsForward(err) {
				err = fmt.Errorf("reconnecting to the tunnel service: %w", err)
				r.sessions.end(err)
				return err
			}
			if e := (*Error)(nil); errors.As(err, &e) && e.RetryAfter > 0 {
				backoff.atLeast(e.RetryAfter)
			}
		}
		up = time.Now()
		r.log("reconnected")
		r.sessions.set(s)
	}
}

// sleepCtx waits d, or less if ctx is done first (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
