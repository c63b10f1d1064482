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
//     see tunnel.OptionsFromEnv.
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
	"path/filepath"
	"syscall"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/shared/web"
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
	addr := envOr("SSHDECK_TUNNEL_ADDR", "127.0.0.1:8081")
	opts, err := tunnel.OptionsFromEnv()
	if err != nil {
		return err
	}
	opts.Log = log
	store, sealer, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()

	tunnels := tunnel.NewManager(store, sealer, opts)
	handler := tunnelapi.New(tunnelapi.Config{
		Manager:       tunnels,
		Authenticator: auth.NewAuthenticator(store, store, nil),
		Ping:          store.Ping,
		Logger:        log,
	})
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := web.NewHTTPServer(handler, log)
	tunnels.Start()
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
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// openStore opens the deployment's DynamoDB table with KMS-wrapped data
// keys, or else the embedded store with its local key file.
func openStore(ctx context.Context) (sshdeck.Store, *secret.Sealer, error) {
	if table := os.Getenv("SSHDECK_TABLE"); table != "" {
		keyID := os.Getenv("SSHDECK_KMS_KEY_ID")
		if keyID == "" {
			return nil, nil, errors.New("SSHDECK_KMS_KEY_ID is not set: name the KMS key that wraps credential data keys")
		}
		// The SDK's whole chain: in ECS, the task role's credentials. The
		// AWS_ENDPOINT_URL_* variables are honoured, for emulators.
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("load the AWS configuration: %w", err)
		}
		store := dynamo.New(dynamo.NewClient(awsCfg, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")), table)
		keyring := secret.NewKMSKeyring(kms.NewFromConfig(awsCfg), keyID)
		return store, secret.NewSealer(keyring), nil
	}
	data := envOr("SSHDECK_DATA", ".sshdeck")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create data directory: %w", err)
	}
	store, err := embedded.Open(filepath.Join(data, "sshdeck.db"))
	if err != nil {
		return nil, nil, err
	}
	keyring, err := secret.LoadOrCreateKeyFile(filepath.Join(data, "secret.key"))
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, secret.NewSealer(keyring), nil
}

// healthcheck asks the local service's /healthz; 0 when it answers 200.
func healthcheck() int {
	_, port, err := net.SplitHostPort(envOr("SSHDECK_TUNNEL_ADDR", "127.0.0.1:8081"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "SSHDECK_TUNNEL_ADDR:", err)
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

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
