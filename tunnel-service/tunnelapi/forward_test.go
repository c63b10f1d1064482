package tunnelapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/forwarding"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// The forward's WebSocket (forward.go), spoken with the wire protocol's
// own client (shared/forwarding), through the real OpenSSH hosts of a
// World: what the service answers before the upgrade, and a session's
// connections, refusals and end.

// forwardEnv is an API over a World whose alice has the host "web" (the
// world's source).
func forwardEnv(t *testing.T, setup apiSetup) (*apiEnv, *tunneltest.World) {
	w := tunneltest.NewWorld(t)
	setup.world = w
	setup.options = func(o *tunnel.Options) { o.Hosts = w.Hosts() }
	e := newAPIEnv(t, setup)
	e.secret(w.Key)
	port := w.Source.Port
	svc := hosts.NewService(w.Store, w.Store, w.Sealer, nil)
	if _, err := svc.Create(context.Background(), e.aliceID, &hosts.Input{Name: "web", IP: "127.0.0.1", Port: &port, Username: "root", Key: &w.Key}); err != nil {
		t.Fatal(err)
	}
	return e, w
}

func (e *apiEnv) forwardPath(via, target string) string {
	q := url.Values{"via": {via}}
	if target != "" {
		q.Set("target", target)
	}
	return forwarding.Path + "?" + q.Encode()
}

// dialForward opens a forward's session with the token.
func (e *apiEnv) dialForward(token, via, target string) (*forwarding.Session, error) {
	header := http.Header{"Authorization": {"Bearer " + token}}
	s, resp, err := forwarding.Dial(context.Background(), e.client, e.url+e.forwardPath(via, target), header)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err == nil {
		e.t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// TestAPIForwardRefusedBeforeUpgrade: a missing via, a host that is not
// the caller's, a target that does not parse or is in a denied range, and
// a request that is no WebSocket, each answer the contract's error body.
func TestAPIForwardRefusedBeforeUpgrade(t *testing.T) {
	e, w := forwardEnv(t, apiSetup{})
	echo := net.JoinHostPort("127.0.0.1", strconv.Itoa(w.EchoPort))
	e.get(forwarding.Path, e.alice).wantError(t, http.StatusBadRequest, sshdeck.Invalid, "via is required")
	e.get(e.forwardPath("nope", ""), e.alice).wantError(t, http.StatusNotFound, sshdeck.NotFound, `via host "nope": no host of yours has this name or id`)
	e.get(e.forwardPath("web", ""), e.bob).wantError(t, http.StatusNotFound, sshdeck.NotFound, `via host "web": no host of yours`)
	e.get(e.forwardPath("web", "169.254.169.254:80"), e.alice).wantError(t, http.StatusBadRequest, sshdeck.Forbidden, "in the denied range 169.254.0.0/16")
	e.get(e.forwardPath("web", "example.com"), e.alice).wantError(t, http.StatusBadRequest, sshdeck.Invalid, "want host:port")
	e.get(e.forwardPath("web", echo), e.alice).wantError(t, http.StatusBadRequest, sshdeck.Invalid, "takes a WebSocket")
	// An upgrade without its key is no WebSocket's either: the contract's
	// body, not the plain text of a failed handshake.
	e.do("GET", e.forwardPath("web", echo), e.alice, "", nil, "Connection", "Upgrade", "Upgrade", "websocket").
		wantError(t, http.StatusBadRequest, sshdeck.Invalid, "takes a WebSocket")
	if _, err := e.dialForward(e.bob, "web", ""); err == nil {
		t.Error("bob opened a forward through alice's host")
	}
}

// TestAPIForward: a session's connections reach the echo service behind
// the via host with every byte, several at once; a denied or refused
// target is refused with its code while the session goes on.
func TestAPIForward(t *testing.T) {
	e, w := forwardEnv(t, apiSetup{})
	echo := net.JoinHostPort("127.0.0.1", strconv.Itoa(w.EchoPort))
	s, err := e.dialForward(e.alice, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			conn, err := s.Open(ctx, echo)
			if err != nil {
				t.Error(err)
				return
			}
			if err := sshdtest.RoundTripConn(conn, 512<<10); err != nil {
				t.Error(err)
			}
		}()
	}
	for range 8 {
		<-done
	}
	for target, code := range map[string]string{
		"169.254.169.254:80": forwarding.CodeDenied,
		"[::]:22":            forwarding.CodeDenied,
		"no-such.invalid:80": forwarding.CodeUnresolvable,
		"web:0":              forwarding.CodeInvalid,
	} {
		_, err := s.Open(ctx, target)
		var r *forwarding.RefusedError
		if !errors.As(err, &r) || r.Code != code {
			t.Errorf("%s: %v, want refused %q", target, err, code)
		}
	}
	conn, err := s.Open(ctx, echo)
	if err != nil {
		t.Fatalf("the session after refusals: %v", err)
	}
	if err := sshdtest.RoundTripConn(conn, 1000); err != nil {
		t.Fatal(err)
	}
}

// TestAPIForwardEnds: a session ends when its token is revoked (within
// the recheck) and when the service shuts down.
func TestAPIForwardEnds(t *testing.T) {
	e, _ := forwardEnv(t, apiSetup{streamRecheck: 200 * time.Millisecond})
	token, tok, err := e.admin.CreateToken(context.Background(), "alice", "forward", 0)
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := e.dialForward(token, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := e.dialForward(e.alice, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.RevokeToken(context.Background(), tok.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-revoked.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the forward of a revoked token is still open after 30 s")
	}
	if _, err := e.dialForward(token, "web", ""); err == nil {
		t.Error("a revoked token opened a forward")
	}
	select {
	case <-kept.Done():
		t.Fatal("the forward of alice's other token ended too")
	case <-time.After(500 * time.Millisecond):
	}
	e.manager.Shutdown(context.Background())
	select {
	case <-kept.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("a forward is still open 30 s after the service shut down")
	}
}
