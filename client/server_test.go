package client_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/client"
	"github.com/sshdeck/sshdeck/internal/upstreamtest"
	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnelapi"
)

// server is both services in this process, as `sshdeck serve` runs them
// (cmd/sshdeck/serve.go): the API and the tunnel service over one
// embedded store in a temporary directory, each on its own httptest
// listener. routes holds the name of the route each request reached,
// from the services' request log lines (web.NoteRequest).
type server struct {
	api, tunnel *httptest.Server
	app         *app.App
	admin       *auth.Admin
	adminToken  string
	routes      *routeLog
}

// routeLog is a slog handler that keeps the route of each request line.
type routeLog struct {
	mu    sync.Mutex
	names map[string]int
}

func (l *routeLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *routeLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *routeLog) WithGroup(string) slog.Handler            { return l }
func (l *routeLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "request" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "route" && a.Value.String() != "" {
			l.mu.Lock()
			l.names[a.Value.String()]++
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// called are the routes requests reached so far, sorted.
func (l *routeLog) called() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	for n := range l.names {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// startServer starts both services with an admin user "admin" and its
// token; they stop when the test ends.
func startServer(t *testing.T) *server {
	t.Helper()
	ctx := context.Background()
	github := upstreamtest.StartGitHub(t)
	cfg, err := config.Load(func(name string) string {
		switch name {
		case config.Data:
			return t.TempDir()
		case config.ReleasesRepo:
			return "acme/deck"
		case config.ReleasesAPIURL:
			return github.URL
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{routes: &routeLog{names: map[string]int{}}}
	log := slog.New(s.routes)
	if s.app, err = app.Open(ctx, cfg, app.Options{Log: log}); err != nil {
		t.Fatal(err)
	}
	apiCfg, err := api.FromApp(s.app)
	if err != nil {
		t.Fatal(err)
	}
	apiCfg.Authenticator = s.app.Auth
	opts := tunnel.OptionsFrom(cfg)
	opts.Holder, opts.Log = "local", log
	opts.Hosts = &hostchain.Reader{Store: s.app.Store, Sealer: s.app.Sealer, Max: opts.JumpLimit}
	tunnels := tunnel.NewManager(s.app.Store, s.app.Sealer, opts)
	tunnels.Start()
	s.api = httptest.NewServer(api.New(apiCfg).Router())
	s.tunnel = httptest.NewServer(tunnelapi.New(tunnelapi.Config{Manager: tunnels, Authenticator: s.app.Auth, Ping: s.app.Store.Ping, Logger: log}))
	t.Cleanup(func() {
		s.close()
		tunnels.Shutdown(context.Background())
		s.app.Close()
	})
	s.admin = auth.NewAdmin(s.app.Store, s.app.Auth, nil)
	if s.adminToken, _, err = s.admin.Bootstrap(ctx, "admin", time.Hour); err != nil {
		t.Fatal(err)
	}
	return s
}

// close stops both listeners, waiting for the requests in flight (their
// log lines are written when they end). It may be called twice.
func (s *server) close() {
	s.api.Close()
	s.tunnel.Close()
}

// client is a client of both services with the token.
func (s *server) client(token string) *client.Client {
	return &client.Client{BaseURL: s.api.URL, TunnelURL: s.tunnel.URL, Token: token}
}

// userToken adds a user and returns a token of theirs.
func (s *server) userToken(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := s.admin.AddUser(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	token, _, err := s.admin.CreateToken(ctx, name, "test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return token
}
