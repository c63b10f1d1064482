// Package lambdaapp builds what a Lambda function of sshdeck needs, once per
// container (in main, before lambda.Start): its settings from the
// environment, the AWS clients, the DynamoDB store, the KMS keyring and the
// handler of its route (with the upstream settings of shared/app). Every functions/<route>/main.go is two calls into it.
package lambdaapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/lambdahttp"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

// Config is every setting of a function, from the environment.
type Config struct {
	// Region, AccessKeyID, SecretAccessKey and SessionToken are what Lambda
	// gives a function in its environment (AWS_REGION, AWS_ACCESS_KEY_ID, …):
	// its region and its role's credentials for the life of the container.
	// Reading them here, rather than through the SDK's config package and its
	// chain of credential sources, keeps 1.8 MB of SSO/STS/IMDS clients
	// out of every bootstrap.
	Region, AccessKeyID, SecretAccessKey, SessionToken string
	// Table is the DynamoDB table (SSHDECK_TABLE).
	Table string
	// KMSKeyID wraps the data keys of credentials (SSHDECK_KMS_KEY_ID). Only
	// the routes that handle credentials need it.
	KMSKeyID string
	// DynamoDBEndpoint replaces DynamoDB's endpoint with an emulator
	// (AWS_ENDPOINT_URL_DYNAMODB, the SDK's own name for it).
	DynamoDBEndpoint string
	// KMSEndpoint replaces KMS's endpoint (AWS_ENDPOINT_URL_KMS).
	KMSEndpoint string
}

// ConfigFromEnv reads the Config.
func ConfigFromEnv() Config {
	return Config{
		Region:           os.Getenv("AWS_REGION"),
		AccessKeyID:      os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretAccessKey:  os.Getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken:     os.Getenv("AWS_SESSION_TOKEN"),
		Table:            os.Getenv("SSHDECK_TABLE"),
		KMSKeyID:         os.Getenv("SSHDECK_KMS_KEY_ID"),
		DynamoDBEndpoint: os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"),
		KMSEndpoint:      os.Getenv("AWS_ENDPOINT_URL_KMS"),
	}
}

// check fails with a sentence naming the first missing setting.
func (c Config) check(needKey bool) error {
	switch {
	case c.Region == "":
		return errors.New("AWS_REGION is not set: Lambda sets it; elsewhere name the region of the table")
	case c.AccessKeyID == "" || c.SecretAccessKey == "":
		return errors.New("AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY is not set: Lambda sets them from the function's role")
	case c.Table == "":
		return errors.New("SSHDECK_TABLE is not set: name the DynamoDB table of sshdeck")
	case needKey && c.KMSKeyID == "":
		return errors.New("SSHDECK_KMS_KEY_ID is not set: name the KMS key that wraps credential data keys")
	}
	return nil
}

// Route builds the entry point of the named route's function.
func Route(name string) (*lambdahttp.Handler, error) {
	route, ok := routes.ByName(name)
	if !ok {
		return nil, fmt.Errorf("no route %q in the route table", name)
	}
	cfg := ConfigFromEnv()
	if err := cfg.check(route.Credentials); err != nil {
		return nil, err
	}
	awsCfg := cfg.aws()
	store := dynamo.New(dynamo.NewClient(awsCfg, cfg.DynamoDBEndpoint), cfg.Table)
	keyring := secret.Keyring(noKeyring{route: name})
	if route.Credentials {
		keyring = secret.NewKMSKeyring(newKMS(awsCfg, cfg), cfg.KMSKeyID)
	}
	apiCfg, err := app.Config(store, secret.NewSealer(keyring), app.SettingsFromEnv(), newLogger())
	if err != nil {
		return nil, err
	}
	return lambdahttp.New(api.New(apiCfg).Handler(name)), nil
}

// Authorizer builds the entry point of the authorizer function. It only
// reads tokens and users, so it needs the table and nothing else.
func Authorizer() (*auth.Authorizer, error) {
	cfg := ConfigFromEnv()
	if err := cfg.check(false); err != nil {
		return nil, err
	}
	store := dynamo.New(dynamo.NewClient(cfg.aws(), cfg.DynamoDBEndpoint), cfg.Table)
	return auth.NewAuthorizer(auth.NewAuthenticator(store, store, nil), newLogger()), nil
}

// Fail reports an initialisation error and exits: Lambda then reports an
// init failure (Runtime.ExitError) with this line in the function's log.
func Fail(err error) {
	newLogger().Error("cannot start", "error", err.Error())
	os.Exit(1)
}

func newLogger() *slog.Logger { return slog.New(slog.NewJSONHandler(os.Stdout, nil)) }

func (c Config) aws() aws.Config {
	return aws.Config{
		Region:      c.Region,
		Credentials: credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken),
	}
}

func newKMS(awsCfg aws.Config, cfg Config) *kms.Client {
	return kms.NewFromConfig(awsCfg, func(o *kms.Options) {
		if cfg.KMSEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.KMSEndpoint)
		}
	})
}

// noKeyring is the keyring of a function whose route handles no
// credentials (it has no KMS rights): using it is a route table error.
type noKeyring struct{ route string }

func (k noKeyring) DataKey(context.Context) ([]byte, []byte, error) {
	return nil, nil, fmt.Errorf("route %s is not marked Credentials in the route table, so its function has no data key", k.route)
}

func (k noKeyring) Unwrap(context.Context, []byte) ([]byte, error) {
	_, _, err := k.DataKey(context.Background())
	return nil, err
}
