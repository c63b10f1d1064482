// Command infra is sshdeck's CDK app: the DynamoDB table and its keys, one
// Lambda function per route behind a REST API with a bearer-token
// authorizer, and the tunnel service on ECS Fargate behind a load balancer.
// cdk.json at the repository root runs it; `make synth`, `make diff` and
// `make deploy` run cdk. Every synth runs the cdk-nag AwsSolutions checks.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

func main() {
	// No defer jsii.Close(): the jsii runtime's node process ends with this
	// one, and Close made it report a spurious "waitid: no child processes".
	app := awscdk.NewApp(nil)
	cfg, err := ConfigFrom(app.Node())
	if err != nil {
		fmt.Fprintln(os.Stderr, "sshdeck infra:", err)
		os.Exit(1)
	}
	NewStack(app, cfg)
	app.Synth(nil)
}
