package tunnel

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// meter counts what one run of a tunnel carries and how it fares: the
// counters of its status (sshdeck.TunnelStatus: ConnectedAt, BytesIn,
// BytesOut, ActiveConnections, Reconnects, LastError), held in memory by
// the replica that runs the tunnel and written into its record with every
// status the run reports (Manager.report), and between them by the
// heartbeat when they changed (Manager.flush): never a store write per
// connection or per byte.
//
// The forwarded connections' copies add to bytesIn, bytesOut and active
// (forward.carry, netpipe.PipeCounted: one atomic add per read, no lock);
// the run's goroutine records each connection and failure. A run that
// resumes its record at the same generation (a takeover, the service's
// next start) starts from the counts the record holds (base): the
// counters are the generation's. The replica's own totals
// (Manager.Metrics) count only what its runs carried (the atomics).
//
// It lives in its runner, for as long as the run: no goroutine, a few
// words per tunnel.
type meter struct {
	key    tunnelKey
	direct bool // a direct tunnel's bytes never pass through the service

	// base are the counts of the record the run started from.
	base counts

	// Added to by the forwarded connections' copies.
	bytesIn, bytesOut, active atomic.Int64
	// reconnects counts the run's own reconnects.
	reconnects atomic.Int64

	mu          sync.Mutex
	connectedAt time.Time // when the latest connection came up; zero before the first
	lastError   string
	state       sshdeck.TunnelState // the last state the run reported

	// write serialises the run's status writes, so that the heartbeat's
	// write of the counts never puts back a state older than the one the
	// run has just written; reported and written are under it.
	write    sync.Mutex
	reported sshdeck.TunnelStatus // the run's last status
	written  counts               // the counts the store holds
}

// counts are the counters as a status carries them.
type counts struct {
	connectedAt                           time.Time
	bytesIn, bytesOut, active, reconnects int64
	lastError                             string
}

// countsOf returns the counts a stored status holds, connections open
// aside: they ended with the run that wrote them.
func countsOf(st *sshdeck.TunnelStatus) counts {
	return counts{
		connectedAt: st.ConnectedAt,
		bytesIn:     st.BytesIn, bytesOut: st.BytesOut,
		reconnects: int64(st.Reconnects),
		lastError:  st.LastError,
	}
}

// onto returns st carrying the counts.
func (c counts) onto(st sshdeck.TunnelStatus) sshdeck.TunnelStatus {
	st.ConnectedAt = c.connectedAt
	st.BytesIn, st.BytesOut = c.bytesIn, c.bytesOut
	st.ActiveConnections = int(c.active)
	st.Reconnects = int(c.reconnects)
	st.LastError = c.lastError
	return st
}

func (c counts) same(o counts) bool {
	return c.connectedAt.Equal(o.connectedAt) && c.bytesIn == o.bytesIn && c.bytesOut == o.bytesOut &&
		c.active == o.active && c.reconnects == o.reconnects && c.lastError == o.lastError
}

// keepCounts returns st carrying the counts of a stored status: what a
// status written for a tunnel that does not run here keeps.
func keepCounts(st sshdeck.TunnelStatus, from *sshdeck.TunnelStatus) sshdeck.TunnelStatus {
	return countsOf(from).onto(st)
}

// start sets the meter up for a run of t: its counts continue those of
// its record, which a new generation's are zero in.
func (mt *meter) start(t *sshdeck.Tunnel) {
	mt.key, mt.direct = tunnelKey{t.Owner, t.Name}, t.Spec.Direct()
	mt.base = countsOf(&t.Status)
	mt.connectedAt, mt.lastError = t.Status.ConnectedAt, t.Status.LastError
	mt.state = sshdeck.TunnelConnecting
}

// connected records a connection that came up at: a reconnect when the
// generation had one before.
func (mt *meter) connected(at time.Time) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	if !mt.connectedAt.IsZero() {
		mt.reconnects.Add(1)
	}
	mt.connectedAt = at
}

// failed records a failure's reason, which the status keeps as lastError
// once the tunnel is up again.
func (mt *meter) failed(reason string) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	mt.lastError = reason
}

// now returns the counts at this moment: the record's and the run's.
func (mt *meter) now() counts {
	mt.mu.Lock()
	c := counts{connectedAt: mt.connectedAt, lastError: mt.lastError}
	mt.mu.Unlock()
	c.bytesIn = mt.base.bytesIn + mt.bytesIn.Load()
	c.bytesOut = mt.base.bytesOut + mt.bytesOut.Load()
	c.active = mt.active.Load()
	c.reconnects = mt.base.reconnects + mt.reconnects.Load()
	return c
}

// current returns the last state the run reported and the counts now.
func (mt *meter) current() (sshdeck.TunnelState, counts) {
	mt.mu.Lock()
	state := mt.state
	mt.mu.Unlock()
	return state, mt.now()
}

// counted returns st carrying the counts now: the status of a run that
// stopped (Shutdown, finish) keeps what it counted.
func (mt *meter) counted(st sshdeck.TunnelStatus) sshdeck.TunnelStatus {
	return mt.now().onto(st)
}

// stamp is a status the run reports, with the counts now (c); the caller
// holds write, writes what it returns, and sets written to c once the
// store has it.
func (mt *meter) stamp(st sshdeck.TunnelStatus) (_ sshdeck.TunnelStatus, c counts) {
	c = mt.now()
	mt.mu.Lock()
	mt.state = st.State
	mt.mu.Unlock()
	mt.reported = st
	return c.onto(st), c
}

// restamp is the run's last status with the counts now (c), if they
// changed since the store got them and the run reported a status; the
// caller holds write, as for stamp.
func (mt *meter) restamp() (_ sshdeck.TunnelStatus, c counts, changed bool) {
	c = mt.now()
	if mt.reported.State == "" || c.same(mt.written) {
		return sshdeck.TunnelStatus{}, c, false
	}
	return c.onto(mt.reported), c, true
}

// own returns what the run itself carried and reconnected, past its
// record's counts: what the replica's totals add up.
func (mt *meter) own() (bytesIn, bytesOut, reconnects int64) {
	return mt.bytesIn.Load(), mt.bytesOut.Load(), mt.reconnects.Load()
}
