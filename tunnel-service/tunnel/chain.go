package tunnel

import (
	"net"
	"sync/atomic"
)

// A hop behind others is reached as ssh -J reaches it: an SSH connection
// to the first jump host, one to the second through a direct-tcpip
// channel of the first's, and so on, the source through the last jump
// host's, the endpoint through the source's. In the pool (pool.go) each of
// these connections is a node whose parent is the one it rides in, so a
// tunnel's path is its endpoint's node and the node's ancestors.
//
// When a hop breaks, every connection inside it ends too, in an order
// that the goroutines serving them (node.serve) and the tunnels' loops may
// see any way round. Each node's transport (its TCP connection, or the
// channel of its parent) records the first error a read met
// (watchedConn), and a node closed because its keepalives went unanswered
// records why before it is closed; the outermost node of the path that
// broke is why the path is down (broken), whichever connection was seen
// to end. Both records are set before the hop's connection ends, and so
// before any connection inside it does.

// broken returns why the outermost connection of n's path, from the first
// hop to n itself, broke or was closed as dead, or nil when none did. A
// connection closed because nobody uses it any more records nothing.
func (n *node) broken() *failure {
	if n == nil {
		return nil
	}
	if f := n.parent.broken(); f != nil {
		return f
	}
	if f := n.failure.Load(); f != nil {
		return f
	}
	if err := n.transport.broken(); err != nil {
		return asFailure(err, n.what)
	}
	return nil
}

// cause is why n's connection ended: the outermost hop of its path that
// broke (broken), else n's own end.
func (n *node) cause() *failure {
	if f := n.broken(); f != nil {
		return f
	}
	return asFailure(n.conn.Wait(), n.what)
}

// outermostMissed returns the outermost connection of n's path whose
// keepalive is unanswered after a whole interval; n when no other is.
// Each connection rides in the one before it, so when n is found dead,
// that one is what hung.
func (n *node) outermostMissed() *node {
	if n.parent != nil {
		if o := n.parent.outermostMissed(); o.keeper.missed.Load() > 0 {
			return o
		}
	}
	return n
}

// watchedConn is a hop's transport, which records the first error a read
// met unless the service closed it itself.
type watchedConn struct {
	net.Conn
	closing atomic.Bool
	err     atomic.Pointer[error]
}

func (w *watchedConn) Read(b []byte) (int, error) {
	n, err := w.Conn.Read(b)
	if err != nil && !w.closing.Load() {
		w.err.CompareAndSwap(nil, &err)
	}
	return n, err
}

func (w *watchedConn) Close() error {
	w.closing.Store(true)
	return w.Conn.Close()
}

func (w *watchedConn) broken() error {
	if w == nil {
		return nil
	}
	if p := w.err.Load(); p != nil {
		return *p
	}
	return nil
}
