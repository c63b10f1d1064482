// Package awschain loads the AWS configuration through the SDK's whole
// chain of credential sources (environment, profiles, SSO, the ECS task
// role, IMDS): what the tunnel service's container and an operator's admin
// commands need, and what a Lambda function never does. It is a package of
// its own so that the functions do not link the chain's 1.8 MB.
package awschain

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// Load is app.Options.AWS for binaries outside Lambda.
func Load(ctx context.Context) (aws.Config, error) { return awsconfig.LoadDefaultConfig(ctx) }
