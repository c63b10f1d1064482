package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
)

// The functions that serve no route: the REST API's authorizer, and the
// consumer of the table's stream (audit.go). Their directories in
// functions/, as functions.NotRoutes names them.
const (
	authorizerName  = "authorizer"
	auditEventsName = "audit-events"
)

// functionNames is every Lambda function: the authorizer, audit-events and
// one per route.
func functionNames() []string {
	names := []string{authorizerName, auditEventsName}
	for _, r := range routes.All {
		names = append(names, r.Name)
	}
	return names
}

// Functions are the Lambda functions of the REST API, by route name.
type Functions struct {
	Authorizer awslambda.Function
	Routes     map[string]awslambda.Function
}

func newFunctions(scope constructs.Construct, cfg Config, data *Data) *Functions {
	fns := &Functions{Routes: map[string]awslambda.Function{}}
	fns.Authorizer = newFunction(scope, cfg, authorizerName, map[string]string{
		config.Table: *data.Table.TableName(),
	}, functionTimeout)
	data.grantTable(fns.Authorizer.Role(), iam.AuthorizerPolicy())

	for _, r := range routes.All {
		env := map[string]string{config.Table: *data.Table.TableName()}
		if r.Credentials {
			env[config.KMSKeyID] = *data.CredentialsKey.KeyArn()
		}
		// Each function gets only the settings its route reads.
		switch r.Name {
		case "releases-feed":
			setIf(env, config.ReleasesRepo, cfg.ReleasesRepo)
			setIf(env, config.ReleasesAPIURL, cfg.ReleasesAPIURL)
		case "list-alerts", "dismiss-alert":
			setIf(env, config.AlertsURL, cfg.AlertsURL)
		}
		timeout := functionTimeout
		if r.Stream {
			timeout = streamTimeout
		}
		fn := newFunction(scope, cfg, r.Name, env, timeout)
		policy, ok := iam.RoutePolicy(r.Name)
		if !ok {
			panic(fmt.Sprintf("route %s has no DynamoDB policy in shared/store/dynamo/iam", r.Name))
		}
		data.grantTable(fn.Role(), policy)
		if r.Credentials {
			data.grantCredentials(fn.Role())
		}
		fns.Routes[r.Name] = fn
	}
	return fns
}

// functionTimeout is a function's timeout: the releases feed waits up to
// 10 s for GitHub; API Gateway gives up on a buffered answer at 29 s.
const functionTimeout float64 = 15

// streamTimeout is the timeout of a function whose answer streams
// (routes.Route.Stream), and of its integration: Lambda streams the first
// 6 MB of an answer uncapped, the rest at 2 MB/s (API Gateway: past 10 MB,
// 2 MB/s), so the list of 1000 hosts with 64 KiB keys (67 MB) takes some
// 30 s to leave; twice that, and a margin.
const streamTimeout float64 = 90

// memoryOf is a function's memory in MB: its route's (routes.Route.MemoryMB,
// which says why the routes that hash passwords get more), the default for
// the authorizer.
func memoryOf(name string) float64 {
	if r, ok := routes.ByName(name); ok {
		return float64(r.MemoryMB())
	}
	return routes.DefaultMemoryMB
}

// newFunction is the function build/<name>/bootstrap (make build): arm64 on
// provided.al2023, its own role and its own log group, timing out after
// timeout seconds.
func newFunction(scope constructs.Construct, cfg Config, name string, env map[string]string, timeout float64) awslambda.Function {
	id := constructID(name)
	logs := awslogs.NewLogGroup(scope, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention:     retention(cfg.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	// A role of its own (rather than the one Function makes) so that it
	// carries no AWS managed policy: only its log group, X-Ray, and the
	// grants newFunctions adds.
	role := awsiam.NewRole(scope, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("sshdeck function " + name),
	})
	logs.GrantWrite(role)
	vars := map[string]*string{}
	for k, v := range env {
		vars[k] = jsii.String(v)
	}
	return awslambda.NewFunction(scope, jsii.String(id), &awslambda.FunctionProps{
		Description:  jsii.String("sshdeck " + name),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(cfg.Root, "build", name)), nil),
		MemorySize:   jsii.Number(memoryOf(name)),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(timeout)),
		Role:         role,
		LogGroup:     logs,
		Tracing:      awslambda.Tracing_ACTIVE,
		Environment:  &vars,
	})
}

func setIf(env map[string]string, name, value string) {
	if value != "" {
		env[name] = value
	}
}

// constructID turns a route name (list-hosts) into a construct id
// (ListHosts).
func constructID(name string) string {
	var b strings.Builder
	for word := range strings.SplitSeq(name, "-") {
		b.WriteString(strings.ToUpper(word[:1]) + word[1:])
	}
	return b.String()
}

// retentions are the retention periods CloudWatch Logs offers, in days.
var retentions = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS,
	5: awslogs.RetentionDays_FIVE_DAYS, 7: awslogs.RetentionDays_ONE_WEEK,
	14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS,
	120: awslogs.RetentionDays_FOUR_MONTHS, 150: awslogs.RetentionDays_FIVE_MONTHS,
	180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS,
	731: awslogs.RetentionDays_TWO_YEARS, 1096: awslogs.RetentionDays_THREE_YEARS,
	1827: awslogs.RetentionDays_FIVE_YEARS, 3653: awslogs.RetentionDays_TEN_YEARS,
}

func retention(days int) awslogs.RetentionDays { return retentions[days] }

func retentionChoices() []int {
	days := make([]int, 0, len(retentions))
	for d := range retentions {
		days = append(days, d)
	}
	slices.Sort(days)
	return days
}
