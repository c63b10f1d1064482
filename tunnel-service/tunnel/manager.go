package tunnel

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/tunnelrecord"
)

// Options tune a Manager; zero values take the defaults.
type Options struct {
	// Holder names this replica in leases; it must differ between live
	// replicas. Default: the host name and a random suffix.
	Holder string
	// Deny are address ranges that the hop the service dials itself (the
	// first jump host, or the source when there is none) may not be in,
	// besides AlwaysDeny, which every hop is checked against whatever Deny
	// says: SSHDECK_TUNNEL_DENY_CIDRS.
	Deny []netip.Prefix
	// MinRetryInterval is the floor a request's retryInterval is raised to
	// (1 s, API.md's). Only tests lower it, to retry fast.
	MinRetryInterval time.Duration
	// DialTimeout bounds each hop's connection and handshake (15 s).
	DialTimeout time.Duration
	// KeepaliveInterval and KeepaliveMisses detect dead peers (15 s, 3),
	// on each SSH connection, however many tunnels ride it.
	KeepaliveInterval time.Duration
	KeepaliveMisses   int
	// DedicatedConnections gives every tunnel SSH connections of its own,
	// as OpenSSH's ControlMaster no does, instead of sharing them between
	// tunnels that reach the same hosts the same way (pool.go). The
	// bench sets it to measure what an unshared tunnel costs.
	DedicatedConnections bool
	// StableAfter is how long a connection must stay up for its retry
	// count to start over (10 s).
	StableAfter time.Duration
	// LeaseTTL is how long a replica's claim on a tunnel lasts unrenewed
	// (30 s): a dead replica's autoStart tunnels are taken over after it.
	LeaseTTL time.Duration
	// Heartbeat is how often leases are renewed, which is also how soon a
	// change made through another replica reaches this one (10 s).
	Heartbeat time.Duration
	// Reconcile is how often the replica looks for autoStart tunnels that
	// nobody runs (10 s).
	Reconcile time.Duration
	// StreamPoll is how often the status streams of an owner read the
	// store for changes made by other replicas (2 s): one reading per
	// owner, whatever the number of streams (feed.go).
	StreamPoll time.Duration
	// TunnelLimit is the most tunnels one owner may have, in any state
	// (config.Limits.Tunnels, 64).
	TunnelLimit int
	// StreamLimit is the most status streams one owner may have open on
	// this replica (config.Limits.Streams, 4).
	StreamLimit int
	// JumpLimit is the most jump hosts a tunnel's source may be reached
	// through (config.Limits.JumpHosts, 8), as a host's route may have.
	JumpLimit int
	// ForwardLimit is the most forwarded connections one owner may have
	// open at once on this replica (config.Limits.Forwards, 256; via.go).
	ForwardLimit int
	// Hosts reads the stored hosts that a connect request names by id
	// (sourceHostId, endpointHostId; stored.go): a hostchain.Reader over
	// the service's store and sealer with Max JumpLimit. Without it such
	// a request is 400.
	Hosts Hosts
	// ForgetAfter is how long a tunnel that is neither to run nor
	// autoStart is kept after it stopped (24 h; a host's tunnel, as long
	// as its host lists it); SweepEvery how often the
	// replica looks for such tunnels to forget, at a reconcile (1 h).
	ForgetAfter time.Duration
	SweepEvery  time.Duration
	Resolver    *net.Resolver
	Now         func() time.Time
	Log         *slog.Logger
}

func (o *Options) defaults() {
	if o.Holder == "" {
		host, _ := os.Hostname()
		o.Holder = host + "-" + sshdeck.NewID("")
	}
	setDefault(&o.MinRetryInterval, MinRetryInterval*time.Millisecond)
	setDefault(&o.DialTimeout, 15*time.Second)
	setDefault(&o.KeepaliveInterval, DefaultKeepaliveInterval)
	setDefault(&o.KeepaliveMisses, DefaultKeepaliveMisses)
	setDefault(&o.StableAfter, 10*time.Second)
	setDefault(&o.LeaseTTL, 30*time.Second)
	setDefault(&o.Heartbeat, 10*time.Second)
	setDefault(&o.Reconcile, 10*time.Second)
	setDefault(&o.StreamPoll, 2*time.Second)
	setDefault(&o.TunnelLimit, config.DefaultLimits.Tunnels)
	setDefault(&o.StreamLimit, config.DefaultLimits.Streams)
	setDefault(&o.JumpLimit, config.DefaultLimits.JumpHosts)
	setDefault(&o.ForwardLimit, config.DefaultLimits.Forwards)
	setDefault(&o.ForgetAfter, DefaultForgetAfter)
	setDefault(&o.SweepEvery, time.Hour)
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Manager runs the tunnels of one replica. Every tunnel's record is in the
// store; a replica runs a tunnel while it holds the tunnel's lease, and
// follows the record: a new generation (connect again) restarts it, Run
// cleared (disconnect, cancel) stops it, wherever the request came in.
type Manager struct {
	store  sshdeck.TunnelStore
	sealer *secret.Sealer
	opts   Options
	dialer *dialer
	// pool holds the SSH connections the tunnels running here share.
	pool *pool
	log  *slog.Logger

	// runCtx is the parent of every run; loopCtx of the background loops.
	runCtx, loopCtx     context.Context
	stopRuns, stopLoops context.CancelFunc
	loops               sync.WaitGroup
	// runners counts the runs' goroutines, which may still record a
	// tunnel's end after leaving runs: Shutdown waits for them.
	runners               sync.WaitGroup
	startOnce, closedOnce sync.Once

	// control serialises starting and stopping runs.
	control sync.Mutex

	// lastSweep is when reconcile last looked for tunnels to forget; only
	// the loop touches it.
	lastSweep time.Time

	// forwards and forwardSessions count the forwarded connections and
	// the forwards to the users' machines (via.go).
	forwards, forwardSessions forwardCounts

	mu    sync.Mutex
	runs  map[tunnelKey]*run
	feeds map[string]*feed // by owner: the status streams' reading
	// meters are those of the runs here until each run has ended
	// (retire), and totals what the ended ones counted: Metrics.
	meters map[*meter]struct{}
	totals totals
	// feedsRunning counts the feeds' goroutines.
	feedsRunning sync.WaitGroup
}

// DefaultForgetAfter is how long a stopped tunnel that is not autoStart is
// kept (API.md: 24 h).
const DefaultForgetAfter = 24 * time.Hour

type tunnelKey struct{ owner, name string }

// run is a tunnel running here.
type run struct {
	tunnel *sshdeck.Tunnel // the record it runs, with its generation
	runner *runner
	cancel context.CancelFunc
	done   chan struct{}
}

// NewManager returns a Manager over the store; Start starts it.
func NewManager(store sshdeck.TunnelStore, sealer *secret.Sealer, opts Options) *Manager {
	opts.defaults()
	m := &Manager{
		store:  store,
		sealer: sealer,
		opts:   opts,
		log:    opts.Log,
		runs:   map[tunnelKey]*run{},
		feeds:  map[string]*feed{},
		meters: map[*meter]struct{}{},
	}
	m.forwards.limit, m.forwardSessions.limit = opts.ForwardLimit, opts.ForwardLimit
	m.dialer = &dialer{deny: newDenyList(opts.Deny), resolver: opts.Resolver, timeout: opts.DialTimeout, keys: &hostKeys{store: store, now: opts.Now}}
	m.runCtx, m.stopRuns = context.WithCancel(context.Background())
	m.pool = newPool(m.runCtx, m.dialer, opts.KeepaliveInterval, opts.KeepaliveMisses, opts.DedicatedConnections)
	m.loopCtx, m.stopLoops = context.WithCancel(context.Background())
	return m
}

// Holder is this replica's name in leases.
func (m *Manager) Holder() string { return m.opts.Holder }

// Start starts the autoStart tunnels nobody runs, then keeps renewing
// leases and looking for tunnels to take over until Shutdown.
func (m *Manager) Start() {
	m.startOnce.Do(func() {
		m.loops.Add(1)
		go m.loop()
	})
}

func (m *Manager) loop() {
	defer m.loops.Done()
	m.reconcile()
	heartbeat := time.NewTicker(m.opts.Heartbeat)
	defer heartbeat.Stop()
	reconcile := time.NewTicker(m.opts.Reconcile)
	defer reconcile.Stop()
	for {
		select {
		case <-m.loopCtx.Done():
			return
		case <-heartbeat.C:
			m.heartbeat()
		case <-reconcile.C:
			m.reconcile()
		}
	}
}

// Shutdown stops every tunnel of this replica and records it: an autoStart
// tunnel waits for another replica (or the next start) with its lease
// released, any other tunnel is disconnected.
func (m *Manager) Shutdown(ctx context.Context) {
	m.closedOnce.Do(func() {
		m.stopLoops()
		m.loops.Wait()
		m.feedsRunning.Wait()
		m.control.Lock()
		defer m.control.Unlock()
		for k, r := range m.snapshot() {
			m.stopRun(k)
			t, mt := r.tunnel, &r.runner.meter
			if t.Spec.AutoStart {
				st := sshdeck.TunnelStatus{State: sshdeck.TunnelWaiting, Reason: "its service replica stopped; another replica or the next start resumes it"}
				m.setStatus(ctx, t, mt.counted(st))
				m.release(ctx, t)
				continue
			}
			m.finish(ctx, t, mt.counted(sshdeck.TunnelStatus{State: sshdeck.TunnelDisconnected, Reason: "the tunnel service stopped"}))
		}
		m.stopRuns()
		m.runners.Wait()
	})
}

// crash stops everything at once and writes nothing, as a replica that
// dies does: its leases stay until they expire.
func (m *Manager) crash() {
	m.closedOnce.Do(func() {
		m.stopLoops()
		m.stopRuns()
		m.loops.Wait()
		m.feedsRunning.Wait()
		m.runners.Wait()
	})
}

func (m *Manager) now() time.Time { return m.opts.Now().UTC() }

// Connect stores the tunnel a request asks for (replacing one of the same
// name) and starts it here, unless another replica holds it: that one
// restarts it at its next heartbeat. A new name past the owner's
// TunnelLimit is LimitExceeded.
//
// A request of a name alone starts the host tunnel of that name (refs.go);
// any other request may not take such a name (checkName). A side given
// by host id is stored as a reference (referencing), read again at each
// attempt, after the request's checks have read and checked it once.
func (m *Manager) Connect(ctx context.Context, owner string, req *ConnectRequest) error {
	if _, _, ok := sshdeck.ParseHostTunnelName(req.Name); ok && req.onlyName() {
		return m.startHostTunnel(ctx, owner, req.Name)
	}
	orig := req
	req, err := m.resolve(ctx, owner, req)
	if err != nil {
		return err
	}
	name, spec, creds, err := req.parse(m.opts.MinRetryInterval, m.opts.JumpLimit)
	if err != nil {
		return err
	}
	if err := checkName(name); err != nil {
		return err
	}
	// The first hop is the service's to dial; every later one the hop's
	// before it (denyList).
	for i, h := range spec.Jumps {
		in := req.Jumps[i].input(i)
		if err := m.dialer.checkAllowed(ctx, in.ipField(), h.IP, i > 0); err != nil {
			return err
		}
	}
	src, dst := req.source(), req.endpoint()
	if err := m.dialer.checkAllowed(ctx, src.ipField(), spec.Source.IP, len(spec.Jumps) > 0); err != nil {
		return err
	}
	if err := m.dialer.checkAllowed(ctx, dst.ipField(), spec.Endpoint.IP, true); err != nil {
		return err
	}
	if spec.Direct() {
		if err := m.checkDirect(ctx, owner, &spec, &creds); err != nil {
			return err
		}
	}
	spec, creds = referencing(orig, spec, creds)
	sealed, err := sealTunnel(ctx, m.sealer, owner, name, creds)
	if err != nil {
		return err
	}
	t, err := m.write(ctx, owner, name, true, func(t *sshdeck.Tunnel) {
		t.Spec, t.Sealed, t.Run = spec, sealed, true
		t.Status = sshdeck.TunnelStatus{State: sshdeck.TunnelConnecting, Reason: "connection request received"}
	})
	if err != nil {
		return err
	}
	m.claim(t, creds)
	return nil
}

// Disconnect stops the owner's tunnel for good (until connected again),
// wherever it runs; cancelled says the user cancelled its retries.
func (m *Manager) Disconnect(ctx context.Context, owner, name string, cancelled bool) error {
	reason := "disconnected by its owner"
	if cancelled {
		reason = "cancelled by its owner: no more retries"
	}
	t, err := m.write(ctx, owner, name, false, func(t *sshdeck.Tunnel) {
		t.Run = false
		// What it counted stays visible until it is connected again.
		latest := m.latestStatus(t)
		t.Status = keepCounts(sshdeck.TunnelStatus{State: sshdeck.TunnelDisconnected, Reason: reason, ManualDisconnect: true}, &latest)
	})
	if err != nil {
		return err
	}
	m.control.Lock()
	m.stopRun(tunnelKey{owner, name})
	m.control.Unlock()
	m.release(ctx, t)
	return nil
}

// Delete stops the owner's tunnel wherever it runs and forgets it: its
// record, lease and sealed credentials. Here it stops at once; a replica
// that runs it elsewhere stops it at its next heartbeat, when its lease
// renewal finds no tunnel. NotFound when absent.
func (m *Manager) Delete(ctx context.Context, owner, name string) error {
	err := m.store.DeleteTunnel(sshdeck.AuditCommit(ctx), owner, name, 0)
	if sshdeck.ErrorCode(err) == sshdeck.NotFound {
		return sshdeck.Errorf(sshdeck.NotFound, "no tunnel named %q", name)
	}
	if err != nil {
		return err
	}
	m.control.Lock()
	m.stopRun(tunnelKey{owner, name})
	m.control.Unlock()
	m.log.Info("tunnel deleted", "owner", owner, "tunnel", name)
	m.notify(owner)
	return nil
}

// write changes the owner's tunnel (creating it when create is set) under
// the guard of its generation (tunnelrecord.Writer, which the hosts
// service writes a host's tunnels with too), and tells the status streams.
func (m *Manager) write(ctx context.Context, owner, name string, create bool, change func(*sshdeck.Tunnel)) (*sshdeck.Tunnel, error) {
	w := tunnelrecord.Writer{Store: m.store, Limit: m.opts.TunnelLimit, Now: m.opts.Now}
	// A user's connect or disconnect: the write is the request's change.
	t, err := w.Write(sshdeck.AuditCommit(ctx), owner, name, create, func(t *sshdeck.Tunnel) error {
		change(t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.notify(owner)
	return t, nil
}

// claim runs a tunnel just written by this replica, if it can take the
// lease.
func (m *Manager) claim(t *sshdeck.Tunnel, creds sshdeck.TunnelCredentials) {
	m.control.Lock()
	defer m.control.Unlock()
	k := tunnelKey{t.Owner, t.Name}
	// An older generation running here must be gone, its endpoint port
	// with it, before the new one asks for the port.
	m.stopRun(k)
	leased, err := m.acquire(t)
	switch {
	case sshdeck.ErrorCode(err) == sshdeck.Conflict:
		m.log.Info("tunnel runs on another replica, which restarts it", "owner", t.Owner, "tunnel", t.Name, "holder", t.Lease.Holder)
		return
	case err != nil:
		m.log.Error("cannot take the tunnel's lease", "owner", t.Owner, "tunnel", t.Name, "error", err.Error())
		return
	case leased.Generation != t.Generation || !leased.Run:
		return // changed again since: that change's writer decides
	}
	m.startRun(leased, creds)
}

func (m *Manager) acquire(t *sshdeck.Tunnel) (*sshdeck.Tunnel, error) {
	now := m.now()
	return m.store.AcquireTunnelLease(m.runCtx, t.Owner, t.Name, m.opts.Holder, now, now.Add(m.opts.LeaseTTL))
}

func (m *Manager) release(ctx context.Context, t *sshdeck.Tunnel) {
	if err := m.store.ReleaseTunnelLease(ctx, t.Owner, t.Name, m.opts.Holder); err != nil {
		m.log.Warn("cannot release the tunnel's lease; it expires on its own", "owner", t.Owner, "tunnel", t.Name, "error", err.Error())
	}
}

// startRun runs the tunnel here. The caller holds control and the lease.
func (m *Manager) startRun(t *sshdeck.Tunnel, creds sshdeck.TunnelCredentials) {
	ctx, cancel := context.WithCancel(m.runCtx)
	rn := &runner{
		owner: t.Owner, name: t.Name, spec: &t.Spec, creds: creds,
		pool:        m.pool,
		stableAfter: m.opts.StableAfter,
		now:         m.now,
		log:         m.log,
	}
	rn.meter.start(t)
	rn.report = func(st sshdeck.TunnelStatus) { m.report(ctx, t, &rn.meter, st) }
	rn.hops = func(ctx context.Context) (*sshdeck.TunnelSpec, sshdeck.TunnelCredentials, *failure) {
		return m.hops(ctx, t.Owner, t.Name, &t.Spec, creds)
	}
	r := &run{tunnel: t, runner: rn, cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.runs[tunnelKey{t.Owner, t.Name}] = r
	m.meters[&rn.meter] = struct{}{}
	m.mu.Unlock()
	m.log.Info("tunnel starts", "owner", t.Owner, "tunnel", t.Name, "generation", t.Generation)
	m.runners.Add(1)
	go m.runTunnel(ctx, r, rn)
}

// ranOut records the end of a run that gave up.
func (m *Manager) ranOut(r *run, final *sshdeck.TunnelStatus) {
	k := tunnelKey{r.tunnel.Owner, r.tunnel.Name}
	m.mu.Lock()
	if m.runs[k] == r {
		delete(m.runs, k)
	}
	m.retire(&r.runner.meter)
	m.mu.Unlock()
	if r.runner.forget {
		m.forget(r.tunnel, final.Reason)
		return
	}
	m.finish(m.runCtx, r.tunnel, r.runner.meter.counted(*final))
}

// stopRun stops the tunnel's run here, if any, and waits for its teardown.
// The caller holds control.
func (m *Manager) stopRun(k tunnelKey) {
	m.mu.Lock()
	r := m.runs[k]
	delete(m.runs, k)
	m.mu.Unlock()
	if r != nil {
		r.cancel()
		<-r.done
		m.mu.Lock()
		m.retire(&r.runner.meter)
		m.mu.Unlock()
	}
}

func (m *Manager) snapshot() map[tunnelKey]*run {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[tunnelKey]*run, len(m.runs))
	for k, r := range m.runs {
		out[k] = r
	}
	return out
}

func (m *Manager) running(k tunnelKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[k] != nil
}

// setStatus records a running tunnel's status. A Conflict means a newer
// generation or another replica owns the tunnel now: the heartbeat stops
// this run.
func (m *Manager) setStatus(ctx context.Context, t *sshdeck.Tunnel, st sshdeck.TunnelStatus) error {
	err := m.writeStatus(ctx, t, &st)
	if err != nil && ctx.Err() == nil {
		m.log.Warn("cannot record the tunnel's status", "owner", t.Owner, "tunnel", t.Name, "state", st.State, "error", err.Error())
	}
	m.log.Info("tunnel status", "owner", t.Owner, "tunnel", t.Name, "state", st.State, "retry_count", st.RetryCount, "error_type", st.Error)
	return err
}

// writeStatus writes st, at the time now, and tells the status streams.
func (m *Manager) writeStatus(ctx context.Context, t *sshdeck.Tunnel, st *sshdeck.TunnelStatus) error {
	st.UpdatedAt = m.now()
	err := m.store.SetTunnelStatus(ctx, t.Owner, t.Name, t.Generation, m.opts.Holder, st)
	m.notify(t.Owner)
	return err
}

// finish records that a tunnel stopped for good (failed, or its replica
// gone): Run is cleared so that no replica starts it again, and the lease
// is released.
func (m *Manager) finish(ctx context.Context, t *sshdeck.Tunnel, st sshdeck.TunnelStatus) {
	now := m.now()
	next := *t
	next.Generation++
	next.Run = false
	st.UpdatedAt, next.UpdatedAt = now, now
	next.Status = st
	switch err := m.store.PutTunnel(ctx, &next); {
	case err == nil:
		m.countEnd(st.State)
	case sshdeck.ErrorCode(err) != sshdeck.Conflict:
		m.log.Error("cannot record the tunnel's end", "owner", t.Owner, "tunnel", t.Name, "error", err.Error())
	}
	m.release(ctx, t)
	m.log.Info("tunnel ended", "owner", t.Owner, "tunnel", t.Name, "state", st.State, "error_type", st.Error)
	m.notify(t.Owner)
}

// heartbeat renews the leases of the tunnels running here and follows
// their records: stopped, changed, or taken by another replica.
func (m *Manager) heartbeat() {
	m.control.Lock()
	defer m.control.Unlock()
	for k, r := range m.snapshot() {
		t, err := m.acquire(r.tunnel)
		switch code := sshdeck.ErrorCode(err); {
		case code == sshdeck.NotFound || code == sshdeck.Conflict:
			m.log.Warn("tunnel's lease is lost: stopping it here", "owner", k.owner, "tunnel", k.name)
			m.stopRun(k)
		case err != nil:
			m.log.Warn("cannot renew the tunnel's lease", "owner", k.owner, "tunnel", k.name, "error", err.Error())
		case !t.Run:
			m.stopRun(k)
			m.release(m.loopCtx, t)
		case !sameRecord(t, r.tunnel):
			m.stopRun(k)
			m.resume(t)
		default:
			m.flush(r)
		}
	}
}

// sameRecord tells whether t, as a lease renewal read it, is still the
// record that run started from. The generation alone cannot tell: a
// record deleted and created again (a host's saves dropping its
// tunnelConnection and adding another in its place, between two
// heartbeats) starts again at generation 1, which the run may have too,
// and its lease is free for the renewal to take. CreatedAt tells the two
// apart wherever the clock ticked between them; the spec wherever what
// the run would do differs, whatever the clock.
func sameRecord(t, run *sshdeck.Tunnel) bool {
	return t.Generation == run.Generation && t.CreatedAt.Equal(run.CreatedAt) && reflect.DeepEqual(t.Spec, run.Spec)
}

// reconcile starts the autoStart tunnels that no live replica runs, and
// ends the other tunnels whose replica is gone; every SweepEvery, it also
// forgets the stopped tunnels past ForgetAfter (sweep).
func (m *Manager) reconcile() {
	if now := m.now(); now.Sub(m.lastSweep) >= m.opts.SweepEvery {
		m.lastSweep = now
		m.sweep(now)
	}
	ts, err := m.store.RunnableTunnels(m.loopCtx)
	if err != nil {
		if m.loopCtx.Err() == nil {
			m.log.Warn("cannot list the tunnels to run", "error", err.Error())
		}
		return
	}
	m.control.Lock()
	defer m.control.Unlock()
	now := m.now()
	for _, t := range ts {
		if m.loopCtx.Err() != nil {
			return
		}
		// A lease of this replica's name on a tunnel not running here is
		// left from an earlier life of it (a crash before a restart).
		free := t.Lease.Holder == "" || t.Lease.Holder == m.opts.Holder || !now.Before(t.Lease.Until)
		if m.running(tunnelKey{t.Owner, t.Name}) || !free {
			continue
		}
		if !t.Spec.AutoStart {
			// Give the replica that just wrote it time to take its lease.
			if now.Sub(t.UpdatedAt) >= m.opts.LeaseTTL {
				m.finish(m.loopCtx, t, keepCounts(sshdeck.TunnelStatus{
					State: sshdeck.TunnelFailed, Error: sshdeck.TunnelErrUnknown,
					Reason: "the service replica running it stopped; connect again (autoStart tunnels are taken over)",
				}, &t.Status))
			}
			continue
		}
		leased, err := m.acquire(t)
		if err != nil {
			continue // another replica was quicker, or the store is away
		}
		if !leased.Run {
			m.release(m.loopCtx, leased)
			continue
		}
		m.log.Info("taking the autoStart tunnel over", "owner", t.Owner, "tunnel", t.Name, "previous_holder", t.Lease.Holder)
		// The stored status is still what the previous holder last wrote
		// (connected, say): replace it before anyone reads it as ours,
		// keeping its counts, which the run here goes on from.
		m.setStatus(m.loopCtx, leased, keepCounts(sshdeck.TunnelStatus{State: sshdeck.TunnelConnecting, Reason: "resumed by this replica"}, &leased.Status))
		m.resume(leased)
	}
}

// sweep forgets the tunnels that are neither to run nor autoStart and
// stopped ForgetAfter ago or more. Each is deleted at the generation read,
// so that a connect since (a new generation) keeps it; every replica
// sweeps, and a tunnel another one forgot first is NotFound, which is
// fine.
func (m *Manager) sweep(now time.Time) {
	ts, err := m.store.StoppedTunnels(m.loopCtx, now.Add(-m.opts.ForgetAfter))
	if err != nil {
		if m.loopCtx.Err() == nil {
			m.log.Warn("cannot list the stopped tunnels to forget", "error", err.Error())
		}
		return
	}
	for _, t := range ts {
		if t.Spec.HostTunnel && !m.hostTunnelGone(t) {
			continue
		}
		err := m.store.DeleteTunnel(m.loopCtx, t.Owner, t.Name, t.Generation)
		switch code := sshdeck.ErrorCode(err); {
		case err == nil:
			m.log.Info("stopped tunnel forgotten", "owner", t.Owner, "tunnel", t.Name, "stopped_at", t.UpdatedAt)
			m.notify(t.Owner)
		case code == sshdeck.NotFound || code == sshdeck.Conflict:
		default:
			if m.loopCtx.Err() == nil {
				m.log.Warn("cannot forget a stopped tunnel", "owner", t.Owner, "tunnel", t.Name, "error", err.Error())
			}
			return
		}
	}
}

// resume runs a stored tunnel here with its sealed credentials. The caller
// holds control and the lease.
func (m *Manager) resume(t *sshdeck.Tunnel) {
	creds, err := openTunnel(m.runCtx, m.sealer, t)
	if err != nil {
		m.log.Error("cannot open the tunnel's credentials", "owner", t.Owner, "tunnel", t.Name, "error", err.Error())
		m.finish(m.runCtx, t, keepCounts(sshdeck.TunnelStatus{State: sshdeck.TunnelFailed, Error: sshdeck.TunnelErrUnknown, Reason: "its stored credentials cannot be opened"}, &t.Status))
		return
	}
	m.startRun(t, creds)
}
