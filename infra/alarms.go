package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// newAlarmTopic is where the stack's alarms go: an SNS topic that a
// deployment subscribes its people or tools to (its ARN is the output
// AlarmTopicArn). It is encrypted with a key of its own, which CloudWatch
// may use: SNS's AWS managed key would not let CloudWatch publish.
func newAlarmTopic(scope constructs.Construct) awssns.Topic {
	key := newKey(scope, "AlarmsKey", "sshdeck: encrypts the notifications of the stack's alarms (SNS)")
	cloudwatch := awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)
	// The key serves this topic alone, and SNS uses it only for a publish
	// the topic's policy allowed: its policy names CloudWatch without the
	// topic policy's conditions.
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarms"),
		Principals: &[]awsiam.IPrincipal{cloudwatch},
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey"),
		Resources:  jsii.Strings("*"),
	}), nil)
	topic := awssns.NewTopic(scope, jsii.String("Alarms"), &awssns.TopicProps{
		DisplayName: jsii.String("sshdeck alarms"),
		MasterKey:   key,
		EnforceSSL:  jsii.Bool(true),
	})
	// CloudWatch publishes for this account's alarms alone.
	stack := awscdk.Stack_Of(scope)
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("AlarmsOfThisAccount"),
		Principals: &[]awsiam.IPrincipal{cloudwatch},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  jsii.Strings(*topic.TopicArn()),
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": *stack.Account()},
			"ArnLike": map[string]any{"aws:SourceArn": *stack.FormatArn(&awscdk.ArnComponents{
				Service: jsii.String("cloudwatch"), Resource: jsii.String("alarm"), ResourceName: jsii.String("*"),
				ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
			})},
		},
	}))
	return topic
}
