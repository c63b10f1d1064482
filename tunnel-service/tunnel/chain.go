package tunnel

import (
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/ssh"
)

// A source behind jump hosts is reached as ssh -J reaches it: an SSH
// connection to the first jump host, one to the second through a
// direct-tcpip channel of the first's, and so on; the source's through a
// channel of the last's. chained holds the jump hosts' connections with
// the source's, as the Conn of the source's sshConn, so that a tunnel
// without jump hosts (whose source's Conn is x/crypto's own) costs what it
// always did: its link, loop and keepalives are the same, and an idle
// tunnel's loop (loop.go) serves the source and the endpoint as before.
//
// A chained tunnel has one goroutine more per jump host, which serves what
// the hop's peer sends (refusing it, as the loop does for the source) and
// the requests of the channel the next hop rides in. The jump hosts'
// keepalives are the loop's, ticked before the source's (keepalive.go).
//
// When a jump host breaks, every connection inside it ends too, in an
// order that the loop may see any way round. Each jump host's transport
// (its TCP connection, or the channel of the hop before it), and the
// source's, records the first error a read met (watchedConn); the
// outermost hop whose transport broke is why the tunnel is down (broken),
// whatever connection the loop saw end. The record is set before the hop's
// connection ends, and so before any connection inside it does. (A
// tunnel without jump hosts does not watch its source: that would cost
// every tunnel a wrapper; it names whichever of its two connections the
// loop saw end first, as it always did.)

// chained is a source's SSH connection (the embedded Conn) with the jump
// hosts it rides on.
type chained struct {
	ssh.Conn
	jumps []jump // first hop first
	// source is the source's transport, a channel of the last jump host's
	// connection, and what names the source.
	source     *watchedConn
	sourceWhat string
	// keepers are the jump hosts' keepalive keepers, one per hop, set by
	// startKeepalives.
	keepers []keeper
	served  sync.WaitGroup
}

// jump is one jump host's connection.
type jump struct {
	c         *sshConn
	transport *watchedConn
	// next are the requests of the channel the next hop rides in.
	next <-chan *ssh.Request
}

// Close closes the source's connection, then the jump hosts' from the
// innermost outwards, and waits for the goroutines serving them.
func (ch *chained) Close() error {
	var err error
	if ch.Conn != nil {
		err = ch.Conn.Close()
	}
	for i := len(ch.jumps) - 1; i >= 0; i-- {
		if c := ch.jumps[i].c; c != nil {
			c.Close()
		}
	}
	ch.served.Wait()
	return err
}

// serve starts serving every jump host's connection.
func (ch *chained) serve() {
	ch.served.Add(len(ch.jumps))
	for i := range ch.jumps {
		go ch.jumps[i].serve(&ch.served)
	}
}

// serve refuses the channels and requests the jump host's peer sends, as
// ssh.Client and the tunnel's loop do, until its connection ends. Left
// unserved, they would stall the connection once 16 queue up.
func (j *jump) serve(done *sync.WaitGroup) {
	defer done.Done()
	chans, reqs, next := j.c.chans, j.c.reqs, j.next
	for chans != nil || reqs != nil || next != nil {
		select {
		case nc, ok := <-chans:
			if !ok {
				chans = nil
				continue
			}
			refuseChannel(nc)
		case r, ok := <-reqs:
			if !ok {
				reqs = nil
				continue
			}
			refuseRequest(r)
		case r, ok := <-next:
			if !ok {
				next = nil
				continue
			}
			refuseRequest(r)
		}
	}
}

// broken returns why the outermost hop whose connection broke did, of the
// jump hosts and then the source, or nil when none did (or there are no
// jump hosts). Only the hops connected count: a hop whose handshake failed
// says why itself.
func (ch *chained) broken() *failure {
	if ch == nil {
		return nil
	}
	for i := range ch.jumps {
		j := &ch.jumps[i]
		if j.c == nil {
			return nil
		}
		if err := j.transport.broken(); err != nil {
			return asFailure(err, j.c.what)
		}
	}
	if ch.source != nil && ch.Conn != nil { // the source connected
		if err := ch.source.broken(); err != nil {
			return asFailure(err, ch.sourceWhat)
		}
	}
	return nil
}

// watchedConn is a jump host's transport, which records the first error a
// read met unless the tunnel closed it itself.
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
	if p := w.err.Load(); p != nil {
		return *p
	}
	return nil
}
