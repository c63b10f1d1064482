package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/web"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnelapi"
)

// bootstrapTokenTTL is the life of the admin token made on first start.
const bootstrapTokenTTL = 720 * time.Hour

// shutdownTimeout is how long in-flight requests get after SIGINT/SIGTERM.
const shutdownTimeout = 10 * time.Second

func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newFlags("serve", &cfg, stderr)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "address of the API ("+config.Addr+")")
	fs.StringVar(&cfg.TunnelAddr, "tunnel-addr", cfg.TunnelAddr, "address of the tunnel service ("+config.TunnelAddr+")")
	if _, err := parse(fs, args, 0, &cfg); err != nil {
		return err
	}
	tuneGC()
	log := slog.New(slog.NewJSONHandler(stderr, nil))

	// Both addresses are bound first: a port in use fails serve before it
	// creates anything (the data directory, the admin user and its token).
	listener, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	defer listener.Close()
	tunnelListener, err := net.Listen("tcp", cfg.TunnelAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (the tunnel service): %w", cfg.TunnelAddr, err)
	}
	defer tunnelListener.Close()

	// serve is the laptop's shape: the embedded store of --data, whatever
	// SSHDECK_TABLE says (the admin commands take --table).
	cfg.Table = ""
	a, err := app.Open(ctx, cfg.Config, app.Options{Log: log})
	if err != nil {
		return err
	}
	defer a.Close()
	// Webhooks start before anything of this start is written (the
	// bootstrap), so that a first configuration's cursor is the store's
	// end before it; deferred after a.Close, they stop before it.
	stopWebhooks, err := startWebhooks(ctx, cfg.Config, a.Store, log)
	if err != nil {
		return err
	}
	defer stopWebhooks()
	apiCfg, err := api.FromApp(a)
	if err != nil {
		return err
	}
	apiCfg.Authenticator = a.Auth
	admin := newStoreAdmin(a.Store, a.Auth, cfg.Limits.Tokens)
	// The store's lock is held: a socket file left here is a dead
	// server's. The socket is made before the bootstrap too, so that the
	// admin commands reach this server from its first line on stdout.
	sock, sockErr := listenAdminSocket(cfg.socketPath())
	if sockErr != nil {
		log.Warn("admin socket unavailable: stop serve to run admin commands", "error", sockErr.Error())
	} else {
		defer os.Remove(cfg.socketPath())
		defer sock.Close()
	}
	// The first start's admin is a change of its own: recorded as the
	// system's, when it happens.
	bootstrap, note := a.Audit.Begin(ctx, "system", "bootstrap", "user named admin", cliRequestID(), adminSource)
	token, tok, err := admin.Bootstrap(bootstrap, "admin", bootstrapTokenTTL)
	if token != "" || err != nil {
		a.Audit.Finish(bootstrap, note, err)
	}
	if err != nil {
		return fmt.Errorf("create the admin user: %w", err)
	}
	if token != "" {
		fmt.Fprintf(stdout, "Created the admin user \"admin\". Its bearer token %s, shown this once and valid %d days:\n\n    %s\n\nRevoke it with: sshdeck token revoke %s\nMake more with: sshdeck token create --user admin\n", tok.ID, int(bootstrapTokenTTL.Hours()/24), token, tok.ID)
	}

	tunnelOpts := tunnel.OptionsFrom(cfg.Config)
	// One process holds the store's file, so this is the only replica: a
	// fixed name lets it resume its own autoStart tunnels at once after a
	// crash, instead of waiting for their leases to expire.
	tunnelOpts.Holder, tunnelOpts.Log = "local", log
	tunnelOpts.Hosts = &hostchain.Reader{Store: a.Store, Sealer: a.Sealer, Max: tunnelOpts.JumpLimit}
	tunnels := tunnel.NewManager(a.Store, a.Sealer, tunnelOpts)

	tunnelHandler := tunnelapi.New(tunnelapi.Config{Manager: tunnels, Authenticator: a.Auth, Ping: a.Store.Ping, Audit: a.Audit, Logger: log})
	servers := []*http.Server{web.NewHTTPServer(api.New(apiCfg).Router(), log), web.NewHTTPServer(tunnelHandler, log)}
	listeners := []net.Listener{listener, tunnelListener}
	if sockErr == nil {
		servers = append(servers, web.NewHTTPServer(adminHandler(admin, a.Audit), log))
		listeners = append(listeners, sock)
	}
	tunnels.Start()
	defer tunnels.Shutdown(context.Background())
	log.Info("serving", "api", "http://"+listener.Addr().String(), "tunnel_service", "http://"+tunnelListener.Addr().String(), "data", cfg.Data)
	return serveUntilDone(ctx, servers, listeners, log)
}

// serveUntilDone serves until ctx ends (SIGINT/SIGTERM), then shuts every
// server down, letting in-flight requests finish.
func serveUntilDone(ctx context.Context, servers []*http.Server, listeners []net.Listener, log *slog.Logger) error {
	errs := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errs <- srv.Serve(listeners[i]) }()
	}
	var err error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-errs:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if serr := srv.Shutdown(shutdownCtx); serr != nil && err == nil {
			err = serr
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// gcPercent is the garbage collector's target of serve. Its live heap is
// small (the store is a memory map, not heap), so the default of 100
// collects every few hundred requests; 400 trades a few megabytes for a
// quarter of the collections.
const gcPercent = 400

// memoryLimit bounds serve's heap whatever gcPercent would let it grow to:
// near it the collector runs as often as it must. A laptop process should
// not grow with its load: under 64 concurrent 1000-host lists, serve's RSS
// peaked at 216 MB with gcPercent alone (BENCHMARKS.md).
const memoryLimit = 40 << 20

// tuneGC sets gcPercent and memoryLimit, unless GOGC or GOMEMLIMIT in the
// environment say otherwise.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
}
