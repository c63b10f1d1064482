package tunnel

import (
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/netpipe"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// forward is a remote forward, as ssh -R: the endpoint listens on
// 127.0.0.1:endpointPort and every connection made there is carried to
// the source's 127.0.0.1:sourcePort. The endpoint announces each
// connection by opening a forwarded-tcpip channel on its connection,
// which the goroutine serving it (node.dispatch) hands to the forward of
// the port it names: an endpoint's connection shared by several tunnels
// carries a forward for each.
type forward struct {
	node         *node // the endpoint's connection; its parent is the source's
	endpointPort int
	sourcePort   int
	// meter counts the bytes carried each way and the connections open
	// (the run's: it outlives the forward of each attempt).
	meter *meter
	log   *slog.Logger
	// conns counts the connections being carried; node.dispatch adds to
	// it under the node's lock, so that after unregister nothing does.
	conns sync.WaitGroup

	mu     sync.Mutex
	closed bool
	// live are the channels of the connections being carried, each from
	// the endpoint with its pair to the source: closing the forward
	// closes them, the shared connections staying up.
	live map[*chanConn]*chanConn
}

// loopback is where the forward listens on the endpoint and connects on
// the source.
const loopback = "127.0.0.1"

// tcpipForward is the payload of the tcpip-forward and
// cancel-tcpip-forward global requests (RFC 4254 7.1).
type tcpipForward struct {
	Addr string
	Port uint32
}

// forwardedTCPIP is the payload of a forwarded-tcpip channel open (RFC
// 4254 7.2): the address it was connected to, and who connected.
type forwardedTCPIP struct {
	Addr       string
	Port       uint32
	OriginAddr string
	OriginPort uint32
}

// listen asks the endpoint, over n, to listen. The endpoint refusing (the
// port is taken, or forwarding is not allowed there), or another tunnel
// on the same connection having the port, is this tunnel's port_conflict
// alone.
func listen(n *node, endpointPort, sourcePort int, mt *meter, log *slog.Logger) (*forward, error) {
	f := &forward{node: n, endpointPort: endpointPort, sourcePort: sourcePort, meter: mt, log: log}
	if !n.register(f) {
		return nil, f.conflict()
	}
	ok, _, err := n.conn.SendRequest("tcpip-forward", true, f.request())
	if err != nil || !ok {
		n.unregister(f)
	}
	if err != nil {
		return nil, n.cause()
	}
	if !ok {
		return nil, f.conflict()
	}
	return f, nil
}

func (f *forward) conflict() *failure {
	return fail(sshdeck.TunnelErrPortConflict, true, nil,
		"the endpoint refused to listen on %s: the port is taken, or the endpoint does not allow remote forwarding",
		net.JoinHostPort(loopback, strconv.Itoa(f.endpointPort)))
}

func (f *forward) request() []byte {
	return ssh.Marshal(&tcpipForward{Addr: loopback, Port: uint32(f.endpointPort)})
}

// carry connects to the source's port, then accepts the endpoint's
// channel and copies between the two. It runs in a goroutine of its own
// (node.dispatch), so that the connection's goroutine never waits on the
// source.
func (f *forward) carry(nc ssh.NewChannel) {
	defer f.conns.Done()
	out, outReqs, err := openDirect(f.node.parent.conn, loopback, f.sourcePort)
	if err != nil {
		// The tunnel is fine; nothing listens on the source's port. The
		// client sees its connection closed, as with ssh -R.
		f.log.Warn("source port refused a forwarded connection", "source_port", f.sourcePort, "error", err.Error())
		nc.Reject(ssh.ConnectionFailed, "the source's port refused the connection")
		return
	}
	ch, inReqs, err := nc.Accept()
	if err != nil {
		out.Close()
		return
	}
	in := &chanConn{ch}
	if !f.track(in, out) {
		in.Close()
		out.Close()
		return
	}
	// Neither peer sends requests on these channels; discarded, so that
	// one that does cannot stall its connection.
	go ssh.DiscardRequests(inReqs)
	go ssh.DiscardRequests(outReqs)
	// in is the endpoint's client, out the source's port.
	f.meter.active.Add(1)
	netpipe.PipeCounted(in, out, &f.meter.bytesIn, &f.meter.bytesOut)
	f.meter.active.Add(-1)
	f.mu.Lock()
	delete(f.live, in)
	f.mu.Unlock()
}

// track records a connection being carried; false once the forward is
// closed.
func (f *forward) track(in, out *chanConn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	if f.live == nil {
		f.live = map[*chanConn]*chanConn{}
	}
	f.live[in] = out
	return true
}

// cancelTimeout bounds the wait for the endpoint to confirm it stopped
// listening: a peer that stopped answering must not hold up a teardown.
const cancelTimeout = 5 * time.Second

// close stops listening on the endpoint (cancel-tcpip-forward, answered
// before the connection carries another request, so the port is free
// before any redial on it), then ends every connection the forward
// carries. The connections stay up for the other tunnels on them: the
// caller releases its hold on them.
func (f *forward) close() {
	n := f.node
	n.unregister(f)
	answered := make(chan struct{})
	go func() {
		n.conn.SendRequest("cancel-tcpip-forward", true, f.request())
		close(answered)
	}()
	timer := time.NewTimer(cancelTimeout)
	select {
	case <-answered:
	case <-n.done:
	case <-timer.C: // the keepalives find a peer that hung
	}
	timer.Stop()
	f.mu.Lock()
	f.closed = true
	for in, out := range f.live {
		in.Close()
		out.Close()
	}
	f.mu.Unlock()
	f.conns.Wait()
}
