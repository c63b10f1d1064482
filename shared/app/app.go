// Package app is the one wiring of sshdeck: from the settings (shared/config)
// to the store, the sealer of credentials and the authenticator of bearer
// tokens, for every shape the product runs in. Each binary opens an App and
// builds its own handlers on it:
//
//   - a Lambda function of a route: DynamoDB and KMS with the function
//     role's credentials from the environment (shared/lambdaapp adds the
//     route's handler);
//   - the authorizer function: DynamoDB only (Authorizer);
//   - the tunnel service container, and the admin CLI with --table:
//     DynamoDB and KMS with the credentials of the SDK's chain (awschain);
//   - `sshdeck serve`, the tunnel service without a table and the admin CLI
//     on a laptop: the embedded store and the key file in the data directory.
//
// It builds no handler itself, so that a binary links only what it runs:
// the authorizer links no host, feed or upstream code.
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
	Log  *slog.Logger
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

// Open builds the App of cfg: over cfg.Table when it is set, else over the
// embedded store in cfg.Data (created, mode 0700). Close releases it.
func Open(ctx context.Context, cfg config.Config, opts Options) (*App, error) {
	a := &App{Config: cfg, Log: opts.Log}
	if a.Log == nil {
		a.Log = slog.New(slog.DiscardHandler)
	}
	var keyring secret.Keyring = noKeyring{why: opts.NoDataKey}
	needKey := opts.NoDataKey == ""
	var err error
	if cfg.Table != "" {
		a.Store, err = openCloud(ctx, cfg, opts, needKey, &keyring)
	} else {
		a.Store, err = openLocal(cfg, needKey, &keyring)
	}
	if err != nil {
		return nil, err
	}
	a.Sealer = secret.NewSealer(keyring)
	a.Auth = auth.NewAuthenticator(a.Store, a.Store, nil)
	return a, nil
}

// Close closes the store.
func (a *App) Close() error { return a.Store.Close() }

// Authorizer builds the REST API's REQUEST authorizer of a Lambda function:
// it only reads tokens and users, so it needs the table and nothing else.
func Authorizer(ctx context.Context) (*auth.Authorizer, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, err
	}
	if err := CheckLambda(cfg, false); err != nil {
		return nil, err
	}
	a, err := Open(ctx, cfg, Options{NoDataKey: "the authorizer reads no credentials", Log: LambdaLog()})
	if err != nil {
		return nil, err
	}
	return auth.NewAuthorizer(a.Auth, a.Log), nil
}

// CheckLambda fails with a sentence naming the first setting a Lambda
// function is missing; needKey for a function that handles credentials.
func CheckLambda(cfg config.Config, needKey bool) error {
	switch {
	case cfg.AWS.Region == "":
		return config.Missing(config.AWSRegion, "Lambda sets it; elsewhere name the region of the table")
	case cfg.AWS.AccessKeyID == "" || cfg.AWS.SecretAccessKey == "":
		return config.Missing(config.AWSAccessKeyID+" or "+config.AWSSecretAccessKey, "Lambda sets them from the function's role")
	case cfg.Table == "":
		return config.Missing(config.Table, "name the DynamoDB table of sshdeck")
	case needKey && cfg.KMSKeyID == "":
		return config.Missing(config.KMSKeyID, "name the KMS key that wraps credential data keys")
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

// openCloud opens the deployment's table and, when the binary needs one,
// the keyring of data keys wrapped by KMS.
func openCloud(ctx context.Context, cfg config.Config, opts Options, needKey bool, keyring *secret.Keyring) (sshdeck.Store, error) {
	awsCfg := aws.Config{
		Region:      cfg.AWS.Region,
		Credentials: credentials.NewStaticCredentialsProvider(cfg.AWS.AccessKeyID, cfg.AWS.SecretAccessKey, cfg.AWS.SessionToken),
	}
	if opts.AWS != nil {
		var err error
		if awsCfg, err = opts.AWS(ctx); err != nil {
			return nil, fmt.Errorf("load the AWS configuration: %w", err)
		}
	}
	store := dynamo.New(dynamo.NewClient(awsCfg, cfg.AWS.DynamoDBEndpoint), cfg.Table)
	if !needKey {
		return store, nil
	}
	if cfg.KMSKeyID == "" {
		return nil, config.Missing(config.KMSKeyID, "name the KMS key that wraps credential data keys")
	}
	client := kms.NewFromConfig(awsCfg, func(o *kms.Options) {
		if cfg.AWS.KMSEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.AWS.KMSEndpoint)
		}
	})
	*keyring = secret.NewKMSKeyring(client, cfg.KMSKeyID)
	return store, nil
}

// openLocal opens the embedded store of the data directory and, when the
// binary needs one, its key file, creating them on first use.
func openLocal(cfg config.Config, needKey bool, keyring *secret.Keyring) (sshdeck.Store, error) {
	if err := os.MkdirAll(cfg.Data, 0o700); err != nil {
		return nil, fmt.Errorf("create the data directory: %w", err)
	}
	store, err := embedded.Open(DBPath(cfg.Data))
	if err != nil || !needKey {
		return store, err
	}
	local, err := secret.LoadOrCreateKeyFile(filepath.Join(cfg.Data, "secret.key"))
	if err != nil {
		store.Close()
		return nil, err
	}
	*keyring = local
	return store, nil
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
