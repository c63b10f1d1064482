package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// AuditEvents is how the audit records reach EventBridge in AWS (README,
// "Events in AWS"): the table's stream feeds the audit-events function,
// which puts each record on the bus as an event; a rule on the bus
// delivers every event of sshdeck to a log group, an archive a deployment
// reads at once. What the function or the rule could not deliver waits in
// a dead-letter queue under an alarm.
type AuditEvents struct {
	Bus         awsevents.EventBus
	Function    awslambda.Function
	Mapping     awslambda.EventSourceMapping
	DeadLetters awssqs.Queue
	// Undelivered is the alarm of DeadLetters; Lost, of the events the
	// rule could send neither to the log group nor to DeadLetters.
	Undelivered, Lost awscloudwatch.Alarm
	Archive           awslogs.LogGroup
	Rule              awsevents.CfnRule
	Dashboard         awscloudwatch.Dashboard
}

// The event source mapping's settings. A batch is at most 100 records,
// sent as soon as they come (no batching window: an audit event is read
// within a second or so). A batch that fails is split in two (bisect) and
// retried from its first failed record (the function reports it), at most
// 10 times and while its records are under 6 hours old; then Lambda sends
// a description of it (shard, sequence numbers) to the dead-letter queue,
// with 18 hours of the stream's 24 left to read them again. One batch per
// shard at a time: the stream's order within a shard is kept.
const (
	auditBatchSize     = 100
	auditRetryAttempts = 10
)

var auditMaxRecordAge = awscdk.Duration_Hours(jsii.Number(6))

// The rule's delivery to the log group: EventBridge's own defaults, said
// here: 185 attempts over 24 hours, then the dead-letter queue.
const (
	archiveRetryAttempts = 185
	archiveMaxEventAge   = 24 * 60 * 60
)

// deadLetterRetention is how long an undelivered batch or event waits in
// the queue: SQS's longest, two weeks to act on the alarm.
var deadLetterRetention = awscdk.Duration_Days(jsii.Number(14))

func newAuditEvents(scope constructs.Construct, cfg Config, data *Data, alarms awssns.Topic) *AuditEvents {
	a := &AuditEvents{}
	// One bus per deployment, named after its stack.
	a.Bus = awsevents.NewEventBus(scope, jsii.String("EventBus"), &awsevents.EventBusProps{
		EventBusName: jsii.String(cfg.StackName),
		Description:  jsii.String("sshdeck: an event per audit record (source sshdeck, detail-type Audit record)"),
	})
	a.DeadLetters = awssqs.NewQueue(scope, jsii.String("AuditDeadLetters"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: deadLetterRetention,
	})

	a.Function = newFunction(scope, cfg, auditEventsName, map[string]string{config.EventBus: *a.Bus.EventBusName()}, functionTimeout)
	// events:PutEvents on this bus alone; the stream to read; nothing
	// of the table (iam.AuditEventsPolicy).
	a.Function.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("events:PutEvents"),
		Resources: jsii.Strings(*a.Bus.EventBusArn()),
	}))
	data.grantStreamRead(a.Function.Role())
	a.Mapping = awslambda.NewEventSourceMapping(scope, jsii.String("AuditEventsMapping"), &awslambda.EventSourceMappingProps{
		Target:                  a.Function,
		EventSourceArn:          data.Table.TableStreamArn(),
		StartingPosition:        awslambda.StartingPosition_LATEST,
		BatchSize:               jsii.Number(auditBatchSize),
		ParallelizationFactor:   jsii.Number(1),
		BisectBatchOnError:      jsii.Bool(true),
		RetryAttempts:           jsii.Number(auditRetryAttempts),
		MaxRecordAge:            auditMaxRecordAge,
		ReportBatchItemFailures: jsii.Bool(true),
		Filters:                 &[]*map[string]any{auditInsertFilter()},
		// Grants the function's role sqs:SendMessage on the queue.
		OnFailure: awslambdaeventsources.NewSqsDlq(a.DeadLetters),
	})

	a.newArchive(scope, cfg)
	a.newAlarms(scope, cfg, alarms)
	a.Dashboard = a.newDashboard(scope, cfg)
	return a
}

// auditInsertFilter lets through the stream's inserts of audit records
// only: eventName INSERT, and a partition key of an audit month. It reads
// the key, which every record has, rather than the new image, so that a
// record reaches the function (which then fails it, loudly) even if the
// stream were to lose its images.
func auditInsertFilter() *map[string]any {
	return awslambda.FilterCriteria_Filter(&map[string]any{
		"eventName": awslambda.FilterRule_IsEqual(jsii.String("INSERT")),
		"dynamodb": map[string]any{
			"Keys": map[string]any{
				schema.PartitionKey: map[string]any{"S": awslambda.FilterRule_BeginsWith(jsii.String(schema.AuditPartitionPrefix))},
			},
		},
	})
}

// newArchive is the rule that delivers every event of sshdeck on the bus
// to a log group, and the group. The group outlives the stack, as the
// table does: it is the audit trail. CloudWatch Logs takes events from
// EventBridge by the group's resource policy (EventBridge uses no role for
// it), which allows this rule alone. The rule is CloudFormation's own: CDK's
// log group target would add a custom resource (a Lambda function of its
// own) to write that policy.
func (a *AuditEvents) newArchive(scope constructs.Construct, cfg Config) {
	a.Archive = awslogs.NewLogGroup(scope, jsii.String("AuditLog"), &awslogs.LogGroupProps{
		Retention:     retention(cfg.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	stack := awscdk.Stack_Of(scope)
	// EventBridge names a log group target by its ARN without the ":*"
	// of the group's own ARN.
	target := stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("logs"), Resource: jsii.String("log-group"), ResourceName: a.Archive.LogGroupName(),
		ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
	a.Rule = awsevents.NewCfnRule(scope, jsii.String("AuditArchiveRule"), &awsevents.CfnRuleProps{
		Name:         jsii.String(cfg.StackName + "-audit-log"),
		Description:  jsii.String("sshdeck: every event of sshdeck to the audit log group"),
		EventBusName: a.Bus.EventBusName(),
		EventPattern: map[string]any{"source": []string{audit.EventSource}},
		State:        jsii.String("ENABLED"),
		Targets: []any{&awsevents.CfnRule_TargetProperty{
			Id:               jsii.String("AuditLog"),
			Arn:              target,
			DeadLetterConfig: &awsevents.CfnRule_DeadLetterConfigProperty{Arn: a.DeadLetters.QueueArn()},
			RetryPolicy: &awsevents.CfnRule_RetryPolicyProperty{
				MaximumRetryAttempts:     jsii.Number(archiveRetryAttempts),
				MaximumEventAgeInSeconds: jsii.Number(archiveMaxEventAge),
			},
		}},
	})
	fromRule := &map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": *a.Rule.AttrArn()}}
	a.Archive.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("AuditEventsFromTheRule"),
		Principals: &[]awsiam.IPrincipal{
			awsiam.NewServicePrincipal(jsii.String("events.amazonaws.com"), nil),
			awsiam.NewServicePrincipal(jsii.String("delivery.logs.amazonaws.com"), nil),
		},
		Actions:    jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources:  jsii.Strings(*a.Archive.LogGroupArn()),
		Conditions: fromRule,
	}))
	// EventBridge sends what it could not deliver to the queue by the
	// queue's policy, for this rule alone.
	a.DeadLetters.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("UndeliveredEventsOfTheRule"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("events.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  jsii.Strings(*a.DeadLetters.QueueArn()),
		Conditions: fromRule,
	}))
}

// ruleMetric is a metric of the archive's rule (namespace AWS/Events).
func (a *AuditEvents) ruleMetric(name, statistic string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String("AWS/Events"),
		MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{
			"EventBusName": a.Bus.EventBusName(),
			"RuleName":     a.Rule.Name(),
		},
		Statistic: jsii.String(statistic),
		Period:    awscdk.Duration_Minutes(jsii.Number(5)),
	})
}

// newAlarms: a message in the dead-letter queue is an audit record whose
// event did not reach the bus, or an event that did not reach the log
// group; an event that reached neither the group nor the queue is lost.
// Either alarms at once.
func (a *AuditEvents) newAlarms(scope constructs.Construct, cfg Config, topic awssns.Topic) {
	action := awscloudwatchactions.NewSnsAction(topic)
	a.Undelivered = awscloudwatch.NewAlarm(scope, jsii.String("AuditDeadLettersAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String("sshdeck: audit events wait in the dead-letter queue: records the audit-events function " +
			"could not put on the bus (a description of the stream batch), or events the rule could not deliver to the audit log group. " +
			"README, \"Events in AWS\", says how to read and replay them."),
		Metric: a.DeadLetters.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Maximum"), Period: awscdk.Duration_Minutes(jsii.Number(5)),
		}),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	a.Undelivered.AddAlarmAction(action)
	a.Lost = awscloudwatch.NewAlarm(scope, jsii.String("AuditEventsLostAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String("sshdeck: the audit log rule could deliver events neither to the log group nor to the " +
			"dead-letter queue (its policy, or the queue itself): they are lost from the archive. The records are still in the table."),
		Metric:             a.ruleMetric("InvocationsFailedToBeSentToDlq", "Sum"),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	a.Lost.AddAlarmAction(action)
}

// newDashboard shows the path at a glance: the function's invocations,
// errors and how far behind the stream it reads, the rule's deliveries,
// the dead letters, and the alarms.
func (a *AuditEvents) newDashboard(scope constructs.Construct, cfg Config) awscloudwatch.Dashboard {
	minutes5 := &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")}
	iteratorAge := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/Lambda"), MetricName: jsii.String("IteratorAge"),
		DimensionsMap: &map[string]*string{"FunctionName": a.Function.FunctionName()},
		Statistic:     jsii.String("Maximum"), Period: awscdk.Duration_Minutes(jsii.Number(5)),
	})
	dashboard := awscloudwatch.NewDashboard(scope, jsii.String("AuditDashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String(cfg.StackName + "-audit-events"),
	})
	dashboard.AddWidgets(
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String("audit-events function"),
			Left:  &[]awscloudwatch.IMetric{a.Function.MetricInvocations(minutes5), a.Function.MetricErrors(minutes5)},
			Width: jsii.Number(8),
		}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String("Age of the stream records read (ms)"),
			Left:  &[]awscloudwatch.IMetric{iteratorAge},
			Width: jsii.Number(8),
		}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String("Audit log rule"),
			Left: &[]awscloudwatch.IMetric{
				a.ruleMetric("Invocations", "Sum"), a.ruleMetric("FailedInvocations", "Sum"),
				a.ruleMetric("InvocationsSentToDlq", "Sum"), a.ruleMetric("InvocationsFailedToBeSentToDlq", "Sum"),
			},
			Width: jsii.Number(8),
		}),
	)
	dashboard.AddWidgets(
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String("Dead letters"),
			Left: &[]awscloudwatch.IMetric{a.DeadLetters.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
				Statistic: jsii.String("Maximum"), Period: awscdk.Duration_Minutes(jsii.Number(5)),
			})},
			Width: jsii.Number(12),
		}),
		awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
			Title:  jsii.String("Alarms"),
			Alarms: &[]interfacesawscloudwatch.IAlarmRef{a.Undelivered, a.Lost},
			Width:  jsii.Number(12),
		}),
	)
	return dashboard
}
