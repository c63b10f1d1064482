package forwarding

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/sshdeck/sshdeck/shared/netpipe"
)

// Dialer opens the connection to target (host:port, as SplitTarget
// takes it) on the service's side. Its refusals are *RefusedError; any
// other error is answered as CodeInternal, without its text, and logged.
// Closing the connection it returns is the end of the forwarded
// connection: a Dialer that counts connections counts down there.
type Dialer func(ctx context.Context, target string) (net.Conn, error)

// requestTimeout bounds how long a new stream may take to send its
// request.
const requestTimeout = 10 * time.Second

// Serve is the service's end of one forward's session over conn (the
// accepted WebSocket as a net.Conn): every stream the client opens is a
// connection that dial opens and Serve then carries, one pooled buffer per
// direction while bytes move (netpipe). It returns once the session has
// ended (the client went, keepalives failed, or ctx is done), with every
// connection of it closed.
func Serve(ctx context.Context, conn net.Conn, dial Dialer, log *slog.Logger) error {
	mux, err := yamux.Server(conn, muxConfig())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { mux.Close() })
	defer stop()
	for {
		stream, err := mux.AcceptStream()
		if err != nil {
			mux.Close()
			if errors.Is(err, yamux.ErrSessionShutdown) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		go serveStream(ctx, stream, dial, log)
	}
}

// serveStream reads one stream's request, opens its connection and
// carries it.
func serveStream(ctx context.Context, stream *yamux.Stream, dial Dialer, log *slog.Logger) {
	var req request
	stream.SetReadDeadline(time.Now().Add(requestTimeout))
	err := readFrame(stream, &req)
	stream.SetReadDeadline(time.Time{})
	if err != nil {
		stream.Close()
		return
	}
	var target net.Conn
	if _, _, err = SplitTarget(req.Target); err != nil {
		err = &RefusedError{Code: CodeInvalid, Message: err.Error()}
	} else {
		target, err = dial(ctx, req.Target)
	}
	if err != nil {
		var refused *RefusedError
		if !errors.As(err, &refused) {
			log.Error("forward: opening a connection failed", "target", req.Target, "err", err)
			refused = Refused(CodeInternal, "%s: the service failed to open the connection (it is logged)", req.Target)
		}
		writeFrame(stream, reply{Code: refused.Code, Error: refused.Message})
		stream.Close()
		return
	}
	if err := writeFrame(stream, reply{}); err != nil {
		target.Close()
		stream.Close()
		return
	}
	netpipe.Pipe(streamConn{stream}, target)
}
