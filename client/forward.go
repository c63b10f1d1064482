package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/shared/forwarding"
	"github.com/sshdeck/sshdeck/shared/netpipe"
)

// Forward carries connections made on the user's machine to targets
// reached from a stored host, over one session with the tunnel service
// (`sshdeck forward -L/-D`, API.md "Forwards to the user's own machine").
// It listens, dials the session, and serves until its context is done,
// redialing the session whenever it ends.
type Forward struct {
	Client *Client
	// Via is the stored host (id or name) the service opens every
	// connection from.
	Via string
	// Log receives one human line per event (the forward up, the session
	// lost and back, a connection refused); nil discards them. Calls do
	// not overlap.
	Log func(msg string)

	// sessionWait bounds how long a new connection waits for a session
	// while the forward redials; zero is defaultSessionWait.
	sessionWait time.Duration
	// listening, when set, is told the address listened on (tests listen
	// on port 0).
	listening func(net.Addr)

	logMu sync.Mutex
}

const (
	// defaultSessionWait: a connection made while the forward redials
	// waits this long for the session, then is closed rather than left
	// hanging.
	defaultSessionWait = 30 * time.Second
	// forwardDialTimeout bounds one dial of the session.
	forwardDialTimeout = 30 * time.Second
	// forwardOpenTimeout bounds the service's answer to one connection;
	// the service gives up on a target well before (its own timeout).
	forwardOpenTimeout = 2 * time.Minute
)

// ForwardLocal is `sshdeck forward -L [bind:]port:target --via HOST`:
// every connection to bind ("[address:]port", the address 127.0.0.1 by
// default, "*" or empty for every interface) is carried to target
// (host:port) from via. It returns nil once ctx is done, or an error: the
// address in use, the first dial refused (IsUnauthorized for a 401) or
// the service unreachable, or a redial the service refused for good.
func (c *Client) ForwardLocal(ctx context.Context, bind, target, via string, log func(msg string)) error {
	return (&Forward{Client: c, Via: via, Log: log}).Local(ctx, bind, target)
}

// ForwardSOCKS is `sshdeck forward -D [bind:]port --via HOST`: a SOCKS5
// server on bind whose every CONNECT is carried from via. Its errors are
// ForwardLocal's.
func (c *Client) ForwardSOCKS(ctx context.Context, bind, via string, log func(msg string)) error {
	return (&Forward{Client: c, Via: via, Log: log}).SOCKS(ctx, bind)
}

// Local serves a forward to one target (ssh -L); see ForwardLocal.
func (f *Forward) Local(ctx context.Context, bind, target string) error {
	if _, _, err := forwarding.SplitTarget(target); err != nil {
		return err
	}
	return f.run(ctx, bind, target)
}

// SOCKS serves a SOCKS5 forward (ssh -D); see ForwardSOCKS.
func (f *Forward) SOCKS(ctx context.Context, bind string) error {
	return f.run(ctx, bind, "")
}

// forwardRun is one run of a forward: its target ("" for SOCKS) and its
// sessions.
type forwardRun struct {
	*Forward
	target   string
	sessions *forwardSessions
}

func (f *Forward) run(ctx context.Context, bind, target string) error {
	if f.Client.TunnelURL == "" {
		return ErrNoTunnelURL
	}
	addr, err := bindAddress(bind)
	if err != nil {
		return err
	}
	// Listen first: an address in use is the user's to fix, whatever the
	// service would say.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	r := &forwardRun{Forward: f, target: target}
	first, err := r.dial(ctx)
	if err != nil {
		return err
	}
	r.sessions = newForwardSessions(first)
	if target != "" {
		r.log("forwarding %s → %s via %s", ln.Addr(), target, f.Via)
	} else {
		r.log("forwarding SOCKS5 on %s via %s", ln.Addr(), f.Via)
	}
	if f.listening != nil {
		f.listening(ln.Addr())
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kept := make(chan error, 1)
	go func() {
		kept <- r.keep(ctx, first)
		cancel() // a redial refused for good ends the forward
	}()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var conns sync.WaitGroup
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				break
			}
			// Out of file descriptors, most likely: the connections
			// open will free some.
			r.log("accepting a connection on %s failed (%v); retrying", ln.Addr(), err)
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		conns.Go(func() { r.carry(ctx, conn) })
	}
	cancel()
	err = <-kept
	conns.Wait()
	return err
}

// carry serves one local connection: SOCKS's handshake, if a SOCKS
// forward, then the connection opened through the session, and the bytes
// both ways until either end closes. The local connection is closed on
// every way out, and when the forward ends.
func (r *forwardRun) carry(ctx context.Context, local net.Conn) {
	stop := context.AfterFunc(ctx, func() { local.Close() })
	defer stop()
	defer local.Close()
	target := r.target
	if target == "" {
		var err error
		if target, err = socksHandshake(local); err != nil {
			if ctx.Err() == nil && !isEOF(err) {
				r.log("%s: %v", local.RemoteAddr(), err)
			}
			return
		}
	}
	remote, err := r.open(ctx, target)
	if err != nil {
		if r.target == "" {
			socksReply(local, socksReplyFor(err))
		}
		if ctx.Err() == nil {
			r.logFailure(local, target, err)
		}
		return
	}
	if r.target == "" {
		if err := socksReply(local, socksSucceeded); err != nil {
			remote.Close()
			return
		}
	}
	netpipe.Pipe(local, remote)
}

// open opens a connection to target through the current session, waiting
// for the next session (up to sessionWait) while the forward redials.
func (r *forwardRun) open(ctx context.Context, target string) (net.Conn, error) {
	wait := r.sessionWait
	if wait == 0 {
		wait = defaultSessionWait
	}
	giveUp := time.NewTimer(wait)
	defer giveUp.Stop()
	for {
		s, err := r.sessions.get(ctx, giveUp.C, wait)
		if err != nil {
			return nil, err
		}
		octx, cancel := context.WithTimeout(ctx, forwardOpenTimeout)
		conn, err := s.Open(octx, target)
		timedOut := octx.Err() != nil && ctx.Err() == nil
		cancel()
		switch {
		case errors.Is(err, forwarding.ErrSessionClosed) && sessionDone(s):
			continue // the session ended under it: the next one will do
		case err != nil && timedOut:
			return nil, fmt.Errorf("the tunnel service did not answer within %s", forwardOpenTimeout)
		}
		return conn, err
	}
}

// logFailure tells the user of a connection that did not open, with the
// service's sentence when it refused it.
func (r *forwardRun) logFailure(local net.Conn, target string, err error) {
	var refused *forwarding.RefusedError
	if errors.As(err, &refused) {
		r.log("%s → %s: refused: %s", local.RemoteAddr(), target, refused.Message)
		return
	}
	r.log("%s → %s: %v", local.RemoteAddr(), target, err)
}

// dial opens a session of the forward: the service checks the token, the
// via host and, for a forward to one target, the target, before
// upgrading. A refusal is the contract's *Error, whose sentence names the
// via host or the target; anything else means the service was not reached.
func (r *forwardRun) dial(ctx context.Context) (*forwarding.Session, error) {
	c := r.Client
	q := url.Values{"via": {r.Via}}
	if r.target != "" {
		q.Set("target", r.target)
	}
	u, err := endpoint(c.TunnelURL, forwarding.Path, q)
	if err != nil {
		return nil, fmt.Errorf("tunnel service URL: %w", err)
	}
	dctx, cancel := context.WithTimeout(ctx, forwardDialTimeout)
	defer cancel()
	s, resp, err := forwarding.Dial(dctx, c.HTTP, u, c.AuthHeader())
	switch {
	case err == nil:
		return s, nil
	case resp != nil && resp.StatusCode != http.StatusSwitchingProtocols:
		return nil, ErrorOf(resp) // its sentence names the via host or the target
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("cannot reach the tunnel service at %s: %w", c.TunnelURL, err)
}

// endsForward reports whether a redial's error is final: the service
// answered that the token, the via host or the target will not do (a 4xx
// other than a timeout or a rate limit), which retrying does not mend.
func endsForward(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Status/100 == 4 && e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests
}

func (f *Forward) log(format string, args ...any) {
	if f.Log == nil {
		return
	}
	f.logMu.Lock()
	defer f.logMu.Unlock()
	f.Log(fmt.Sprintf(format, args...))
}

// bindAddress reads ssh's [bind_address:]port: a port alone listens on
// the loopback only; "*" or an empty address on every interface.
func bindAddress(bind string) (string, error) {
	host, port := "127.0.0.1", bind
	if i := strings.LastIndex(bind, ":"); i >= 0 {
		host, port = bind[:i], bind[i+1:]
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if host == "*" {
			host = ""
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("bind address %q: want [address:]port, the port 0..65535", bind)
	}
	return net.JoinHostPort(host, port), nil
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
