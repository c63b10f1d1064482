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
// stableAfter resets the count. The loop that runs it (run, attempt,
// serve) is in loop.go; what it reports and decides is made here.
type runner struct {
	owner, name string
	// spec is the spec of the record the run holds (run.tunnel), which
	// nothing changes: a new generation is a new run.
	spec        *sshdeck.TunnelSpec
	creds       sshdeck.TunnelCredentials
	pool        *pool
	stableAfter time.Duration
	now         func() time.Time
	log         *slog.Logger
	// report records a state on the way; the final one is run's result.
	report func(sshdeck.TunnelStatus)
	// hops returns what an attempt dials: spec and creds, or, for a spec
	// that references stored hosts, the hops read from the store
	// (Manager.hops, refs.go).
	hops func(context.Context) (*sshdeck.TunnelSpec, sshdeck.TunnelCredentials, *failure)
	// forget is set when the run gave up because its host tunnel's host
	// or item is gone (refs.go); only the run's goroutine touches it.
	forget bool
	// meter counts what the run carries, its connections and failures.
	meter meter
}

// The statuses and failures the loop reports are made here, not in the
// loop's functions (loop.go), whose frames stay on an idle tunnel's stack.

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

// giveUp logs and counts the failure and returns the tunnel's final
// status when it is not to be retried, or nil.
func (r *runner) giveUp(f *failure, retries int) *sshdeck.TunnelStatus {
	r.log.Info("tunnel failed", "owner", r.owner, "tunnel", r.name, "error_type", f.kind, "reason", f.msg, "retry", f.retry)
	r.meter.failed(f.msg)
	if !f.retry {
		r.forget = f.forget
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

// connect reads the hops when the spec references stored hosts, then
// acquires the connections of every hop (the jump hosts, the source, the
// endpoint) from the pool, which dials those it does not have, and sets
// up the forward on the endpoint's; a direct tunnel's instead starts its
// client on the source's (direct.go).
func (r *runner) connect(ctx context.Context) (link, *failure) {
	spec, creds, f := r.hops(ctx)
	if f != nil {
		return nil, f
	}
	if r.spec.Direct() {
		return r.connectDirect(ctx, spec, &creds)
	}
	n, err := r.pool.acquire(ctx, r.owner, newPath(spec, &creds))
	if err != nil {
		return nil, asFailure(err, "tunnel")
	}
	fw, err := listen(n, r.spec.EndpointPort, r.spec.SourcePort, &r.meter, r.log)
	if err != nil {
		r.pool.release(n)
		return nil, asFailure(err, "tunnel")
	}
	return fw, nil
}

// disconnect stops the link and lets go of the connections, which close
// if no other tunnel rides them.
func (r *runner) disconnect(l link) {
	l.stop(r.pool)
}

// reportUp counts a connection that came up, then reports it.
func (r *runner) reportUp(retries int) {
	r.meter.connected(r.now())
	r.reportConnected(retries)
}

func (r *runner) reportConnected(retries int) {
	r.report(sshdeck.TunnelStatus{
		State:      sshdeck.TunnelConnected,
		RetryCount: retries,
		Reason:     fmt.Sprintf("endpoint 127.0.0.1:%d is carried to source 127.0.0.1:%d", r.spec.EndpointPort, r.spec.SourcePort),
	})
}
