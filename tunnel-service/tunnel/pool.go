package tunnel

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// pool holds the SSH connections of one replica's tunnels, shared as
// OpenSSH's ControlMaster shares them: tunnels whose paths reach a hop
// through the same hops, with the same logins, ride one connection to it
// (and the endpoint's connection, when they share that too, carries the
// remote forwards of all of them). Sharing holds at every level: tunnels
// to two endpoints behind one source share the source's connection.
//
// A tunnel's attempt acquires its path (acquire), hop by hop, and gets
// the endpoint's node, holding a reference to it; each node holds one to
// its parent. Releasing the last reference closes the connection, then
// releases its parent. A connection several attempts ask for at once is
// dialled once, and a failed dial is the failure of each of them. A
// connection that ends leaves the pool at once (ended): the tunnels on it
// retry under their own rules, and a retry dials anew.
type pool struct {
	dialer *dialer
	// ctx is the parent of every dial (the Manager's runs): a dial is
	// no one tunnel's, and goes on while any of its askers waits.
	ctx       context.Context
	keepalive time.Duration
	misses    int
	// dedicated gives every attempt connections of its own, as before
	// connections were shared (Options.DedicatedConnections).
	dedicated bool
	// secret keys the hash of credentials in connKey.
	secret [32]byte

	solo  atomic.Uint64 // the last attempt's own key, when dedicated
	dials atomic.Int64  // connections dialled, for tests

	mu    sync.Mutex
	conns map[connKey]*node
}

func newPool(ctx context.Context, d *dialer, keepalive time.Duration, misses int, dedicated bool) *pool {
	p := &pool{dialer: d, ctx: ctx, keepalive: keepalive, misses: misses, dedicated: dedicated, conns: map[connKey]*node{}}
	rand.Read(p.secret[:])
	return p
}

// connKey is everything that makes two SSH connections interchangeable.
// Never the credentials themselves: a map key ends up in a debugger, a
// panic or a log line, so they are in it as an HMAC-SHA256 under a key of
// this process.
type connKey struct {
	// parent is the connection it rides in (nil for a first hop): the
	// same hops before it, to the same connection.
	parent *node
	// owner: never shared between owners, whose remembered host keys and
	// deny checks are their own.
	owner string
	// name is how the tunnel names the hop, with the path to it (hop.name):
	// where its host key is remembered, and what its failures say.
	name    string
	addr    netip.AddrPort // as resolved and checked against the denied ranges
	user    string
	auth    sshdeck.AuthType
	keyType string
	pin     string
	creds   [sha256.Size]byte
	// solo is an attempt's own number when connections are dedicated.
	solo uint64
}

func (p *pool) key(owner string, parent *node, h *hop, addr netip.AddrPort, solo uint64) connKey {
	mac := hmac.New(sha256.New, p.secret[:])
	for _, s := range []string{h.creds.Password, h.creds.Key, h.creds.KeyPassword} {
		mac.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
		mac.Write([]byte(s))
	}
	k := connKey{parent: parent, owner: owner, name: h.name, addr: addr, user: h.Username,
		auth: h.Auth, keyType: h.KeyType, pin: h.HostKey, solo: solo}
	mac.Sum(k.creds[:0])
	return k
}

// acquire returns the connection to the last hop of path (the endpoint),
// dialling what the pool does not have yet; the caller releases it.
func (p *pool) acquire(ctx context.Context, owner string, path []hop) (*node, error) {
	var solo uint64
	if p.dedicated {
		solo = p.solo.Add(1)
	}
	var parent *node
	for i := range path {
		n, err := p.get(ctx, owner, parent, &path[i], solo)
		if parent != nil {
			p.release(parent) // n holds its own reference to it
		}
		if err != nil {
			return nil, err
		}
		parent = n
	}
	return parent, nil
}

// get returns the connection to h through parent (held by the caller),
// with a reference for the caller.
func (p *pool) get(ctx context.Context, owner string, parent *node, h *hop, solo uint64) (*node, error) {
	addr, err := p.dialer.resolve(ctx, h)
	if err != nil {
		return nil, err
	}
	k := p.key(owner, parent, h, addr, solo)
	p.mu.Lock()
	n := p.conns[k]
	if n == nil {
		n = &node{key: k, parent: parent, what: h.name, jump: h.jump, ready: make(chan struct{}), done: make(chan struct{})}
		n.agent.init()
		n.keeper.misses, n.keeper.every = p.misses, p.keepalive
		if parent != nil {
			parent.refs++
		}
		var dialCtx context.Context
		dialCtx, n.cancel = context.WithCancel(p.ctx)
		p.conns[k] = n
		hop := *h
		go p.dial(dialCtx, owner, n, &hop, addr)
	}
	n.refs++
	p.mu.Unlock()
	select {
	case <-n.ready:
	case <-ctx.Done():
		p.release(n)
		return nil, ctx.Err()
	}
	if n.err != nil {
		p.release(n)
		return nil, n.err
	}
	return n, nil
}

// dial connects n, then serves it; n's askers wait for ready.
func (p *pool) dial(ctx context.Context, owner string, n *node, h *hop, addr netip.AddrPort) {
	p.dials.Add(1)
	d, err := p.dialer.dial(ctx, owner, n.parent, h, addr)
	p.mu.Lock()
	if err != nil {
		n.err = err
		p.forget(n)
		close(n.ready)
		p.mu.Unlock()
		close(n.done)
		return
	}
	n.conn, n.transport, n.carried = d.conn, d.transport, d.carried
	released := n.released
	close(n.ready)
	p.mu.Unlock()
	go n.serve(p)
	if released { // every asker gave up meanwhile
		n.conn.Close()
	}
}

// retain adds a reference to n, which the caller holds one of.
func (p *pool) retain(n *node) {
	p.mu.Lock()
	n.refs++
	p.mu.Unlock()
}

// release drops a reference to n; the last one closes n's connection and
// releases its parent.
func (p *pool) release(n *node) {
	for n != nil {
		p.mu.Lock()
		n.refs--
		if n.refs > 0 {
			p.mu.Unlock()
			return
		}
		n.released = true
		p.forget(n)
		up := n.conn
		p.mu.Unlock()
		n.cancel()
		if up != nil {
			up.Close()
		}
		n = n.parent
	}
}

// ended takes the connection of n, which ended, out of the pool, and
// tells whoever rides on it (done).
func (p *pool) ended(n *node) {
	p.mu.Lock()
	p.forget(n)
	p.mu.Unlock()
	close(n.done)
}

// forget takes n out of the pool, unless another connection replaced it.
// The caller holds p.mu.
func (p *pool) forget(n *node) {
	if p.conns[n.key] == n {
		delete(p.conns, n.key)
	}
}

// size is the number of connections in the pool.
func (p *pool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}
