package tunnel

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// node is one SSH connection of the pool (pool.go): to a jump host, a
// source or an endpoint, over TCP when it is a first hop, else through a
// channel of its parent's connection. Every tunnel whose path goes
// through the same hops with the same logins holds it.
//
// One goroutine serves it (serve) for as long as it is up: it answers
// what the peer sends, hands the endpoint's forwarded-tcpip channels to
// the tunnel whose port they name, and runs the keepalives. When the
// connection ends, done closes: every tunnel on it (and every connection
// inside it, whose transport it carried) goes through its own failure.
type node struct {
	key    connKey
	parent *node  // the connection this one rides in; nil for a first hop
	what   string // how messages name it: hop.name
	jump   int    // hop.jump: its place among the jump hosts, from 1

	// Guarded by the pool's lock.
	refs     int  // the tunnels holding it, and the nodes riding in it
	released bool // refs fell to 0: it is closed, or its dial closes it
	err      error
	cancel   context.CancelFunc // ends the dial

	ready chan struct{} // closed once the dial ended: conn, or err
	done  chan struct{} // closed once the connection ended (serve returned)

	// Set by the dial, before ready closes.
	conn      *sshConn
	transport *watchedConn
	carried   <-chan *ssh.Request // the requests of the parent's channel it rides in
	keeper    keeper

	// failure, once set, is why the service closed the connection (its
	// keepalives, or an inner connection's, found it dead); set before
	// the close, so that everything inside reads it (broken).
	failure atomic.Pointer[failure]

	mu sync.Mutex
	// forwards are the remote forwards asked on this connection (an
	// endpoint's), by port: whose forwarded-tcpip channels are whose.
	forwards map[uint32]*forward

	// agent is the forwarded agent of the direct tunnels' clients on this
	// connection (a source's): agent.go.
	agent agentSlot
}

// serve is the connection's goroutine until the connection ends.
func (n *node) serve(p *pool) {
	ticker := time.NewTicker(n.keeper.every)
	answers := make(chan error, 1)
	chans, reqs, carried := n.conn.chans, n.conn.reqs, n.carried
	for chans != nil && reqs != nil {
		select {
		case nc, ok := <-chans:
			if !ok {
				chans = nil
				continue
			}
			n.dispatch(nc)
		case r, ok := <-reqs:
			if !ok {
				reqs = nil
				continue
			}
			refuseRequest(r)
		case r, ok := <-carried:
			if !ok {
				carried = nil
				continue
			}
			refuseRequest(r)
		case err := <-answers:
			n.keeper.answered()
			if err != nil {
				n.kill(asFailure(err, n.what))
			}
		case <-ticker.C:
			if n.keeper.tick(n.conn, answers) {
				outer := n.outermostMissed()
				outer.kill(outer.keeper.dead(outer.what))
			}
		}
	}
	ticker.Stop()
	p.ended(n)
}

// kill records why the connection is dead and closes it, which ends every
// connection inside it too.
func (n *node) kill(f *failure) {
	n.failure.CompareAndSwap(nil, f)
	n.conn.Close()
}

// dispatch hands a forwarded-tcpip channel to the forward of the port it
// names, and refuses any other channel: one for a port no tunnel forwards
// is spurious, and RFC 4254 says to refuse it.
func (n *node) dispatch(nc ssh.NewChannel) {
	if nc.ChannelType() == agentChannelType {
		go n.agent.serve(nc)
		return
	}
	if nc.ChannelType() != "forwarded-tcpip" {
		refuseChannel(nc)
		return
	}
	var p forwardedTCPIP
	var f *forward
	if ssh.Unmarshal(nc.ExtraData(), &p) == nil && p.Addr == loopback {
		n.mu.Lock()
		if f = n.forwards[p.Port]; f != nil {
			f.conns.Add(1) // under the lock: close unregisters before it waits
		}
		n.mu.Unlock()
	}
	if f == nil {
		nc.Reject(ssh.Prohibited, "no forward for this address")
		return
	}
	go f.carry(nc)
}

// register reserves the port for f; false when another tunnel on this
// connection has it.
func (n *node) register(f *forward) bool {
	port := uint32(f.endpointPort)
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, taken := n.forwards[port]; taken {
		return false
	}
	if n.forwards == nil {
		n.forwards = map[uint32]*forward{}
	}
	n.forwards[port] = f
	return true
}

func (n *node) unregister(f *forward) {
	port := uint32(f.endpointPort)
	n.mu.Lock()
	if n.forwards[port] == f {
		delete(n.forwards, port)
	}
	n.mu.Unlock()
}
