package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// NewStack is all of sshdeck in one stack: its data, the REST API and its
// functions, the tunnel service, and the audit records' events (the event
// bus, the stream's consumer, the audit log, their dead letters and
// alarms). Its outputs are the two URLs clients use, and the names a
// deployment needs to operate it.
// The cdk-nag AwsSolutions checks run over it on every synth; a finding
// that is not suppressed (with its reason, in nag.go) fails the synth.
func NewStack(scope constructs.Construct, cfg Config) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(cfg.StackName), &awscdk.StackProps{
		Env:         &awscdk.Environment{Account: optional(cfg.Account), Region: jsii.String(cfg.Region)},
		Description: jsii.String("sshdeck: SSH hosts, file manager lists, alerts, releases feed and SSH tunnels"),
	})
	data := newData(stack)
	fns := newFunctions(stack, cfg, data)
	api := newAPI(stack, cfg, fns)
	tunnel := newTunnelService(stack, cfg, data)
	alarms := newAlarmTopic(stack)
	metrics := newTunnelMetrics(stack, cfg, alarms)
	auditEvents := newAuditEvents(stack, cfg, data, alarms)
	if cfg.WAF {
		newWAF(stack, cfg, api, tunnel.Service.LoadBalancer().LoadBalancerArn())
	}

	awscdk.NewCfnOutput(stack, jsii.String("BaseUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("base_url: the REST API (every route but the tunnel ones)"),
		// No trailing slash: clients append /ssh/db/host and so on.
		Value: jsii.String("https://" + *api.RestApiId() + ".execute-api." + *stack.Region() + "." + *stack.UrlSuffix() + "/" + stageName),
	})
	awscdk.NewCfnOutput(stack, jsii.String("TunnelUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("tunnel_url: the tunnel service"),
		Value:       jsii.String(tunnel.URL),
	})
	awscdk.NewCfnOutput(stack, jsii.String("TunnelLoadBalancer"), &awscdk.CfnOutputProps{
		Description: jsii.String("the tunnel service's load balancer, for a CNAME (tunnelDomainName)"),
		Value:       tunnel.Service.LoadBalancer().LoadBalancerDnsName(),
	})
	awscdk.NewCfnOutput(stack, jsii.String("TunnelDashboardUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("the tunnel service's CloudWatch dashboard"),
		Value: jsii.String("https://console.aws.amazon.com/cloudwatch/home?region=" + *stack.Region() +
			"#dashboards:name=" + *metrics.Dashboard.DashboardName()),
	})
	awscdk.NewCfnOutput(stack, jsii.String("TunnelsStuckAlarmArn"), &awscdk.CfnOutputProps{
		Description: jsii.String("the alarm on tunnels stuck retrying (it notifies AlarmTopicArn)"),
		Value:       metrics.StuckRetrying.AlarmArn(),
	})
	awscdk.NewCfnOutput(stack, jsii.String("TableName"), &awscdk.CfnOutputProps{
		Description: jsii.String("the DynamoDB table, for sshdeck's admin commands (--table)"),
		Value:       data.Table.TableName(),
	})

	awscdk.NewCfnOutput(stack, jsii.String("EventBusName"), &awscdk.CfnOutputProps{
		Description: jsii.String("the EventBridge bus of the audit records' events (source sshdeck): add rules to it to route them"),
		Value:       auditEvents.Bus.EventBusName(),
	})
	awscdk.NewCfnOutput(stack, jsii.String("EventBusArn"), &awscdk.CfnOutputProps{
		Description: jsii.String("the EventBridge bus's ARN, for rules and policies in other stacks or accounts"),
		Value:       auditEvents.Bus.EventBusArn(),
	})
	awscdk.NewCfnOutput(stack, jsii.String("AuditLogGroup"), &awscdk.CfnOutputProps{
		Description: jsii.String("the CloudWatch Logs group that keeps every audit event (one log event each)"),
		Value:       auditEvents.Archive.LogGroupName(),
	})
	awscdk.NewCfnOutput(stack, jsii.String("AlarmTopicArn"), &awscdk.CfnOutputProps{
		Description: jsii.String("the SNS topic of the stack's alarms: subscribe to it (aws sns subscribe --protocol email ...)"),
		Value:       alarms.TopicArn(),
	})

	// The constructs' own outputs say the same URLs under generated names.
	api.Node().TryRemoveChild(jsii.String("Endpoint"))
	tunnel.Service.Node().TryRemoveChild(jsii.String("LoadBalancerDNS"))
	tunnel.Service.Node().TryRemoveChild(jsii.String("ServiceURL"))

	suppress(cfg, data, api, fns, tunnel, auditEvents)
	awscdk.Aspects_Of(stack).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	return stack
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
