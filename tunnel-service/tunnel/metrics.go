package tunnel

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Where the counts of the runs' meters (meter.go) go: into each tunnel's
// stored status, so that any replica answers with them (report, flush),
// and out of this replica as Metrics, for GET /metrics (tunnelapi) and
// the CloudWatch lines of tunnel-service.

// report records a status that a run reports, carrying its counts: every
// change of state is written at once.
func (m *Manager) report(ctx context.Context, t *sshdeck.Tunnel, mt *meter, st sshdeck.TunnelStatus) {
	mt.write.Lock()
	defer mt.write.Unlock()
	st, c := mt.stamp(st)
	if m.setStatus(ctx, t, st) == nil {
		mt.written = c
	}
}

// flush writes a running tunnel's counts when they changed since its last
// status was written, with that status: the heartbeat calls it, so a
// tunnel's counts are written at most once a heartbeat, and an idle
// tunnel's not at all. A failed write is tried again at the next one.
func (m *Manager) flush(r *run) {
	mt := &r.runner.meter
	mt.write.Lock()
	defer mt.write.Unlock()
	st, c, changed := mt.restamp()
	if !changed {
		return
	}
	err := m.writeStatus(m.loopCtx, r.tunnel, &st)
	switch code := sshdeck.ErrorCode(err); {
	case err == nil:
		mt.written = c
	case code == sshdeck.Conflict || code == sshdeck.NotFound:
		// Not ours any more: the next heartbeat stops the run.
	case m.loopCtx.Err() == nil:
		m.log.Warn("cannot record the tunnel's counts", "owner", r.tunnel.Owner, "tunnel", r.tunnel.Name, "error", err.Error())
	}
}

// latestStatus is t's stored status with the counts of its run here, when
// it runs here at t's generation: fresher than the store's by up to a
// heartbeat.
func (m *Manager) latestStatus(t *sshdeck.Tunnel) sshdeck.TunnelStatus {
	m.mu.Lock()
	r := m.runs[tunnelKey{t.Owner, t.Name}]
	m.mu.Unlock()
	if r == nil || r.tunnel.Generation != t.Generation {
		return t.Status
	}
	return r.runner.meter.counted(t.Status)
}

// totals are what the runs that ended here counted, and how many tunnels
// this replica recorded as failed.
type totals struct {
	bytesIn, bytesOut, reconnects, failed int64
}

// retire moves an ended run's own counts from its meter to the totals,
// once: the run's goroutine is done, so nothing counts on it. The caller
// holds mu.
func (m *Manager) retire(mt *meter) {
	if _, ok := m.meters[mt]; !ok {
		return
	}
	delete(m.meters, mt)
	in, out, reconnects := mt.own()
	m.totals.bytesIn += in
	m.totals.bytesOut += out
	m.totals.reconnects += reconnects
}

// countEnd counts a tunnel's end that this replica recorded.
func (m *Manager) countEnd(state sshdeck.TunnelState) {
	if state != sshdeck.TunnelFailed {
		return
	}
	m.mu.Lock()
	m.totals.failed++
	m.mu.Unlock()
}

// Metrics is what this replica runs, at one moment.
type Metrics struct {
	// Tunnels are the tunnels running here, by owner and name.
	Tunnels []TunnelMetrics
	// The replica's totals since it started, which only grow: the bytes
	// its runs carried each way and their reconnects (not the counts a
	// run took over with its record), and the tunnels it recorded as
	// failed (no retry allowed or left, or their replica gone).
	BytesIn, BytesOut, Reconnects, Failed int64
	// Forwards are the forwarded connections of `sshdeck forward` open
	// here, by owner (via.go).
	Forwards map[string]int
}

// TunnelMetrics is a tunnel running here: its status's counts, as the
// store has them or fresher.
type TunnelMetrics struct {
	Owner, Name string
	Mode        sshdeck.TunnelMode
	// State is the last state the run reported.
	State sshdeck.TunnelState
	// BytesIn, BytesOut and ActiveConnections are a relay tunnel's; a
	// direct tunnel's are 0 (its bytes never pass through the service).
	BytesIn, BytesOut int64
	ActiveConnections int
	Reconnects        int
}

// Metrics returns what this replica runs now.
func (m *Manager) Metrics() Metrics {
	m.mu.Lock()
	out := Metrics{
		BytesIn: m.totals.bytesIn, BytesOut: m.totals.bytesOut,
		Reconnects: m.totals.reconnects, Failed: m.totals.failed,
		Tunnels: make([]TunnelMetrics, 0, len(m.meters)),
	}
	for mt := range m.meters {
		state, c := mt.current()
		in, outBytes, reconnects := mt.own()
		out.BytesIn += in
		out.BytesOut += outBytes
		out.Reconnects += reconnects
		mode := sshdeck.TunnelRelay
		if mt.direct {
			mode = sshdeck.TunnelDirect
		}
		out.Tunnels = append(out.Tunnels, TunnelMetrics{
			Owner: mt.key.owner, Name: mt.key.name, Mode: mode, State: state,
			BytesIn: c.bytesIn, BytesOut: c.bytesOut, ActiveConnections: int(c.active), Reconnects: int(c.reconnects),
		})
	}
	m.mu.Unlock()
	slices.SortFunc(out.Tunnels, func(a, b TunnelMetrics) int {
		return cmp.Or(strings.Compare(a.Owner, b.Owner), strings.Compare(a.Name, b.Name))
	})
	m.forwards.mu.Lock()
	out.Forwards = maps.Clone(m.forwards.open)
	m.forwards.mu.Unlock()
	if out.Forwards == nil {
		out.Forwards = map[string]int{}
	}
	return out
}
