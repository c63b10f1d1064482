package tunnel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/forwarding"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// A forward to the user's own machine (`sshdeck forward -L/-D`, API.md
// "Forwards to the user's own machine") opens each of its connections from
// a stored host, the via host, as `ssh -L` and `ssh -D` do from the host
// they log in to: a direct-tcpip channel of the service's connection to
// it, reached through its route of jump hosts. The connection comes from
// the pool, so a forward shares it with the owner's other forwards and
// with the tunnels whose source is the same host reached the same way.
//
// Every connection reads the via host again (its route, its credentials)
// and checks its target: a host saved meanwhile is used from the next
// connection on, and a target's name is resolved here and the address it
// resolves to checked against the always-denied ranges before the via host
// is asked to connect to that address, never to the name (the via host
// dials it, inside its own network, as a tunnel's source dials its
// endpoint; denyList). A name that only the via host's network resolves is
// therefore refused as unresolvable: resolving it there would let it
// resolve to any address, unchecked.

// Via is a forward session's hold on its via host (Manager.Via), counted
// against the owner's limit of forwards (as many as of forwarded
// connections, Options.ForwardLimit: a forward holds at least one): it opens
// the session's connections (Dial, a forwarding.Dialer) and keeps the
// last connection to the host it used, so that a forward whose
// connections come and go (a browser through -D) does not log in again
// for each. Close lets go of it.
type Via struct {
	m     *Manager
	owner string
	id    int64
	// ref is the host as the client named it, for messages.
	ref string

	mu     sync.Mutex
	held   *node
	closed bool
}

// Via returns the owner's host that ref names (its id, or else its name)
// for a forward's connections: NotFound when the owner has no such host,
// Invalid when the name is several hosts'. The host's route is read and
// checked at once, so that a forward through a host whose jump hosts are
// broken is refused before it starts.
func (m *Manager) Via(ctx context.Context, owner, ref string) (*Via, error) {
	if m.opts.Hosts == nil {
		return nil, sshdeck.Errorf(sshdeck.Invalid, "via host %q: this tunnel service reads no stored hosts", ref)
	}
	h, err := m.opts.Hosts.Find(ctx, owner, ref)
	switch code := sshdeck.ErrorCode(err); {
	case code == sshdeck.NotFound:
		return nil, sshdeck.Errorf(code, "via host %q: no host of yours has this name or id", ref)
	case code == sshdeck.Invalid:
		return nil, sshdeck.Errorf(code, "via host %q: %s", ref, sshdeck.ErrorMessage(err))
	case err != nil:
		return nil, err
	}
	v := &Via{m: m, owner: owner, id: h.ID, ref: ref}
	if _, err := v.path(ctx); err != nil {
		return nil, err
	}
	if !m.forwardSessions.take(owner) {
		return nil, sshdeck.Errorf(sshdeck.LimitExceeded, "limit of forwards reached: you have %d open, the most the service allows (SSHDECK_LIMIT_FORWARDS); stop one first", m.opts.ForwardLimit)
	}
	return v, nil
}

// path reads the hops to the via host: its jump hosts, first hop first,
// then the host, as a tunnel's attempt reads a stored source.
func (v *Via) path(ctx context.Context) ([]hop, error) {
	req := ConnectRequest{SourceHostID: &v.id, sourceRef: fmt.Sprintf("via host %q", v.ref)}
	r, err := v.m.resolve(ctx, v.owner, &req)
	if err != nil {
		return nil, err
	}
	var (
		spec  sshdeck.TunnelSpec
		creds sshdeck.TunnelCredentials
	)
	if err := v.m.sourceRoute(r, &spec, &creds); err != nil {
		return nil, err
	}
	path := newPath(&spec, &creds)
	return path[:len(path)-1], nil // newPath's last hop is the endpoint, which a forward has none of
}

// CheckTarget refuses a target (host:port) that no connection of a
// forward may reach: one that does not parse (Invalid), or a name or
// address in the always-denied ranges (Denied). A name that does not
// resolve passes: its connections are refused as unresolvable, and DNS may
// mend it. A forward to one target (-L) is checked so before it starts.
func (m *Manager) CheckTarget(ctx context.Context, target string) error {
	host, _, err := forwarding.SplitTarget(target)
	if err != nil {
		return sshdeck.Errorf(sshdeck.Invalid, "%s", err.Error())
	}
	return m.dialer.checkAllowed(ctx, "target", host, true)
}

// Dial opens a connection of the forward to target (host:port) from the
// via host: a forwarding.Dialer, whose refusals are
// *forwarding.RefusedError naming the target. The connection counts
// against the owner's limit of forwarded connections until it is closed.
func (v *Via) Dial(ctx context.Context, target string) (net.Conn, error) {
	host, port, err := forwarding.SplitTarget(target)
	if err != nil {
		return nil, forwarding.Refused(forwarding.CodeInvalid, "%s", err.Error())
	}
	if !v.m.forwards.take(v.owner) {
		return nil, forwarding.Refused(forwarding.CodeLimitExceeded,
			"%s: limit of forwarded connections reached: you have %d open, the most the service allows (SSHDECK_LIMIT_FORWARDS); close one first", target, v.m.opts.ForwardLimit)
	}
	conn, err := v.dial(ctx, target, host, port)
	if err != nil {
		v.m.forwards.give(v.owner)
		return nil, err
	}
	return conn, nil
}

func (v *Via) dial(ctx context.Context, target, host string, port int) (net.Conn, error) {
	addr, err := v.m.targetAddr(ctx, host, port)
	if err != nil {
		return nil, err
	}
	n, err := v.connection(ctx)
	if err != nil {
		return nil, err
	}
	to := hop{name: "target " + target}
	ch, reqs, err := v.m.dialer.open(ctx, n, &to, addr)
	if err != nil {
		v.m.pool.release(n)
		return nil, v.openFailure(target, err)
	}
	// Peers send no requests on a direct-tcpip channel; discarded, so
	// that one that does cannot stall the shared connection.
	go ssh.DiscardRequests(reqs)
	return &viaConn{chanConn: ch.(*chanConn), done: func() {
		v.m.pool.release(n)
		v.m.forwards.give(v.owner)
	}}, nil
}

// targetAddr resolves the target here and checks every address it
// resolves to, as a relayed hop's (denyList): the via host is asked to
// connect to the first, never to the name.
func (m *Manager) targetAddr(ctx context.Context, host string, port int) (netip.AddrPort, error) {
	target := net.JoinHostPort(host, strconv.Itoa(port))
	addrs, err := m.dialer.lookup(ctx, host)
	if err != nil {
		if ctx.Err() != nil {
			return netip.AddrPort{}, ctx.Err()
		}
		return netip.AddrPort{}, forwarding.Refused(forwarding.CodeUnresolvable, "%s: the name does not resolve (names are resolved by the tunnel service)", target)
	}
	if denied, ok := m.dialer.denied(addrs, true); ok {
		return netip.AddrPort{}, forwarding.Refused(forwarding.CodeDenied, "%s resolves to %s, in the denied range %s", target, denied.addr, denied.prefix)
	}
	return netip.AddrPortFrom(addrs[0], uint16(port)), nil
}

// connection returns the service's connection to the via host, with a
// reference for the caller, read and acquired anew for each connection
// of the forward (the pool has it already, unless the host changed or the
// connection ended), and holds it for the session.
func (v *Via) connection(ctx context.Context) (*node, error) {
	path, err := v.path(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, forwarding.Refused(forwarding.CodeUnreachable, "%s", hostFailure(err).msg)
	}
	n, err := v.m.pool.acquire(ctx, v.owner, path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, forwarding.Refused(forwarding.CodeUnreachable, "via host %q: %s", v.ref, asFailure(err, "the via host").msg)
	}
	v.hold(n)
	return n, nil
}

// hold keeps n for the session, in place of the connection held before.
func (v *Via) hold(n *node) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed || v.held == n {
		return
	}
	v.m.pool.retain(n)
	if v.held != nil {
		v.m.pool.release(v.held)
	}
	v.held = n
}

// Close ends the session's hold: its place under the owner's limit of
// forwards, and the held connection, which closes unless a tunnel, a
// forwarded connection or another forward rides it.
func (v *Via) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	if v.held != nil {
		v.m.pool.release(v.held)
	}
	v.held, v.closed = nil, true
	v.m.forwardSessions.give(v.owner)
}

// openFailure is a target's channel that the via host did not open.
func (v *Via) openFailure(target string, err error) error {
	var refused *ssh.OpenChannelError
	switch {
	case errors.As(err, &refused):
		return forwarding.Refused(forwarding.CodeRefused, "%s: via host %q could not connect to it (%s)", target, v.ref, refused.Reason)
	case isTimeout(err):
		return forwarding.Refused(forwarding.CodeTimeout, "%s: via host %q did not connect to it within %s", target, v.ref, v.m.opts.DialTimeout)
	}
	return forwarding.Refused(forwarding.CodeUnreachable, "%s: the connection to via host %q broke", target, v.ref)
}

// viaConn is a forwarded connection: an SSH channel whose close also lets
// go of its via connection and its place under the owner's limit, once.
type viaConn struct {
	*chanConn
	once sync.Once
	done func()
}

func (c *viaConn) Close() error {
	err := c.chanConn.Close()
	c.once.Do(c.done)
	return err
}

// forwardCounts counts each owner's open forwarded connections, or
// forwards, on this replica against Options.ForwardLimit.
type forwardCounts struct {
	limit int
	mu    sync.Mutex
	open  map[string]int
}

// take counts a connection of owner's; false at the limit.
func (f *forwardCounts) take(owner string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open[owner] >= f.limit {
		return false
	}
	if f.open == nil {
		f.open = map[string]int{}
	}
	f.open[owner]++
	return true
}

func (f *forwardCounts) give(owner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open[owner]--; f.open[owner] <= 0 {
		delete(f.open, owner)
	}
}

// Forwards is the number of the owner's forwarded connections open on this
// replica.
func (m *Manager) Forwards(owner string) int {
	m.forwards.mu.Lock()
	defer m.forwards.mu.Unlock()
	return m.forwards.open[owner]
}

// Done is closed once Shutdown (or a crash) has stopped the tunnels: the
// forward sessions end with it.
func (m *Manager) Done() <-chan struct{} { return m.runCtx.Done() }
