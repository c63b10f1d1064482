package tunnelapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/audit/auditroute"
	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// Authenticator turns an Authorization header into the caller.
type Authenticator interface {
	Authenticate(ctx context.Context, header string) (sshdeck.Principal, error)
}

// Config is what the tunnel API needs.
type Config struct {
	Manager *tunnel.Manager
	// Authenticator checks bearer tokens against the store, as the rest of
	// the API does.
	Authenticator Authenticator
	// Ping reports whether the store answers, for /healthz.
	Ping func(context.Context) error
	// Audit records the requests of the audited routes (routes.Route.
	// Audited): connect, disconnect, cancel, delete and forwards. nil
	// records none.
	Audit *audit.Recorder
	// BehindProxy: the service is behind a load balancer (the ALB in
	// AWS), whose X-Forwarded-For names the caller (audit.SourceIP).
	BehindProxy bool
	// StreamRecheck is how often a status stream checks its token again
	// (DefaultStreamRecheck, 30 s; at most 30 s, API.md); StreamMaxAge how
	// long a stream lives at most (DefaultStreamMaxAge, 1 h).
	StreamRecheck time.Duration
	StreamMaxAge  time.Duration
	Logger        *slog.Logger
}

type server struct {
	Config
	log                         *slog.Logger
	streamRecheck, streamMaxAge time.Duration
}

// handlerFunc is an authenticated tunnel route; a returned error is
// written as the contract's error body.
type handlerFunc func(w http.ResponseWriter, r *http.Request, owner string) error

// New serves the tunnel API ({tunnel_url}).
func New(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{Config: cfg, log: cfg.Logger}
	s.streamRecheck, s.streamMaxAge = streamSettings(cfg)
	mux := http.NewServeMux()
	handlers := s.handlers()
	var methods []string
	for _, rt := range routes.Tunnel {
		h := handlers[rt.Name]
		if h == nil {
			panic(fmt.Sprintf("tunnelapi: route %q has no handler", rt.Name))
		}
		mux.Handle(rt.Method+" "+rt.Path, h)
		methods = append(methods, rt.Method)
	}
	mux.Handle("/", web.Fallback(mux, methods, s.log))
	return web.WithRequest(s.log, mux)
}

// streamSettings are a stream's recheck interval and life: the Config's,
// or the defaults for a zero or negative value, and for a recheck interval
// over the 30 s that API.md allows.
func streamSettings(cfg Config) (recheck, maxAge time.Duration) {
	recheck, maxAge = cfg.StreamRecheck, cfg.StreamMaxAge
	if recheck <= 0 || recheck > DefaultStreamRecheck {
		recheck = DefaultStreamRecheck
	}
	if maxAge <= 0 {
		maxAge = DefaultStreamMaxAge
	}
	return recheck, maxAge
}

// handlers binds each route of routes.Tunnel, by name (its operationId in
// openapi.yaml and its name in the request log), to its handler. A path
// ending in {name...} takes the rest of the path, slashes included.
func (s *server) handlers() map[string]http.Handler {
	health := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.NoteRequest(r, "tunnel-healthz", "")
		web.ServeHealth(w, r, s.log, s.Ping)
	})
	bound := map[string]handlerFunc{
		"tunnel-connect":       s.connect,
		"tunnel-status":        s.statuses,
		"tunnel-status-stream": s.stream,
		"tunnel-status-one":    s.status,
		"tunnel-disconnect":    s.disconnect(false),
		"tunnel-cancel":        s.disconnect(true),
		"tunnel-delete":        s.delete,
		"tunnel-forward":       s.forward,
		"tunnel-metrics":       s.metrics,
	}
	handlers := map[string]http.Handler{"tunnel-healthz": health}
	for _, rt := range routes.Tunnel {
		if h := bound[rt.Name]; h != nil {
			handlers[rt.Name] = s.authenticated(rt, h)
		}
	}
	return handlers
}

// authenticated checks the caller's token and the route's scope, then
// calls h with the caller's user id. A request of an audited route that
// got past authentication leaves one audit record, as the base_url API's
// do (shared/api).
func (s *server) authenticated(rt routes.Route, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var caller sshdeck.Principal
		header, err := web.Authorization(r)
		if err == nil {
			caller, err = s.Authenticator.Authenticate(r.Context(), header)
		}
		web.NoteRequest(r, rt.Name, caller.UserID)
		if err != nil {
			web.WriteError(w, r, s.log, err)
			return
		}
		err = auditroute.Run(s.Audit, r, rt, caller, audit.SourceIP(r, s.BehindProxy), func(r *http.Request) error {
			return h(w, r, caller.UserID)
		})
		if err != nil {
			web.WriteError(w, r, s.log, err)
		}
	})
}

// Message is the body of the connect, disconnect and cancel answers.
type Message struct {
	Message string `json:"message"`
}

func (s *server) connect(w http.ResponseWriter, r *http.Request, owner string) error {
	var req tunnel.ConnectRequest
	if err := web.DecodeBody(w, r, &req); err != nil {
		return err
	}
	sshdeck.SetAuditTarget(r.Context(), tunnelTarget(req.Name))
	if err := s.Manager.Connect(r.Context(), owner, &req); err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, Message{"Connection request received"})
	return nil
}

func (s *server) statuses(w http.ResponseWriter, r *http.Request, owner string) error {
	all, err := s.Manager.Statuses(r.Context(), owner)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, all)
	return nil
}

func (s *server) status(w http.ResponseWriter, r *http.Request, owner string) error {
	st, err := s.Manager.Status(r.Context(), owner, r.PathValue("name"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, st)
	return nil
}

// delete serves DELETE /ssh/tunnel/{name}: the tunnel is stopped wherever
// it runs and forgotten.
func (s *server) delete(w http.ResponseWriter, r *http.Request, owner string) error {
	sshdeck.SetAuditTarget(r.Context(), tunnelTarget(r.PathValue("name")))
	if err := s.Manager.Delete(r.Context(), owner, r.PathValue("name")); err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, Message{"Tunnel deleted"})
	return nil
}

// NameRequest is the body of disconnect and cancel.
type NameRequest struct {
	TunnelName string `json:"tunnelName"`
}

func (s *server) disconnect(cancelled bool) handlerFunc {
	message := "Tunnel disconnected"
	if cancelled {
		message = "Tunnel cancelled"
	}
	return func(w http.ResponseWriter, r *http.Request, owner string) error {
		var req NameRequest
		if err := web.DecodeBody(w, r, &req); err != nil {
			return err
		}
		// A name as connect takes it: no control characters.
		if err := check.Text("tunnelName", req.TunnelName, 1, tunnel.MaxNameLen, false); err != nil {
			return err
		}
		sshdeck.SetAuditTarget(r.Context(), tunnelTarget(req.TunnelName))
		if err := s.Manager.Disconnect(r.Context(), owner, req.TunnelName, cancelled); err != nil {
			return err
		}
		web.WriteJSON(w, http.StatusOK, Message{message})
		return nil
	}
}

// tunnelTarget names a tunnel in audit records. A name too long or with
// control characters is refused before the target is set; a record may
// still hold a connect's name that its checks refuse, quoted.
func tunnelTarget(name string) string { return fmt.Sprintf("tunnel %q", name) }
