package tunnel

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// runner runs one tunnel on this replica: it connects, serves, and on a
// failure retries as the tunnel's spec says, reporting every change of
// state. Its state machine:
//
//	connecting → connected → (failure) → waiting → retrying → connected …
//	any failure without retry, or with no retries left → failed
//
// Retries count consecutive failures: a connection that stayed up for
// stableAfter resets the count.
type runner struct {
	owner, name string
	spec        sshdeck.TunnelSpec
	creds       sshdeck.TunnelCredentials
	dialer      *dialer
	keepalive   time.Duration
	misses      int
	stableAfter time.Duration
	now         func() time.Time
	log         *slog.Logger
	// report records a state on the way; the final one is run's result.
	report func(sshdeck.TunnelStatus)
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

// The statuses run reports are made in functions of their own, not in
// run, whose frame stays on an idle tunnel's stack (see attempt).

func (r *runner) reportAttempt(retries int, last *failure) {
	if retries > 0 {
		r.report(r.failed(sshdeck.TunnelRetrying, retries, last))
		return
	}
	r.report(sshdeck.TunnelStatus{State: sshdeck.TunnelConnecting, RetryCount: retries, Reason: "connecting"})
}

func (r *runner) reportWaiting(retries int, f *failure) {
	st := r.failed(sshdeck.TunnelWaiting, retries, f)
	st.NextRetryAt = r.now().Add(r.spec.RetryInterval)
	r.report(st)
}

// giveUp logs the failure and returns the tunnel's final status when it
// is not to be retried, or nil.
func (r *runner) giveUp(f *failure, retries int) *sshdeck.TunnelStatus {
	r.log.Info("tunnel failed", "owner", r.owner, "tunnel", r.name, "error_type", f.kind, "reason", f.msg, "retry", f.retry)
	if !f.retry {
		st := r.failed(sshdeck.TunnelFailed, retries, f)
		return &st
	}
	if retries >= r.spec.MaxRetries {
		st := r.failed(sshdeck.TunnelFailed, retries, f)
		st.RetryExhausted = true
		st.Reason = fmt.Sprintf("%s; no retries left (maxRetries %d)", f.msg, r.spec.MaxRetries)
		return &st
	}
	return nil
}

func (r *runner) failed(state sshdeck.TunnelState, retries int, f *failure) sshdeck.TunnelStatus {
	return sshdeck.TunnelStatus{State: state, RetryCount: retries, Reason: f.msg, Error: f.kind}
}

// attempt connects and serves until the tunnel breaks or ctx ends, then
// tears everything down (the endpoint's listener first) so that a redial
// starts clean. It returns why it ended and how long it was connected.
//
// Its frame, like run's, stays on the stack of an idle tunnel's goroutine
// while serve runs, and the GC shrinks a stack only when less than a
// quarter of it is in use: so the statuses are made in functions of their
// own, and what attempt sets up it stops without defer (whose closures
// would take room in the frame; a panic ends the process anyway).
func (r *runner) attempt(ctx context.Context, retries int) (*failure, time.Duration) {
	fw, f := r.connect(ctx)
	if f != nil {
		return f, 0
	}
	r.reportConnected(retries)
	since := r.now()
	ka := startKeepalives(fw.link, r.keepalive, r.misses)
	stable := time.NewTimer(r.stableAfter)
	f = r.serve(ctx, fw, ka, stable.C, retries)
	stable.Stop()
	ka.stop()
	fw.close()
	return f, r.now().Sub(since)
}

// connect dials both hops and sets up the forward.
func (r *runner) connect(ctx context.Context) (*forward, *failure) {
	src := hop{TunnelHop: r.spec.Source, creds: r.creds.Source, role: "source"}
	dst := hop{TunnelHop: r.spec.Endpoint, creds: r.creds.Endpoint, role: "endpoint"}
	l, err := r.dialer.dial(ctx, r.owner, src, dst)
	if err != nil {
		return nil, asFailure(err, "tunnel")
	}
	fw, err := listen(l, r.spec.EndpointPort, r.spec.SourcePort, r.log)
	if err != nil {
		l.Close()
		return nil, asFailure(err, "tunnel")
	}
	return fw, nil
}

func (r *runner) reportConnected(retries int) {
	r.report(sshdeck.TunnelStatus{
		State:      sshdeck.TunnelConnected,
		RetryCount: retries,
		Reason:     fmt.Sprintf("endpoint 127.0.0.1:%d is carried to source 127.0.0.1:%d", r.spec.EndpointPort, r.spec.SourcePort),
	})
}

// serve is the tunnel's one goroutine while it is up: besides keepalives
// and stable (which fires once the tunnel has been up for stableAfter),
// it serves what the two connections' peers send (sshConn), which x/crypto
// hands over on channels that close when the connection ends.
func (r *runner) serve(ctx context.Context, fw *forward, ka *keepalives, stable <-chan time.Time, retries int) *failure {
	l := fw.link
	for {
		select {
		case <-ctx.Done():
			return nil
		case nc, ok := <-l.endpoint.chans:
			if !ok {
				return l.endpoint.ended()
			}
			fw.accept(nc)
		case req, ok := <-l.endpoint.reqs:
			if !ok {
				return l.endpoint.ended()
			}
			refuseRequest(req)
		case req, ok := <-l.hop:
			if !ok {
				return l.endpoint.ended()
			}
			refuseRequest(req)
		case nc, ok := <-l.source.chans:
			if !ok {
				return l.source.ended()
			}
			refuseChannel(nc)
		case req, ok := <-l.source.reqs:
			if !ok {
				return l.source.ended()
			}
			refuseRequest(req)
		case a := <-ka.answers:
			if err := a.k.answered(a.err); err != nil {
				return asFailure(err, "tunnel")
			}
		case <-ka.ticker.C:
			if err := ka.tick(); err != nil {
				return asFailure(err, "tunnel")
			}
		case <-stable:
			if retries > 0 {
				r.reportConnected(0)
			}
		}
	}
}
