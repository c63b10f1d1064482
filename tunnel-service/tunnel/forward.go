package tunnel

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// forward is a remote forward: the endpoint listens on
// 127.0.0.1:endpointPort and every connection made there is carried to
// the source's 127.0.0.1:sourcePort.
type forward struct {
	link       *link
	listener   net.Listener
	sourceAddr string
	log        *slog.Logger
	conns      sync.WaitGroup
}

// listen asks the endpoint to listen. The endpoint refusing (the port is
// taken, or forwarding is not allowed there) is a port_conflict.
func listen(l *link, endpointPort, sourcePort int, log *slog.Logger) (*forward, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(endpointPort))
	ln, err := l.endpoint.Listen("tcp", addr)
	if err != nil {
		if isNetwork(err) {
			return nil, asFailure(err, "endpoint")
		}
		return nil, fail(sshdeck.TunnelErrPortConflict, true, err,
			"the endpoint refused to listen on %s: the port is taken, or the endpoint does not allow remote forwarding", addr)
	}
	return &forward{
		link:       l,
		listener:   ln,
		sourceAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(sourcePort)),
		log:        log,
	}, nil
}

// serve accepts connections until the listener closes, which happens when
// the endpoint connection ends or close is called.
func (f *forward) serve() error {
	for {
		conn, err := f.listener.Accept()
		if err != nil {
			return asFailure(err, "endpoint")
		}
		f.conns.Add(1)
		go func() {
			defer f.conns.Done()
			f.carry(conn)
		}()
	}
}

// carry copies one connection to the source's port and back.
func (f *forward) carry(in net.Conn) {
	out, err := f.link.source.Dial("tcp", f.sourceAddr)
	if err != nil {
		// The tunnel is fine; nothing listens on the source's port. The
		// client sees its connection closed, as with ssh -R.
		f.log.Warn("source port refused a forwarded connection", "source_addr", f.sourceAddr, "error", err.Error())
		in.Close()
		return
	}
	pipe(in, out)
}

// cancelTimeout bounds the wait for the endpoint to confirm it stopped
// listening: a peer that stopped answering must not hold up a teardown.
const cancelTimeout = 5 * time.Second

// close stops listening on the endpoint (cancel-tcpip-forward, so the port
// is free before any redial), then closes both SSH connections, which ends
// every carried connection.
func (f *forward) close() {
	cancelled := make(chan struct{})
	go func() {
		f.listener.Close()
		close(cancelled)
	}()
	select {
	case <-cancelled:
	case <-time.After(cancelTimeout):
	}
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
