package tunnelbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/shared/web"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnelapi"
)

// env is what every measurement of the group runs over: two real sshd on
// loopback (source and endpoint), the echo service on the source's side,
// and an in-process tunnel service (Manager and its HTTP API over the
// embedded store), wired as tunnel-service/main.go wires them.
type env struct {
	dir              string
	source, endpoint *sshdtest.Server
	echo             *sshdtest.Echo
	keyPEM, keyFile  string

	store  *embedded.Store
	sealer *secret.Sealer
	// manager shares SSH connections between tunnels, as the service
	// does; dedicated gives each tunnel its own, to measure what a
	// tunnel alone costs (memory.go).
	manager, dedicated *tunnel.Manager
	owner              string // the user id owning the tunnels
	token              string // its bearer token
	srv                *http.Server
	url                string
	client             *http.Client

	closers []func()
}

func newEnv(ctx context.Context) (_ *env, err error) {
	if err := sshdtest.Available(); err != nil {
		return nil, err
	}
	e := &env{}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.dir, err = os.MkdirTemp("", "tunnelbench-"); err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func() { os.RemoveAll(e.dir) })

	key, pub, err := sshdtest.GenerateKey("")
	if err != nil {
		return nil, err
	}
	e.keyPEM = key
	e.keyFile = filepath.Join(e.dir, "id_ed25519")
	if err := os.WriteFile(e.keyFile, []byte(key), 0o600); err != nil {
		return nil, err
	}
	// DEBUG1 logs the algorithms each connection negotiates; it logs
	// nothing per packet.
	cfg := sshdtest.Config{AuthorizedKeys: []ssh.PublicKey{pub}, LogLevel: "DEBUG1"}
	if e.source, err = sshdtest.New(cfg); err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func() { e.source.Close() })
	if e.endpoint, err = sshdtest.New(cfg); err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func() { e.endpoint.Close() })
	if e.echo, err = sshdtest.ListenEcho(); err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func() { e.echo.Close() })

	if e.store, err = embedded.Open(filepath.Join(e.dir, "sshdeck.db")); err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func() { e.store.Close() })
	keyring, err := secret.LoadOrCreateKeyFile(filepath.Join(e.dir, "secret.key"))
	if err != nil {
		return nil, err
	}
	e.sealer = secret.NewSealer(keyring)
	log := slog.New(slog.DiscardHandler)
	// The service's defaults (keepalives every 15 s, leases of 30 s), as
	// a deployment runs it, but for the limit of tunnels per user: the
	// memory measurement starts up to 1000 for its one user. The served
	// manager reads the stored hosts, as the service's does: a forward's
	// via host is one (forward.go).
	e.manager = tunnel.NewManager(e.store, e.sealer, tunnel.Options{Holder: "bench", Log: log, TunnelLimit: 1_000_000,
		Hosts: &hostchain.Reader{Store: e.store, Sealer: e.sealer}})
	e.dedicated = tunnel.NewManager(e.store, e.sealer, tunnel.Options{Holder: "bench-dedicated", Log: log, TunnelLimit: 1_000_000, DedicatedConnections: true})
	authn := auth.NewAuthenticator(e.store, e.store, nil)
	admin := auth.NewAdmin(e.store, authn, nil)
	u, err := admin.AddUser(ctx, "bench", false)
	if err != nil {
		return nil, err
	}
	e.owner = u.ID
	if e.token, _, err = admin.CreateToken(ctx, "bench", "bench", 0); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e.srv = web.NewHTTPServer(tunnelapi.New(tunnelapi.Config{
		Manager: e.manager, Authenticator: authn, Ping: e.store.Ping, Logger: log,
	}), log)
	e.manager.Start()
	e.dedicated.Start()
	e.closers = append(e.closers, func() {
		// Bounds the graceful shutdown only: past it, what is left is
		// closed anyway, and nothing fails.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		e.srv.Shutdown(ctx)
		e.dedicated.Shutdown(ctx)
		e.manager.Shutdown(ctx)
	})
	go e.srv.Serve(ln)
	e.url = "http://" + ln.Addr().String()
	// A request to the in-process tunnel API is a protocol wait: a minute
	// is far beyond any answer, and turns a hang into an error.
	e.client = &http.Client{Timeout: time.Minute}
	return e, nil
}

// close undoes newEnv, last step first.
func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}

// request is a connect request over the env's hosts with root's key. No
// retry: a tunnel that fails says so at once.
func (e *env) request(name string, endpointPort int) *tunnel.ConnectRequest {
	zero, interval := 0, 100
	return &tunnel.ConnectRequest{
		Name:             name,
		SourceIP:         "127.0.0.1",
		SourceSSHPort:    &e.source.Port,
		SourceUsername:   "root",
		SourceSSHKey:     e.keyPEM,
		EndpointIP:       "127.0.0.1",
		EndpointSSHPort:  &e.endpoint.Port,
		EndpointUsername: "root",
		EndpointSSHKey:   e.keyPEM,
		SourcePort:       &e.echo.Port,
		EndpointPort:     &endpointPort,
		MaxRetries:       &zero,
		RetryInterval:    &interval,
	}
}

// post sends a JSON body to the tunnel API with the env's token.
func (e *env) post(ctx context.Context, path string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, bytes.TrimSpace(answer))
	}
	return nil
}

func (e *env) disconnect(ctx context.Context, name string) error {
	return e.post(ctx, "/ssh/tunnel/disconnect", tunnelapi.NameRequest{TunnelName: name})
}

// statusStream is GET /ssh/tunnel/status/stream, read in the background:
// wait returns when a tunnel reaches a state.
type statusStream struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	err     error
	last    map[string]tunnel.Status
	changed chan struct{} // closed and replaced on every event
}

func (e *env) openStream(ctx context.Context) (*statusStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/ssh/tunnel/status/stream", nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := (&http.Client{}).Do(req) // no timeout: the stream lasts
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("status stream: %s", resp.Status)
	}
	s := &statusStream{cancel: cancel, done: make(chan struct{}), last: map[string]tunnel.Status{}, changed: make(chan struct{})}
	go s.read(resp.Body)
	return s, nil
}

func (s *statusStream) read(body io.ReadCloser) {
	defer close(s.done)
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var err error
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var st tunnel.Status
		if err = json.Unmarshal([]byte(data), &st); err != nil {
			break
		}
		s.mu.Lock()
		s.last[st.Name] = st
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}
	if err == nil {
		err = sc.Err()
	}
	if err == nil {
		err = io.EOF
	}
	s.mu.Lock()
	s.err = err
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// wait returns once the named tunnel's last status event says want, or
// fails when it says failed or the stream ends.
func (s *statusStream) wait(ctx context.Context, name string, want sshdeck.TunnelState) error {
	for {
		s.mu.Lock()
		st, ok := s.last[name]
		err, changed := s.err, s.changed
		s.mu.Unlock()
		switch {
		case ok && st.Status == want:
			return nil
		case ok && st.Status == sshdeck.TunnelFailed:
			return fmt.Errorf("tunnel %s failed: %s", name, st.Reason)
		case err != nil:
			return fmt.Errorf("status stream ended: %w", err)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *statusStream) close() {
	s.cancel()
	<-s.done
}

// waitListening polls until something accepts on 127.0.0.1:port, failing
// after deadline unless it is 0 (then only ctx ends it).
func waitListening(ctx context.Context, port int, deadline time.Duration) error {
	end := time.Now().Add(deadline)
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if deadline > 0 && time.Now().After(end) {
			return fmt.Errorf("nothing listens on %s after %v: %w", addr, deadline, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// ports hands out TCP ports for endpoints below the kernel's ephemeral
// range (32768 and up here), so that no outgoing connection takes one
// between its choice and its use; each is checked free when handed out.
type ports struct {
	mu   sync.Mutex
	next int
}

func (p *ports) get() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == 0 {
		p.next = 21000
	}
	for ; p.next < 32000; p.next++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(p.next)))
		if err != nil {
			continue
		}
		ln.Close()
		p.next++
		return p.next - 1, nil
	}
	return 0, errors.New("no free port left in 21000-32000")
}

// listenPatience bounds the wait for a tunnel's endpoint port to accept once
// the tunnel said `connected`: by then sshd has bound it (the remote
// forward was granted), so this is a protocol wait, not work, and a minute
// is far beyond it.
const listenPatience = time.Minute
