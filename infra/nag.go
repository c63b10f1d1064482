package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/sshdeck/sshdeck/shared/routes"
)

// suppress records the cdk-nag AwsSolutions findings this design accepts,
// each on the resources it concerns only and with the reason a reviewer
// needs. Anything else cdk-nag finds fails the synth.
func suppress(cfg Config, data *Data, api awsapigateway.RestApi, fns *Functions, tunnel *TunnelService, auditEvents *AuditEvents) {
	accept(api, "AwsSolutions-APIG2", "Each function validates its request against the contract and answers 400 naming the field (openapi.yaml); "+
		"API Gateway models would repeat that schema and answer in a body of their own.")
	if !cfg.WAF {
		accept(api, "AwsSolutions-APIG3", "The context said waf=false: no per-client rate limit. Every route but /healthz and /auth/login needs a bearer token, "+
			"the stage is throttled over all clients and /auth/login on its own, and logins lock a user name and an address out after "+
			"repeated failures. Deploy without waf=false to put the web ACL back.")
	}
	accept(api, "AwsSolutions-COG4", "The contract's authentication is sshdeck's own bearer tokens (API.md), checked by the REQUEST authorizer "+
		"over DynamoDB; there is no Cognito user pool.")
	for _, r := range routes.All {
		if !r.Public {
			continue
		}
		reason, ok := publicRoutes[r.Name]
		if !ok {
			panic(fmt.Sprintf("route %s is public (no authorizer): say why in nag.go's publicRoutes", r.Name))
		}
		accept(api.Root().ResourceForPath(jsii.String(r.Path)), "AwsSolutions-APIG4", r.Method+" "+r.Path+" "+reason)
	}
	accept(api.Node().FindChild(jsii.String("CloudWatchRole")), "AwsSolutions-IAM4", "API Gateway's account-wide logging role carries "+
		"AmazonAPIGatewayPushToCloudWatchLogs, the policy API Gateway documents for it; it only writes API Gateway's own log groups.",
		"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs")

	xray := "X-Ray's PutTraceSegments and PutTelemetryRecords have no resource-level permissions: their IAM resource is always *."
	accept(fns.Authorizer.Role(), "AwsSolutions-IAM5", xray, "Resource::*")
	for _, fn := range fns.Routes {
		accept(fn.Role(), "AwsSolutions-IAM5", xray, "Resource::*")
	}
	accept(auditEvents.Function.Role(), "AwsSolutions-IAM5", xray, "Resource::*")
	accept(auditEvents.Function.Role(), "AwsSolutions-IAM5", "dynamodb:ListStreams is authorized on the table's streams "+
		"(<table ARN>/stream/*, AWS's documented policy for a function of a DynamoDB stream); Lambda's event source mapping "+
		"calls it. The records themselves (DescribeStream, GetRecords, GetShardIterator) are granted on this stream's ARN alone.",
		"Resource::<"+logicalID(data.Table)+".Arn>/stream/*")
	accept(auditEvents.DeadLetters, "AwsSolutions-SQS3", "This queue is itself the dead-letter queue: the on-failure "+
		"destination of the stream's event source mapping and the rule target's dead-letter queue. Nothing consumes it but an "+
		"operator after its alarm; a queue behind it would be one more to watch. Messages wait 14 days, SQS's longest.")

	accept(tunnel.Service.TaskDefinition(), "AwsSolutions-ECS2", "The container's environment holds no secret: the table's name, "+
		"the credentials key's ARN, the listen address and the denied ranges. AWS access comes from the task role.")
	accept(tunnel.Service.TaskDefinition().ExecutionRole(), "AwsSolutions-IAM5", "ecr:GetAuthorizationToken has no resource-level "+
		"permissions: its IAM resource is always *. Image pulls are limited to the CDK assets repository.", "Resource::*")
	accept(tunnel.Service.LoadBalancer(), "AwsSolutions-EC23", "The tunnel service is a public API (tunnel_url): its load balancer "+
		"accepts the internet on its listener ports only; the tasks accept the load balancer only.")
	accept(tunnel.LogBucket, "AwsSolutions-S1", "This bucket holds the load balancer's access logs; logging access to it "+
		"would need a bucket of its own, and so on.")
}

// logicalID is the logical id of a construct's CloudFormation resource, as
// cdk-nag names it in a finding's appliesTo.
func logicalID(c constructs.IConstruct) string {
	return *awscdk.Stack_Of(c).GetLogicalId(c.Node().DefaultChild().(awscdk.CfnElement))
}

// publicRoutes are why each public route of the route table (Public: no
// authorizer) is public.
var publicRoutes = map[string]string{
	"healthz": "is public by contract, for load balancers and uptime checks; it reads no user's data.",
	"login": "is public by contract (API.md): it is how a client gets a token, with a user name and password (and a TOTP code). " +
		"Failures lock the name out after 5 and the address after 20 in 15 minutes, and the method has a throttle of its own " +
		"(loginThrottleRate, loginThrottleBurst).",
}

// accept suppresses finding id on construct and its children, for the
// given findings (appliesTo) or for all of the rule's.
func accept(construct constructs.IConstruct, id, reason string, appliesTo ...string) {
	s := &cdknag.NagPackSuppression{Id: jsii.String(id), Reason: jsii.String(reason)}
	if len(appliesTo) > 0 {
		list := make([]any, len(appliesTo))
		for i, a := range appliesTo {
			list[i] = a
		}
		s.AppliesTo = &list
	}
	cdknag.NagSuppressions_AddResourceSuppressions(construct, &[]*cdknag.NagPackSuppression{s}, jsii.Bool(true))
}
