// Package app is the one wiring of sshdeck: from the settings (shared/config)
// to the store, the sealer of credentials and the authenticator of bearer
// tokens, for every shape the product runs in. Each binary opens an App and
// builds its own handlers on it:
//
//   - `sshdeck serve`, the tunnel service without a table and the admin CLI
//     on a laptop: Open, over the embedded store and the key file in the
//     data directory;
//   - the tunnel service container, and the admin CLI with --table: Open
//     with cfg.Table, DynamoDB and KMS with the credentials of the SDK's
//     chain (Options.AWS = awschain.Load);
//   - a Lambda function of a route: OpenTable, DynamoDB and KMS with the
//     function role's credentials from the environment (shared/lambdaapp
//     adds the route's handler);
//   - the authorizer function: Authorizer, the table and the authenticator;
//   - the consumer of the table's stream: auditapp.AuditEvents, an
//     EventBridge client and no store at all (in a package of its own,
//     shared/app/auditapp, which only that function links).
//
// The entry points share every piece; they are apart so that a binary
// links only what it runs: no function links the embedded store or the
// SDK's credential chain, the authorizer links no KMS client and no
// handler (app builds none: shared/api does, over an App), and the stream's
// consumer none of those nor the store's client.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// App is what a binary of sshdeck runs on.
type App struct {
	Config config.Config
	Store  sshdeck.Store
	// Sealer seals and opens credential fields. Without a data key (see
	// Options.NoDataKey) every use of it fails, saying why.
	Sealer *secret.Sealer
	// Auth checks bearer tokens against the store, caching answers 30 s.
	Auth *auth.Authenticator
	// Audit records the changes of every service over the store, kept
	// SSHDECK_AUDIT_DAYS.
	Audit *audit.Recorder
	Log   *slog.Logger
}

// Options are what differs between the binaries beyond their settings.
type Options struct {
	// AWS loads the AWS configuration when the store is a DynamoDB table.
	// nil takes the region and credentials of the environment as Lambda
	// sets them (config.AWS), without the SDK's chain of SSO, STS and IMDS
	// providers, which would add 1.8 MB to every function; a container or
	// an operator's machine passes awschain.Load.
	AWS func(context.Context) (aws.Config, error)
	// NoDataKey: the binary handles no credentials (a route's function
	// without Credentials in the route table has no KMS rights).
	NoDataKey string
	// Log is the binary's logger; nil discards.
	Log *slog.Logger
}

// Open builds the App of cfg: over cfg.Table when it is set (OpenTable),
// else over the embedded store in cfg.Data (created with mode 0700, and
// made 0700 when it exists with another mode: it holds the data key).
// Close releases it.
func Open(ctx context.Context, cfg config.Config, opts Options) (*App, error) {
	if cfg.Table != "" {
		return OpenTable(ctx, cfg, opts)
	}
	if err := privateDir(cfg.Data, opts.Log); err != nil {
		return nil, err
	}
	store, err := embedded.Open(DBPath(cfg.Data))
	if err != nil {
		return nil, err
	}
	var keyring secret.Keyring = noKeyring{why: opts.NoDataKey}
	if opts.NoDataKey == "" {
		if keyring, err = secret.LoadOrCreateKeyFile(filepath.Join(cfg.Data, "secret.key")); err != nil {
			store.Close()
			return nil, err
		}
	}
	return newApp(cfg, opts, store, keyring), nil
}

// OpenTable is Open over the deployment's table, with data keys wrapped by
// KMS: what a route's Lambda function opens. It is apart from Open so that
// no function links the embedded store.
func OpenTable(ctx context.Context, cfg config.Config, opts Options) (*App, error) {
	awsCfg, err := awsConfig(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	var keyring secret.Keyring = noKeyring{why: opts.NoDataKey}
	if opts.NoDataKey == "" {
		if cfg.KMSKeyID == "" {
			return nil, config.Missing(config.KMSKeyID, "name the KMS key that wraps credential data keys")
		}
		client := kms.NewFromConfig(awsCfg, func(o *kms.Options) {
			if cfg.AWS.KMSEndpoint != "" {
				o.BaseEndpoint = aws.String(cfg.AWS.KMSEndpoint)
			}
		})
		keyring = secret.NewKMSKeyring(client, cfg.KMSKeyID)
	}
	return newApp(cfg, opts, tableStore(awsCfg, cfg), keyring), nil
}

// Close closes the store.
func (a *App) Close() error { return a.Store.Close() }

// Authorizer builds the REST API's REQUEST authorizer of a Lambda function:
// it reads tokens and users, and writes nothing but a token's lastUsedAt
// (TouchToken), so it opens the table and nothing else (no keyring, no KMS
// client, no embedded store to link).
func Authorizer(ctx context.Context) (*auth.Authorizer, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, err
	}
	if err := CheckLambda(cfg, false); err != nil {
		return nil, err
	}
	awsCfg, err := awsConfig(ctx, cfg, Options{})
	if err != nil {
		return nil, err
	}
	store := tableStore(awsCfg, cfg)
	return auth.NewAuthorizer(auth.NewAuthenticator(store, store, nil), LambdaLog()), nil
}

func newApp(cfg config.Config, opts Options, store sshdeck.Store, keyring secret.Keyring) *App {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &App{
		Config: cfg,
		Store:  store,
		Sealer: secret.NewSealer(keyring),
		Auth:   auth.NewAuthenticator(store, store, nil),
		Audit:  &audit.Recorder{Store: store, Retention: cfg.AuditRetention(), Log: log},
		Log:    log,
	}
}

// awsConfig is the AWS configuration of opts.AWS, or else of the
// environment as Lambda sets it.
func awsConfig(ctx context.Context, cfg config.Config, opts Options) (aws.Config, error) {
	if opts.AWS != nil {
		awsCfg, err := opts.AWS(ctx)
		if err != nil {
			return aws.Config{}, fmt.Errorf("load the AWS configuration: %w", err)
		}
		return awsCfg, nil
	}
	return aws.Config{
		Region:      cfg.AWS.Region,
		Credentials: credentials.NewStaticCredentialsProvider(cfg.AWS.AccessKeyID, cfg.AWS.SecretAccessKey, cfg.AWS.SessionToken),
	}, nil
}

func tableStore(awsCfg aws.Config, cfg config.Config) *dynamo.Store {
	return dynamo.New(dynamo.NewClient(awsCfg, cfg.AWS.DynamoDBEndpoint), cfg.Table)
}

// CheckLambda fails with a sentence naming the first setting a Lambda
// function is missing; needKey for a function that handles credentials.
func CheckLambda(cfg config.Config, needKey bool) error {
	if err := checkLambdaAWS(cfg); err != nil {
		return err
	}
	switch {
	case cfg.Table == "":
		return config.Missing(config.Table, "name the DynamoDB table of sshdeck")
	case needKey && cfg.KMSKeyID == "":
		return config.Missing(config.KMSKeyID, "name the KMS key that wraps credential data keys")
	}
	return nil
}

// LambdaAWS is the AWS configuration of a Lambda function from its
// environment (the region, the role's credentials), for a function that
// opens no table (auditapp); it fails naming a missing setting.
func LambdaAWS(cfg config.Config) (aws.Config, error) {
	if err := checkLambdaAWS(cfg); err != nil {
		return aws.Config{}, err
	}
	return awsConfig(context.Background(), cfg, Options{})
}

// checkLambdaAWS fails with a sentence naming the first of Lambda's own
// settings that is missing: the region and the role's credentials.
func checkLambdaAWS(cfg config.Config) error {
	switch {
	case cfg.AWS.Region == "":
		return config.Missing(config.AWSRegion, "Lambda sets it; elsewhere name the region of the table")
	case cfg.AWS.AccessKeyID == "" || cfg.AWS.SecretAccessKey == "":
		return config.Missing(config.AWSAccessKeyID+" or "+config.AWSSecretAccessKey, "Lambda sets them from the function's role")
	}
	return nil
}

// LambdaLog is a Lambda function's logger: JSON lines on stdout, which
// Lambda sends to the function's log group.
func LambdaLog() *slog.Logger { return slog.New(slog.NewJSONHandler(os.Stdout, nil)) }

// Fail reports a Lambda function's initialisation error and exits: Lambda
// then reports an init failure (Runtime.ExitError) with this line in the
// function's log.
func Fail(err error) {
	LambdaLog().Error("cannot start", "error", err.Error())
	os.Exit(1)
}

// privateDir creates the data directory dir with mode 0700, or makes an
// existing one 0700 (saying so in the log): the data key, the store and
// the admin socket are in it, and none is for other users.
func privateDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the data directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("the data directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the data directory %s is not a directory", dir)
	}
	if mode := fi.Mode().Perm(); mode != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make the data directory %s private (mode 0700): %w", dir, err)
		}
		if log != nil {
			log.Warn("the data directory was open to others: made it private", "data", dir, "mode_was", fmt.Sprintf("%#o", mode), "mode", "0700")
		}
	}
	return nil
}

// DBPath is the embedded store's file in a data directory.
func DBPath(data string) string { return filepath.Join(data, "sshdeck.db") }

// noKeyring is the keyring of a binary without a data key: using it is a
// wiring error, which it names.
type noKeyring struct{ why string }

func (k noKeyring) DataKey(context.Context) ([]byte, []byte, error) {
	return nil, nil, fmt.Errorf("no data key for credentials: %s", k.why)
}

func (k noKeyring) Unwrap(ctx context.Context, _ []byte) ([]byte, error) {
	_, _, err := k.DataKey(ctx)
	return nil, err
}
