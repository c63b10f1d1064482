package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/forwarding"
)

// patience bounds every wait of these tests: generous, since it is only
// ever reached by a failure.
const patience = 20 * time.Second

const testToken = "secret-token"

// fakeTunnel is the service's end of forwards over the real protocol
// (forwarding.Accept and Serve), with the tunnel service's checks before
// the upgrade reduced to what the client tells apart: a 401 for a wrong
// token, a 404 for a via host other than "web", a 400 for a denied -L
// target. Its dialer opens real TCP connections, with "target.test" a
// name of 127.0.0.1, and refuses what the service would.
type fakeTunnel struct {
	url string
	// unavailable answers upgrades 503; unauthorized answers them 401.
	unavailable, unauthorized atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
	// added is closed, and replaced, when a session is added to conns.
	added chan struct{}
}

func newFakeTunnel(t *testing.T) *fakeTunnel {
	t.Helper()
	ft := &fakeTunnel{added: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(ft.serve))
	t.Cleanup(srv.Close)
	ft.url = srv.URL
	return ft
}

func (ft *fakeTunnel) client() *Client {
	return &Client{BaseURL: ft.url, TunnelURL: ft.url, Token: testToken}
}

func answer(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": code})
}

func (ft *fakeTunnel) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case r.URL.Path != forwarding.Path:
		answer(w, 404, "not_found", "no route "+r.URL.Path)
	case ft.unauthorized.Load() || r.Header.Get("Authorization") != "Bearer "+testToken:
		answer(w, 401, "unauthorized", "the token is missing, expired or revoked")
	case q.Get("via") != "web":
		answer(w, 404, "not_found", fmt.Sprintf("via host %q: no host of yours has this name or id", q.Get("via")))
	case strings.HasPrefix(q.Get("target"), "169.254.169.254:"):
		answer(w, 400, "invalid", q.Get("target")+" is in a denied range (link-local)")
	case ft.unavailable.Load():
		answer(w, 503, "internal", "the service is restarting")
	default:
		conn, err := forwarding.Accept(r.Context(), w, r)
		if err != nil {
			return
		}
		ft.mu.Lock()
		ft.conns = append(ft.conns, conn)
		close(ft.added)
		ft.added = make(chan struct{})
		ft.mu.Unlock()
		forwarding.Serve(r.Context(), conn, fakeDial, slog.New(slog.DiscardHandler))
	}
}

// dropSessions ends every session from the service's side, as a deploy
// or a network change would, once it serves n (a client may have its
// session before the handler has recorded it).
func (ft *fakeTunnel) dropSessions(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(patience)
	for {
		ft.mu.Lock()
		if len(ft.conns) >= n {
			break
		}
		added := ft.added
		ft.mu.Unlock()
		select {
		case <-added:
		case <-timeout:
			t.Fatalf("the service never served %d sessions", n)
		}
	}
	defer ft.mu.Unlock()
	for _, c := range ft.conns {
		c.Close()
	}
	ft.conns = nil
}

func fakeDial(ctx context.Context, target string) (net.Conn, error) {
	host, port, _ := net.SplitHostPort(target)
	switch {
	case host == "169.254.169.254":
		return nil, forwarding.Refused(forwarding.CodeDenied, "%s is in a denied range (link-local)", target)
	case host == "nowhere.test":
		return nil, forwarding.Refused(forwarding.CodeUnresolvable, "%s does not resolve", host)
	case strings.HasPrefix(host, "2001:db8:"):
		return nil, forwarding.Refused(forwarding.CodeRefused, "%s refused the connection", target)
	case host == "target.test":
		host = "127.0.0.1"
	}
	return (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, port))
}

// echoServer is the address of an echo service (sshdtest.StartEcho).
func echoServer(t *testing.T) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sshdtest.StartEcho(t)))
}

// eventLog records a forward's events and lets a test wait for one.
type eventLog struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
}

func newEventLog() *eventLog { return &eventLog{changed: make(chan struct{})} }

func (l *eventLog) add(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, msg)
	close(l.changed)
	l.changed = make(chan struct{})
}

// waitFor waits for the nth event (from 1) containing substr.
func (l *eventLog) waitFor(t *testing.T, substr string, nth int) string {
	t.Helper()
	timeout := time.After(patience)
	for {
		l.mu.Lock()
		seen := 0
		for _, line := range l.lines {
			if strings.Contains(line, substr) {
				if seen++; seen == nth {
					l.mu.Unlock()
					return line
				}
			}
		}
		changed, lines := l.changed, strings.Join(l.lines, "\n")
		l.mu.Unlock()
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("no event %q (#%d) in:\n%s", substr, nth, lines)
		}
	}
}

// runningForward is a forward started on a port of its own.
type runningForward struct {
	addr   string
	events *eventLog
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// result waits for the forward to end on its own and returns its error.
func (fw *runningForward) result() error {
	fw.once.Do(func() {
		select {
		case fw.err = <-fw.done:
		case <-time.After(patience):
			fw.err = errors.New("the forward did not end")
		}
	})
	return fw.err
}

// stop ends the forward by its context and returns its error.
func (fw *runningForward) stop() error {
	fw.cancel()
	return fw.result()
}

// startForward runs a forward via "web" (SOCKS when target is empty) and
// waits until it listens; it is stopped at the end of the test.
func startForward(t *testing.T, c *Client, target string, sessionWait time.Duration) *runningForward {
	t.Helper()
	events := newEventLog()
	listening := make(chan net.Addr, 1)
	f := &Forward{Client: c, Via: "web", Log: events.add, sessionWait: sessionWait,
		listening: func(a net.Addr) { listening <- a }}
	ctx, cancel := context.WithCancel(context.Background())
	fw := &runningForward{events: events, cancel: cancel, done: make(chan error, 1)}
	go func() {
		if target == "" {
			fw.done <- f.SOCKS(ctx, "0")
		} else {
			fw.done <- f.Local(ctx, "0", target)
		}
	}()
	t.Cleanup(func() { fw.stop() })
	select {
	case a := <-listening:
		fw.addr = a.String()
	case err := <-fw.done:
		fw.done <- err // for the cleanup
		t.Fatalf("the forward ended before listening: %v", err)
	case <-time.After(patience):
		t.Fatal("the forward did not start")
	}
	return fw
}

// roundTrip sends data through conn, half-closes, and checks that the
// echo brings every byte back.
func roundTrip(t *testing.T, conn net.Conn, data []byte) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(patience))
	go func() {
		conn.Write(data)
		conn.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(conn)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("%d bytes back (%v), want the %d sent", len(got), err, len(data))
	}
}

func TestLocalCarriesEveryByteOfParallelConnections(t *testing.T) {
	ft := newFakeTunnel(t)
	target := echoServer(t)
	fw := startForward(t, ft.client(), target, 0)
	fw.events.waitFor(t, "forwarding "+fw.addr+" → "+target+" via web", 1)

	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			conn, err := net.Dial("tcp", fw.addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			data := make([]byte, 64<<10+i)
			rand.Read(data)
			roundTrip(t, conn, data)
		})
	}
	wg.Wait()
	if err := fw.stop(); err != nil {
		t.Errorf("the forward ended with %v, want nil after its context", err)
	}
}

func TestLocalRefusedConnectionIsClosedAndLogged(t *testing.T) {
	ft := newFakeTunnel(t)
	// The service checks the target at the upgrade; a name that stops
	// resolving later is refused per connection.
	fw := startForward(t, ft.client(), "nowhere.test:5432", 0)
	conn, err := net.Dial("tcp", fw.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(patience))
	if n, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("a refused connection read %d bytes (%v), want it closed", n, err)
	}
	fw.events.waitFor(t, conn.LocalAddr().String()+" → nowhere.test:5432: refused: nowhere.test does not resolve", 1)
}

func TestBindAddressInUse(t *testing.T) {
	ft := newFakeTunnel(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, port, _ := net.SplitHostPort(busy.Addr().String())
	err = ft.client().ForwardLocal(context.Background(), port, "db:5432", "web", nil)
	if err == nil || !strings.Contains(err.Error(), "listen tcp 127.0.0.1:"+port) || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("forward on a port in use: %v, want the address in use", err)
	}
}

func TestFirstDialRefused(t *testing.T) {
	ft := newFakeTunnel(t)
	ctx := context.Background()

	bad := ft.client()
	bad.Token = "expired"
	if err := bad.ForwardSOCKS(ctx, "0", "web", nil); !IsUnauthorized(err) {
		t.Errorf("a wrong token: %v, want IsUnauthorized", err)
	}
	if err := ft.client().ForwardLocal(ctx, "0", "db:5432", "nosuch", nil); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("an unknown via host: %v, want an error naming it", err)
	}
	var e *Error
	if err := ft.client().ForwardLocal(ctx, "0", "169.254.169.254:80", "web", nil); !errors.As(err, &e) || e.Status != 400 || !strings.Contains(e.Message, "denied") {
		t.Errorf("a denied target: %v, want the service's 400", err)
	}

	gone := ft.client()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	gone.TunnelURL = "http://" + l.Addr().String()
	l.Close()
	if err := gone.ForwardLocal(ctx, "0", "db:5432", "web", nil); err == nil || !strings.Contains(err.Error(), "cannot reach the tunnel service at "+gone.TunnelURL) {
		t.Errorf("no service: %v, want cannot reach", err)
	}

	none := ft.client()
	none.TunnelURL = ""
	if err := none.ForwardLocal(ctx, "0", "db:5432", "web", nil); !errors.Is(err, ErrNoTunnelURL) {
		t.Errorf("no tunnel URL: %v, want ErrNoTunnelURL", err)
	}
	if err := ft.client().ForwardLocal(ctx, "0", "db", "web", nil); err == nil {
		t.Error("a target without a port was accepted")
	}
}

func TestDroppedSessionClosesConnectionsAndReconnects(t *testing.T) {
	ft := newFakeTunnel(t)
	target := echoServer(t)
	fw := startForward(t, ft.client(), target, 0)

	inFlight, err := net.Dial("tcp", fw.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer inFlight.Close()
	inFlight.SetDeadline(time.Now().Add(patience))
	if _, err := inFlight.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(inFlight, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}

	ft.dropSessions(t, 1)
	if _, err := io.ReadAll(inFlight); isTimeout(err) {
		t.Error("a connection of the dropped session hangs")
	}
	fw.events.waitFor(t, "connection to the tunnel service lost; reconnecting in", 1)
	fw.events.waitFor(t, "reconnected", 1)

	conn, err := net.Dial("tcp", fw.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	roundTrip(t, conn, []byte("after the reconnect"))
}

func TestConnectionsDuringReconnectWaitThenClose(t *testing.T) {
	ft := newFakeTunnel(t)
	target := echoServer(t)
	local := startForward(t, ft.client(), target, 300*time.Millisecond)
	socks := startForward(t, ft.client(), "", 300*time.Millisecond)

	ft.unavailable.Store(true)
	ft.dropSessions(t, 2)
	local.events.waitFor(t, "reconnecting failed (the service is restarting); retrying in", 1)
	socks.events.waitFor(t, "reconnecting failed (the service is restarting); retrying in", 1)

	conn, err := net.Dial("tcp", local.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(patience))
	if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("a connection made while reconnecting: %v, want it closed", err)
	}
	local.events.waitFor(t, "no session to the tunnel service within 300ms", 1)

	if rep := socksDialConnect(t, socks.addr, socksConnect, socksAddrIPv4, net.IPv4(127, 0, 0, 1).To4(), 80); rep.code != socksGeneralFailure {
		t.Errorf("SOCKS while reconnecting: reply %#x, want general failure", rep.code)
	}

	ft.unavailable.Store(false)
	local.events.waitFor(t, "reconnected", 1)
	conn, err = net.Dial("tcp", local.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	roundTrip(t, conn, []byte("back"))
}

func TestRedialUnauthorizedEndsForward(t *testing.T) {
	ft := newFakeTunnel(t)
	fw := startForward(t, ft.client(), echoServer(t), 0)
	ft.unauthorized.Store(true)
	ft.dropSessions(t, 1)
	if err := fw.result(); !IsUnauthorized(err) || !strings.Contains(err.Error(), "reconnecting") {
		t.Errorf("the forward ended with %v, want the redial's 401", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestNoGoroutineOutlivesTheForward(t *testing.T) {
	ft := newFakeTunnel(t)
	target := echoServer(t)
	before := runtime.NumGoroutine()
	local := startForward(t, ft.client(), target, 0)
	socks := startForward(t, ft.client(), "", 0)
	for range 10 {
		conn, err := net.Dial("tcp", local.addr)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, conn, []byte("hello"))
		conn.Close()
	}
	// A connection in flight, and one waiting in the SOCKS handshake,
	// when the forwards end.
	inFlight, err := net.Dial("tcp", local.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer inFlight.Close()
	inFlight.Write([]byte("x"))
	io.ReadFull(inFlight, make([]byte, 1))
	mute, err := net.Dial("tcp", socks.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()

	if err := local.stop(); err != nil {
		t.Error(err)
	}
	if err := socks.stop(); err != nil {
		t.Error(err)
	}
	inFlight.SetDeadline(time.Now().Add(patience))
	if _, err := io.ReadAll(inFlight); isTimeout(err) {
		t.Error("a connection in flight outlives the forward")
	}
	deadline := time.Now().Add(patience)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the forwards:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
