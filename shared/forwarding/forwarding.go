// Package forwarding is the wire protocol of sshdeck's forwards to the
// user's own machine (`sshdeck forward -L/-D`): one WebSocket per forward,
// from the client to {tunnel_url}/ssh/forward, carrying every connection
// of the forward as a stream of one multiplexed session.
//
// The WebSocket is github.com/coder/websocket: maintained, context-aware,
// dependency-free, and it hands the socket over as a net.Conn
// (websocket.NetConn), which is all a multiplexer needs. The multiplexer is
// github.com/hashicorp/yamux (Consul, Nomad, Vault and frp carry their
// traffic over it): per-stream flow control, so that one slow connection
// never stalls the others; half-close; and its own keepalive pings, which
// are what keeps an idle forward alive through a load balancer's idle
// timeout (KeepAlive).
//
// The client opens a stream per connection and sends one request frame,
// {"target": "host:port"}; the service answers one reply frame, {} or
// {"code", "error"}, and from then on the stream carries the connection's
// bytes. A frame is a 2-byte big-endian length and that much JSON, so that
// neither side reads past it.
package forwarding

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/yamux"
)

// Path is the forward's WebSocket route on the tunnel service. Its query
// names the host the service connects from, via=<host id or name>, and,
// for a forward to one target (-L), target=<host:port>, which the service
// checks before the WebSocket is upgraded.
const Path = "/ssh/forward"

// Subprotocol is the WebSocket subprotocol both ends ask for.
const Subprotocol = "sshdeck-forward.v1"

// KeepAlive is how often each end pings the other over an idle session:
// well inside the idle timeout of the ALB in front of the tunnel service
// (config.TunnelIdleTimeout, 60 s), so that an idle forward survives it,
// and often enough that a dead peer is noticed within a minute or so.
const KeepAlive = 20 * time.Second

// Codes of a connection the service refused; the client maps each to a
// SOCKS5 reply (RFC 1928 §6) and a message.
const (
	// CodeDenied: the target resolves into a denied range (SOCKS 0x02).
	CodeDenied = "denied"
	// CodeUnresolvable: the target's name does not resolve (SOCKS 0x04).
	CodeUnresolvable = "unresolvable"
	// CodeRefused: the via host reached the target's address and was
	// refused, or its sshd would not open the connection (SOCKS 0x05).
	CodeRefused = "refused"
	// CodeUnreachable: the service could not reach the via host (or a
	// jump host on the way) (SOCKS 0x03).
	CodeUnreachable = "unreachable"
	// CodeTimeout: the connection did not open in time (SOCKS 0x04).
	CodeTimeout = "timeout"
	// CodeLimitExceeded: the user has as many forwarded connections open
	// as the service allows (SOCKS 0x01).
	CodeLimitExceeded = "limit_exceeded"
	// CodeInvalid: the request itself is wrong (SOCKS 0x01).
	CodeInvalid = "invalid"
	// CodeInternal: anything else; the service logged it (SOCKS 0x01).
	CodeInternal = "internal"
)

// RefusedError is a connection the service would not open, with its code
// and the service's sentence, which names the target.
type RefusedError struct {
	Code    string
	Message string
}

func (e *RefusedError) Error() string { return e.Message }

// Refused returns a RefusedError with a formatted message.
func Refused(code, format string, args ...any) *RefusedError {
	return &RefusedError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// request is the first frame of a stream, from the client.
type request struct {
	Target string `json:"target"`
}

// reply is the service's answer to it: empty when the connection is open.
type reply struct {
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// maxFrame bounds a frame: a target is a host name (at most 253 bytes) and
// a port, a reply one sentence.
const maxFrame = 4 << 10

func writeFrame(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(body) > maxFrame {
		return fmt.Errorf("forwarding: a frame of %d bytes, over %d", len(body), maxFrame)
	}
	return writeAll(w, binary.BigEndian.AppendUint16(nil, uint16(len(body))), body)
}

// writeAll writes the frame's parts as one write, so that it goes out as
// one multiplexer frame.
func writeAll(w io.Writer, head, body []byte) error {
	_, err := w.Write(append(head, body...))
	return err
}

func readFrame(r io.Reader, v any) error {
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint16(head[:])
	if n > maxFrame {
		return fmt.Errorf("forwarding: a frame of %d bytes, over %d", n, maxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// SplitTarget parses "host:port": a host name or an IP literal (IPv6 in
// brackets) and a port 1..65535.
func SplitTarget(target string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(target)
	if err != nil {
		return "", 0, fmt.Errorf("target %q: want host:port", target)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("target %q: the port must be 1..65535", target)
	}
	if host == "" {
		return "", 0, fmt.Errorf("target %q: no host", target)
	}
	return host, port, nil
}

// muxConfig is both ends' multiplexer settings.
func muxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.KeepAliveInterval = KeepAlive
	c.LogOutput = io.Discard
	// A peer that stops reading (a frozen laptop) fails the session's
	// writes after this long, rather than holding the service's buffers.
	c.ConnectionWriteTimeout = 30 * time.Second
	return c
}

// ErrSessionClosed is Open's error once the session has ended: the
// WebSocket closed, or the keepalives found the peer gone.
var ErrSessionClosed = errors.New("forwarding: the session to the tunnel service ended")

// Session is the client's end of one forward's WebSocket.
type Session struct {
	mux *yamux.Session
}

// NewSession starts the client's end of a session over conn (the
// WebSocket as a net.Conn).
func NewSession(conn net.Conn) (*Session, error) {
	mux, err := yamux.Client(conn, muxConfig())
	if err != nil {
		return nil, err
	}
	return &Session{mux: mux}, nil
}

// Open asks the service for a connection to target (host:port) and
// returns it once the service has opened it. A refusal is a
// *RefusedError; ErrSessionClosed (wrapped) means the session is gone and
// a new one is needed.
func (s *Session) Open(ctx context.Context, target string) (net.Conn, error) {
	stream, err := s.mux.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSessionClosed, err)
	}
	stop := context.AfterFunc(ctx, func() { stream.Close() })
	var rep reply
	err = writeFrame(stream, request{Target: target})
	if err == nil {
		err = readFrame(stream, &rep)
	}
	if !stop() {
		err = ctx.Err()
	}
	switch {
	case err != nil && s.mux.IsClosed():
		err = fmt.Errorf("%w: %v", ErrSessionClosed, err)
	case err == nil && rep.Code != "":
		err = &RefusedError{Code: rep.Code, Message: rep.Error}
	}
	if err != nil {
		stream.Close()
		return nil, err
	}
	return streamConn{stream}, nil
}

// Done is closed once the session has ended.
func (s *Session) Done() <-chan struct{} { return s.mux.CloseChan() }

// Streams is the number of connections the session carries.
func (s *Session) Streams() int { return s.mux.NumStreams() }

// Close ends the session and every connection it carries.
func (s *Session) Close() error { return s.mux.Close() }

// streamConn is a stream as netpipe wants it: yamux's Close sends FIN and
// goes on reading until the peer's, which is a half-close.
type streamConn struct {
	*yamux.Stream
}

func (c streamConn) CloseWrite() error { return c.Stream.Close() }
