// Package api holds the HTTP handlers of every base_url route, bound to the
// route table (shared/routes) by name: each file binds its routes beside
// their handlers (hosts.go, files.go, alerts.go, releases.go), and this one
// wraps them in authentication and the request middleware of shared/web.
// The same handlers run in one local process (Server.Router), one Lambda
// function per route (Server.Handler) and tests. FromApp builds their
// services over an App of shared/app.
package api

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"

	"github.com/sshdeck/sshdeck/shared/accounts"
	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/audit/auditroute"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/files"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/releases"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/upstream"
	"github.com/sshdeck/sshdeck/shared/web"
)

// Authenticator turns an Authorization header into the caller.
type Authenticator interface {
	Authenticate(ctx context.Context, header string) (sshdeck.Principal, error)
}

// Config is what the handlers need.
type Config struct {
	Accounts *accounts.Service
	Hosts    *hosts.Service
	Files    *files.Service
	Alerts   *alerts.Service
	// Releases serves the releases feed; nil when no repository is
	// configured, and the feed answers 404 saying so.
	Releases *releases.Service
	// Ping reports whether the store answers, for /healthz.
	Ping func(context.Context) error
	// Authenticator checks bearer tokens. Leave it nil where something in
	// front already did (the Lambda authorizer) and put the caller into the
	// request context with sshdeck.NewContextWithPrincipal.
	Authenticator Authenticator
	// Audit records the requests of the audited routes (routes.Route.
	// Audited); nil records none (tests of other things).
	Audit  *audit.Recorder
	Logger *slog.Logger
}

// FromApp is the Config of the handlers over a's store and sealer, with
// the upstream services of its settings (the releases feed's repository,
// the remote alerts list). It leaves Authenticator to the caller: nil
// behind the Lambda authorizer, a.Auth where the server checks tokens.
func FromApp(a *app.App) (Config, error) {
	admin := auth.NewAdmin(a.Store, a.Auth, nil)
	admin.SetTokenLimit(a.Config.Limits.Tokens)
	cfg := Config{
		Accounts: accounts.NewService(a.Store, admin, a.Sealer, nil),
		Hosts:    hosts.NewService(a.Store, a.Store, a.Sealer, nil),
		Files:    files.NewService(a.Store, nil),
		Ping:     a.Store.Ping,
		Audit:    a.Audit,
		Logger:   a.Log,
	}
	cfg.Accounts.LoginTTL = a.Config.LoginTTL
	// The limits of the settings (SSHDECK_LIMIT_*), which config.Load
	// fills with their defaults.
	cfg.Hosts.Limits = a.Config.Limits
	cfg.Files.Limits = a.Config.Limits
	var remote alerts.Remote
	if url := a.Config.AlertsURL; url != "" {
		list, err := upstream.NewAlertsList(url, 0, nil)
		if err != nil {
			return Config{}, err
		}
		remote = upstream.NewRemoteAlerts(list, a.Log, nil)
	}
	cfg.Alerts = alerts.NewService(a.Store, remote, nil)
	if repo := a.Config.ReleasesRepo; repo != "" {
		github, err := upstream.NewGitHub(upstream.GitHubConfig{
			BaseURL: a.Config.ReleasesAPIURL,
			Repo:    repo,
			Token:   a.Config.GitHubToken,
		})
		if err != nil {
			return Config{}, err
		}
		cfg.Releases = releases.NewService(github, a.Store, a.Log, nil)
	}
	return cfg, nil
}

// Server serves the base_url routes.
type Server struct {
	cfg      Config
	log      *slog.Logger
	handlers map[string]handlerFunc
}

// handlerFunc is a route's handler. The caller is set on every route but the
// public ones; a returned error is written as the contract's error body.
type handlerFunc func(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error

// New returns a Server. It panics when a route of the table has no handler:
// that is a programming error every test would catch.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	// Each file of the API binds its routes, by the route table's names,
	// beside their handlers.
	s.handlers = map[string]handlerFunc{"healthz": s.health}
	for _, bound := range []map[string]handlerFunc{s.accountRoutes(), s.hostRoutes(), s.fileRoutes(), s.alertRoutes(), s.releaseRoutes(), s.auditRoutes()} {
		maps.Copy(s.handlers, bound)
	}
	for _, r := range routes.All {
		if s.handlers[r.Name] == nil {
			panic(fmt.Sprintf("api: route %q has no handler", r.Name))
		}
	}
	return s
}

// health answers /healthz: whether the store answers.
func (s *Server) health(w http.ResponseWriter, r *http.Request, _ sshdeck.Principal) error {
	web.ServeHealth(w, r, s.log, s.cfg.Ping)
	return nil
}

// Router serves every route on one mux: the local server.
func (s *Server) Router() http.Handler { return s.mux(routes.All...) }

// Handler serves one route, as its Lambda function does.
func (s *Server) Handler(name string) http.Handler {
	r, ok := routes.ByName(name)
	if !ok {
		panic(fmt.Sprintf("api: no route %q", name))
	}
	return s.mux(r)
}

// mux routes the given routes; anything else is answered 404 or 405 in the
// contract's error body. Every response goes through the request middleware.
func (s *Server) mux(rs ...routes.Route) http.Handler {
	mux := http.NewServeMux()
	methods := make([]string, 0, len(rs))
	served := make(map[string]bool, len(rs))
	for _, r := range rs {
		mux.Handle(r.Method+" "+r.Path, s.route(r))
		methods = append(methods, r.Method)
		served[r.Name] = true
	}
	// A route's {param} would take the static path of a route this mux
	// does not serve (get-host's {id} would take /ssh/db/host/export): API
	// Gateway sends that path to its own function, so it is no path of
	// this one. Without all routes (a function's mux), such paths are not
	// routed here.
	for _, r := range rs {
		for _, o := range routes.All {
			if strings.Contains(r.Path, "{") && !served[o.Name] && !strings.Contains(o.Path, "{") && captures(r.Path, o.Path) {
				mux.Handle(r.Method+" "+o.Path, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					web.WriteError(w, req, s.log, sshdeck.Errorf(sshdeck.NotFound, "no route for %s %s", req.Method, req.URL.Path))
				}))
			}
		}
	}
	mux.Handle("/", web.Fallback(mux, methods, s.log))
	return web.WithRequest(s.log, mux)
}

// captures tells whether pattern, with {param} segments, matches path.
func captures(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		if !strings.HasPrefix(p, "{") && p != xs[i] {
			return false
		}
	}
	return true
}

// route wraps a handler with authentication and the scope check (for
// non-public routes: the one place a base_url route's scope is checked) and
// the route's name for the request log.
//
// A request of an audited route that got past authentication (a login
// always does) leaves one record however it ends (auditroute.Run):
// a refused scope is a failure of the caller's.
func (s *Server) route(route routes.Route) http.Handler {
	h := s.handlers[route.Name]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.NoteRequest(r, route.Name, "")
		var caller sshdeck.Principal
		if !route.Public {
			var err error
			if caller, err = s.caller(r); err != nil {
				web.WriteError(w, r, s.log, err)
				return
			}
			web.NoteRequest(r, route.Name, caller.UserID)
		}
		err := auditroute.Run(s.cfg.Audit, r, route, caller, audit.SourceIP(r, false), func(r *http.Request) error {
			return h(w, r, caller)
		})
		if err != nil {
			web.WriteError(w, r, s.log, err)
		}
	})
}

// caller authenticates the request, or takes the caller the Lambda adapter
// put into its context. No caller is always 401, whatever is in front.
func (s *Server) caller(r *http.Request) (sshdeck.Principal, error) {
	if s.cfg.Authenticator != nil {
		header, err := web.Authorization(r)
		if err != nil {
			return sshdeck.Principal{}, err
		}
		return s.cfg.Authenticator.Authenticate(r.Context(), header)
	}
	if p, ok := sshdeck.PrincipalFromContext(r.Context()); ok {
		return p, nil
	}
	return sshdeck.Principal{}, sshdeck.Errorf(sshdeck.Unauthorized, "missing bearer token: send Authorization: Bearer <token>")
}
