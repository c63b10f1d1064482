package tunnelapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/sshdeck/sshdeck/shared/check"
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
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		web.NoteRequest(r, "tunnel-healthz", "")
		web.ServeHealth(w, r, s.log, s.Ping)
	})
	methods := []string{"GET"}
	for _, rt := range s.routes() {
		mux.Handle(rt.method+" "+rt.path, s.authenticated(rt.name, rt.h))
		methods = append(methods, rt.method)
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

// tunnelRoute is one authenticated tunnel route; name is its operationId in
// openapi.yaml and its name in the request log.
type tunnelRoute struct {
	method, path, name string
	h                  handlerFunc
}

// routes is the tunnel API's route table, besides /healthz. A path ending
// in {name...} takes the rest of the path, slashes included.
func (s *server) routes() []tunnelRoute {
	return []tunnelRoute{
		{"POST", "/ssh/tunnel/connect", "tunnel-connect", s.connect},
		{"GET", "/ssh/tunnel/status", "tunnel-status", s.statuses},
		{"GET", "/ssh/tunnel/status/stream", "tunnel-status-stream", s.stream},
		{"GET", "/ssh/tunnel/status/{name...}", "tunnel-status-one", s.status},
		{"POST", "/ssh/tunnel/disconnect", "tunnel-disconnect", s.disconnect(false)},
		{"POST", "/ssh/tunnel/cancel", "tunnel-cancel", s.disconnect(true)},
		{"DELETE", "/ssh/tunnel/{name...}", "tunnel-delete", s.delete},
	}
}

func (s *server) authenticated(route string, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var caller sshdeck.Principal
		header, err := web.Authorization(r)
		if err == nil {
			caller, err = s.Authenticator.Authenticate(r.Context(), header)
		}
		web.NoteRequest(r, route, caller.UserID)
		if err == nil {
			err = h(w, r, caller.UserID)
		}
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
		if err := s.Manager.Disconnect(r.Context(), owner, req.TunnelName, cancelled); err != nil {
			return err
		}
		web.WriteJSON(w, http.StatusOK, Message{message})
		return nil
	}
}
