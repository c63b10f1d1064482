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

// run returns the tunnel's final status (failed), or nothing when ctx
// ended first: whoever stopped it records why.
func (r *runner) run(ctx context.Context) (sshdeck.TunnelStatus, bool) {
	retries := 0
	var last *failure
	for {
		st := sshdeck.TunnelStatus{State: sshdeck.TunnelConnecting, RetryCount: retries, Reason: "connecting"}
		if retries > 0 {
			st = r.failed(sshdeck.TunnelRetrying, retries, last)
		}
		r.report(st)
		f, up := r.attempt(ctx, retries)
		if ctx.Err() != nil {
			return sshdeck.TunnelStatus{}, false
		}
		last = f
		if up >= r.stableAfter {
			retries = 0
		}
		r.log.Info("tunnel failed", "owner", r.owner, "tunnel", r.name, "error_type", f.kind, "reason", f.msg, "retry", f.retry)
		if !f.retry {
			return r.failed(sshdeck.TunnelFailed, retries, f), true
		}
		if retries >= r.spec.MaxRetries {
			st := r.failed(sshdeck.TunnelFailed, retries, f)
			st.RetryExhausted = true
			st.Reason = fmt.Sprintf("%s; no retries left (maxRetries %d)", f.msg, r.spec.MaxRetries)
			return st, true
		}
		retries++
		st = r.failed(sshdeck.TunnelWaiting, retries, f)
		st.NextRetryAt = r.now().Add(r.spec.RetryInterval)
		r.report(st)
		select {
		case <-ctx.Done():
			return sshdeck.TunnelStatus{}, false
		case <-time.After(r.spec.RetryInterval):
		}
	}
}

func (r *runner) failed(state sshdeck.TunnelState, retries int, f *failure) sshdeck.TunnelStatus {
	return sshdeck.TunnelStatus{State: state, RetryCount: retries, Reason: f.msg, Error: f.kind}
}

// attempt connects and serves until the tunnel breaks or ctx ends, then
// tears everything down (the endpoint's listener first) so that a redial
// starts clean. It returns why it ended and how long it was connected.
func (r *runner) attempt(ctx context.Context, retries int) (*failure, time.Duration) {
	src := hop{TunnelHop: r.spec.Source, creds: r.creds.Source, role: "source"}
	dst := hop{TunnelHop: r.spec.Endpoint, creds: r.creds.Endpoint, role: "endpoint"}
	l, err := r.dialer.dial(ctx, r.owner, src, dst)
	if err != nil {
		return asFailure(err, "tunnel"), 0
	}
	fw, err := listen(l, r.spec.EndpointPort, r.spec.SourcePort, r.log)
	if err != nil {
		l.Close()
		return asFailure(err, "tunnel"), 0
	}
	defer fw.close()
	connected := sshdeck.TunnelStatus{
		State:  sshdeck.TunnelConnected,
		Reason: fmt.Sprintf("endpoint 127.0.0.1:%d is carried to source 127.0.0.1:%d", r.spec.EndpointPort, r.spec.SourcePort),
	}
	connected.RetryCount = retries
	r.report(connected)
	since := r.now()

	ended := make(chan error, 1)
	go func() { ended <- fw.serve() }()
	keepers := []*keeper{
		{c: l.source, what: "source " + src.addr(), misses: r.misses, every: r.keepalive},
		{c: l.endpoint, what: "endpoint " + dst.addr(), misses: r.misses, every: r.keepalive},
	}
	answers := make(chan keepaliveAnswer, len(keepers))
	ticker := time.NewTicker(r.keepalive)
	defer ticker.Stop()
	stable := time.NewTimer(r.stableAfter)
	defer stable.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, r.now().Sub(since)
		case err := <-ended:
			return asFailure(err, "tunnel"), r.now().Sub(since)
		case a := <-answers:
			if err := a.k.answered(a.err); err != nil {
				return asFailure(err, "tunnel"), r.now().Sub(since)
			}
		case <-ticker.C:
			for _, k := range keepers {
				if err := k.tick(answers); err != nil {
					return asFailure(err, "tunnel"), r.now().Sub(since)
				}
			}
		case <-stable.C:
			if connected.RetryCount > 0 {
				connected.RetryCount = 0
				r.report(connected)
			}
		}
	}
}
