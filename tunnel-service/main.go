// Command tunnel-service runs the tunnel service alone: the container of a
// deployment ({tunnel_url}), or a second process beside `sshdeck serve`
// over its own store. Settings come from the environment:
//
//   - SSHDECK_TUNNEL_ADDR: the address to serve on (default 127.0.0.1:8081;
//     the container image sets :8081);
//   - SSHDECK_TABLE and SSHDECK_KMS_KEY_ID: the deployment's DynamoDB table
//     and the KMS key of its credentials, with the AWS credentials of the
//     environment (in ECS, the task role); without a table, the embedded
//     store in SSHDECK_DATA (default ./.sshdeck);
//   - SSHDECK_TUNNEL_DENY_CIDRS, SSHDECK_REPLICA_ID, SSHDECK_TUNNEL_LEASE_TTL:
//     see tunnel.OptionsFrom.
//
// With a table (the deployment in AWS), it also writes its metrics as
// CloudWatch embedded metric format lines on stdout, once a minute, among
// its log lines (tunnel-service/emf); without one (beside sshdeck serve, or
// alone over the embedded store) it writes none: GET /metrics is the way
// to read them there.
//
// Its wiring is shared/app's, with the SDK's credential chain (awschain).
// It delivers no webhooks: SSHDECK_WEBHOOK_URL is `sshdeck serve`'s, and
// in AWS the audit events go to EventBridge.
//
// `tunnel-service healthcheck` asks a running service's /healthz and exits
// 0 when it is healthy: the container's health check.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/app/awschain"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/web"
	"github.com/sshdeck/sshdeck/tunnel-service/emf"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnelapi"
)

// shutdownTimeout is how long in-flight requests and the recording of the
// tunnels' states get after SIGTERM (ECS waits 30 s before SIGKILL).
const shutdownTimeout = 20 * time.Second

func main() {
	if len(os.Args) == 2 && os.Args[1] == "healthcheck" {
		// The image has no shell or curl: the container's health check
		// runs the binary itself.
		os.Exit(healthcheck())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	if err := run(ctx, log); err != nil {
		log.Error("tunnel service stopped", "error", err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, app.Options{AWS: awschain.Load, Log: log})
	if err != nil {
		return err
	}
	defer a.Close()

	opts := tunnel.OptionsFrom(cfg)
	opts.Log = log
	// The hosts a connect request names by id (sourceHostId,
	// endpointHostId), read with the caller as their owner.
	opts.Hosts = &hostchain.Reader{Store: a.Store, Sealer: a.Sealer, Max: opts.JumpLimit}
	tunnels := tunnel.NewManager(a.Store, a.Sealer, opts)
	handler := tunnelapi.New(tunnelapi.Config{
		Manager:       tunnels,
		Authenticator: a.Auth,
		Ping:          a.Store.Ping,
		Audit:         a.Audit,
		BehindProxy:   cfg.TrustForwardedFor,
		Logger:        log,
	})
	listener, err := net.Listen("tcp", cfg.TunnelAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.TunnelAddr, err)
	}
	srv := web.NewHTTPServer(handler, log)
	tunnels.Start()
	var metrics *emf.Emitter
	if cfg.Table != "" {
		// os.Stdout, as the log: each line is one Write, which an *os.File
		// makes whole between the log's own.
		metrics = emf.New(os.Stdout, tunnels.Holder(), tunnels.Metrics)
		go metrics.Run(ctx, emf.Interval)
	}
	log.Info("serving", "tunnel_service", "http://"+listener.Addr().String(), "replica", tunnels.Holder())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(listener) }()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-served:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil && err == nil {
		err = serr
	}
	tunnels.Shutdown(shutdownCtx)
	if metrics != nil {
		// What the tunnels carried since the last line, up to their end.
		metrics.Emit(time.Now())
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// healthcheck asks the local service's /healthz; 0 when it answers 200.
func healthcheck() int {
	cfg, err := config.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, port, err := net.SplitHostPort(cfg.TunnelAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, config.TunnelAddr+":", err)
		return 1
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + net.JoinHostPort("127.0.0.1", port) + "/healthz")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "healthz:", resp.Status)
		return 1
	}
	return 0
}
