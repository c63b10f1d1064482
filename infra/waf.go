package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// wafMinRate and wafMaxRate are AWS WAF's bounds on a rate-based rule's
// limit (requests per aggregation key in the evaluation window).
const (
	wafMinRate = 10
	wafMaxRate = 2_000_000_000
)

// wafWindow is the rule's evaluation window, in seconds: WAF counts each
// client's requests over the last 5 minutes (its default; 60, 120, 300 or
// 600).
const wafWindow = 300

// rateLimitedBody is the answer WAF gives a client past the limit: the
// contract's error body, as API Gateway's own 429 (THROTTLED) says it.
const rateLimitedBody = `{"error":"too many requests: slow down and retry","code":"rate_limited"}`

// newWAF is the per-client rate limit in front of both services: one
// regional web ACL with one rate-based rule that counts each client IP
// address's requests (to the REST API's stage and to the tunnel service's
// load balancer together) and answers 429 rate_limited past cfg.WAFRate in
// 5 minutes, with Retry-After. Everything else is allowed: the services
// check their own requests. One web ACL and one rule: $5 and $1 a month,
// and $0.60 per million requests (README.md, "Cost").
func newWAF(scope constructs.Construct, cfg Config, api awsapigateway.RestApi, loadBalancerARN *string) awswafv2.CfnWebACL {
	visibility := func(metric string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true),
			MetricName:               jsii.String(metric),
			SampledRequestsEnabled:   jsii.Bool(true),
		}
	}
	acl := awswafv2.NewCfnWebACL(scope, jsii.String("Waf"), &awswafv2.CfnWebACLProps{
		Description:      jsii.String("sshdeck: a per-client rate limit in front of the REST API and the tunnel service"),
		Scope:            jsii.String("REGIONAL"),
		DefaultAction:    &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &awswafv2.CfnWebACL_AllowActionProperty{}},
		VisibilityConfig: visibility(cfg.StackName + "Waf"),
		CustomResponseBodies: &map[string]*awswafv2.CfnWebACL_CustomResponseBodyProperty{
			"rateLimited": {ContentType: jsii.String("APPLICATION_JSON"), Content: jsii.String(rateLimitedBody)},
		},
		Rules: &[]*awswafv2.CfnWebACL_RuleProperty{{
			Name:     jsii.String("RatePerClient"),
			Priority: jsii.Number(0),
			Statement: &awswafv2.CfnWebACL_StatementProperty{
				RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
					Limit:               jsii.Number(float64(cfg.WAFRate)),
					AggregateKeyType:    jsii.String("IP"),
					EvaluationWindowSec: jsii.Number(wafWindow),
				},
			},
			Action: &awswafv2.CfnWebACL_RuleActionProperty{
				Block: &awswafv2.CfnWebACL_BlockActionProperty{
					CustomResponse: &awswafv2.CfnWebACL_CustomResponseProperty{
						ResponseCode:          jsii.Number(429),
						CustomResponseBodyKey: jsii.String("rateLimited"),
						ResponseHeaders: &[]*awswafv2.CfnWebACL_CustomHTTPHeaderProperty{
							{Name: jsii.String("Retry-After"), Value: jsii.String("60")},
						},
					},
				},
			},
			VisibilityConfig: visibility(cfg.StackName + "RatePerClient"),
		}},
	})
	stage := awswafv2.NewCfnWebACLAssociation(scope, jsii.String("WafApi"), &awswafv2.CfnWebACLAssociationProps{
		ResourceArn: api.DeploymentStage().StageArn(),
		WebAclArn:   acl.AttrArn(),
	})
	stage.Node().AddDependency(api.DeploymentStage())
	awswafv2.NewCfnWebACLAssociation(scope, jsii.String("WafTunnel"), &awswafv2.CfnWebACLAssociationProps{
		ResourceArn: loadBalancerARN,
		WebAclArn:   acl.AttrArn(),
	})
	return acl
}
