package tunnel

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// forward is a remote forward, as ssh -R: the endpoint listens on
// 127.0.0.1:endpointPort and every connection made there is carried to
// the source's 127.0.0.1:sourcePort. The endpoint announces each
// connection by opening a forwarded-tcpip channel, which the tunnel's
// loop hands to accept (ssh.Client's listener would hold an Accept loop
// and two goroutines of its own per tunnel).
type forward struct {
	link         *link
	endpointPort int
	sourcePort   int
	log          *slog.Logger
	conns        sync.WaitGroup
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

// listen asks the endpoint to listen. The endpoint refusing (the port is
// taken, or forwarding is not allowed there) is a port_conflict.
func listen(l *link, endpointPort, sourcePort int, log *slog.Logger) (*forward, error) {
	f := &forward{link: l, endpointPort: endpointPort, sourcePort: sourcePort, log: log}
	ok, _, err := l.endpoint.SendRequest("tcpip-forward", true, f.request())
	if err != nil {
		return nil, asFailure(err, "endpoint")
	}
	if !ok {
		return nil, fail(sshdeck.TunnelErrPortConflict, true, nil,
			"the endpoint refused to listen on %s: the port is taken, or the endpoint does not allow remote forwarding",
			net.JoinHostPort(loopback, strconv.Itoa(endpointPort)))
	}
	return f, nil
}

func (f *forward) request() []byte {
	return ssh.Marshal(&tcpipForward{Addr: loopback, Port: uint32(f.endpointPort)})
}

// accept carries the connection the endpoint announced in nc, in a
// goroutine of its own so that the tunnel's loop never waits on the
// source. A channel for any other address is refused, as RFC 4254 says
// a spurious one must be.
func (f *forward) accept(nc ssh.NewChannel) {
	var p forwardedTCPIP
	if nc.ChannelType() != "forwarded-tcpip" || ssh.Unmarshal(nc.ExtraData(), &p) != nil ||
		p.Addr != loopback || p.Port != uint32(f.endpointPort) {
		nc.Reject(ssh.Prohibited, "no forward for this address")
		return
	}
	f.conns.Add(1)
	go func() {
		defer f.conns.Done()
		f.carry(nc)
	}()
}

// carry connects to the source's port, then accepts the endpoint's
// channel and copies between the two.
func (f *forward) carry(nc ssh.NewChannel) {
	out, outReqs, err := openDirect(f.link.source, loopback, f.sourcePort)
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
	// Neither peer sends requests on these channels; discarded, so that
	// one that does cannot stall its connection.
	go ssh.DiscardRequests(inReqs)
	go ssh.DiscardRequests(outReqs)
	pipe(&chanConn{ch}, out)
}

// cancelTimeout bounds the wait for the endpoint to confirm it stopped
// listening: a peer that stopped answering must not hold up a teardown.
const cancelTimeout = 5 * time.Second

// close stops listening on the endpoint (cancel-tcpip-forward, so the port
// is free before any redial), then closes both SSH connections, which ends
// every carried connection.
func (f *forward) close() {
	// Closing the connections is what ends a request left unanswered.
	timer := time.AfterFunc(cancelTimeout, f.link.Close)
	f.link.endpoint.SendRequest("cancel-tcpip-forward", true, f.request())
	timer.Stop()
	f.link.Close()
	f.conns.Wait()
}

// halfCloser is a connection whose sending side closes on its own: SSH
// channels (EOF) and TCP connections (FIN).
type halfCloser interface {
	CloseWrite() error
}

// pipe copies a to b and b to a. When one side finishes sending, the other
// is told so (half-close) and may still answer; both close once both
// directions are done.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, err := io.Copy(dst, src)
		if hc, ok := dst.(halfCloser); ok && err == nil {
			hc.CloseWrite()
			return
		}
		// A broken side, or one that cannot half-close: end both.
		a.Close()
		b.Close()
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}
