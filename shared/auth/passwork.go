package auth

import (
	"context"
	"runtime"
)

// passwordWork bounds the argon2 computations that run at once in this
// process: each holds its params' memory (19 MiB by default) until it
// ends, and `sshdeck serve` runs under a soft memory limit of 40 MiB, so
// 50 logins at once must not take 950 MiB. Past GOMAXPROCS more of them
// would not end any sooner either: they only share the CPUs. Two at most,
// whatever the cores: 38 MiB, within that limit (logins are rare; a
// Lambda serves one request at a time anyway). The others wait their
// turn, as long as their context lets them.
var passwordWork = newHashLimiter(min(runtime.GOMAXPROCS(0), 2))

// hashLimiter is a counting semaphore: a buffered channel with one slot
// per computation allowed at once.
type hashLimiter struct {
	slots chan struct{}
	// held, when set (by tests), runs inside each slot before the work.
	held func()
}

// newHashLimiter returns a limiter of n slots, at least one.
func newHashLimiter(n int) *hashLimiter {
	return &hashLimiter{slots: make(chan struct{}, max(n, 1))}
}

// run waits for a slot, runs f in it and frees it; it returns ctx.Err(),
// without running f, if ctx ends first. A ctx already done is refused
// even when a slot is free, so a login whose client has gone costs
// nothing.
func (l *hashLimiter) run(ctx context.Context, f func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-l.slots }()
	if l.held != nil {
		l.held()
	}
	f()
	return nil
}
