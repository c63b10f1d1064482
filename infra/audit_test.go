package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// The audit records' path into EventBridge (audit.go): the table's stream,
// the audit-events function and its event source mapping, the bus, the
// rule to the audit log group, the dead-letter queue and the alarms, the
// dashboard.

// auditEventsRole is the logical id of the audit-events function's role.
func (s *synthesis) auditEventsRole(t *testing.T) string {
	t.Helper()
	role, _ := getAtt(s.Resources[s.functionIDs(t)[auditEventsName]].Properties["Role"])
	if role == "" {
		t.Fatal("audit-events has no role of its own")
	}
	return role
}

// auditRule is the rule on the bus and its one target.
func (s *synthesis) auditRule(t *testing.T) (id string, rule resource, target map[string]any) {
	t.Helper()
	id, rule = s.only(t, "AWS::Events::Rule")
	targets := list(rule.Properties["Targets"])
	if len(targets) != 1 {
		t.Fatalf("rule %s has %d targets, want the audit log group alone", id, len(targets))
	}
	target, _ = targets[0].(map[string]any)
	return id, rule, target
}

// auditLogGroup is the logical id of the log group the rule delivers to.
func (s *synthesis) auditLogGroup(t *testing.T) string {
	t.Helper()
	_, _, target := s.auditRule(t)
	for _, id := range s.ids("AWS::Logs::LogGroup") {
		if refersTo(target["Arn"], id) {
			return id
		}
	}
	t.Fatalf("the rule's target %s is no log group of the stack", render(target["Arn"]))
	return ""
}

// deadLetters is the logical id of the one queue: the audit events' dead
// letters.
func (s *synthesis) deadLetters(t *testing.T) string {
	t.Helper()
	id, _ := s.only(t, "AWS::SQS::Queue")
	return id
}

// TestAuditEventBus: one custom bus, named after the stack.
func TestAuditEventBus(t *testing.T) {
	for _, synth := range []struct {
		name string
		s    *synthesis
	}{{"default", synthDefault(t)}, {"https", synthHTTPS(t)}} {
		_, bus := synth.s.only(t, "AWS::Events::EventBus")
		if name := bus.Properties["Name"]; name != synth.s.cfg.StackName {
			t.Errorf("%s synth: the bus is named %v, want the stack's name %s", synth.name, name, synth.s.cfg.StackName)
		}
	}
}

// TestAuditEventsMapping: the table's stream invokes audit-events, with
// the inserts of audit records only, from the newest record on, 100 at a
// time, one batch per shard; a failed batch is split and retried from the
// record the function reports, 10 times within 6 hours, then described in
// the dead-letter queue.
func TestAuditEventsMapping(t *testing.T) {
	s := synthDefault(t)
	table, _ := s.only(t, "AWS::DynamoDB::Table")
	id, mapping := s.only(t, "AWS::Lambda::EventSourceMapping")
	p := mapping.Properties
	if got := refID(p["FunctionName"]); got != s.functionIDs(t)[auditEventsName] {
		t.Errorf("mapping %s invokes %s, want audit-events", id, render(p["FunctionName"]))
	}
	if got, attribute := getAtt(p["EventSourceArn"]); got != table || attribute != "StreamArn" {
		t.Errorf("mapping %s reads %s, want the table's stream", id, render(p["EventSourceArn"]))
	}
	want := map[string]any{
		"StartingPosition": "LATEST", "BatchSize": 100.0, "ParallelizationFactor": 1.0,
		"BisectBatchOnFunctionError": true, "MaximumRetryAttempts": 10.0, "MaximumRecordAgeInSeconds": 21600.0,
	}
	for name, value := range want {
		if p[name] != value {
			t.Errorf("mapping %s: %s is %v, want %v", id, name, render(p[name]), value)
		}
	}
	if got := strs(p["FunctionResponseTypes"]); !slices.Equal(got, []string{"ReportBatchItemFailures"}) {
		t.Errorf("mapping %s: FunctionResponseTypes %v, want ReportBatchItemFailures (the function reports the first failed record)", id, got)
	}
	if got := property(p, "DestinationConfig", "OnFailure", "Destination"); !isARN(got, s.deadLetters(t)) {
		t.Errorf("mapping %s: on failure to %s, want the dead-letter queue", id, render(got))
	}
	filters := list(property(p, "FilterCriteria", "Filters"))
	if len(filters) != 1 {
		t.Fatalf("mapping %s: filters %v, want one", id, filters)
	}
	var pattern, wantPattern any
	if err := json.Unmarshal([]byte(property(filters[0], "Pattern").(string)), &pattern); err != nil {
		t.Fatalf("mapping %s: pattern: %v", id, err)
	}
	json.Unmarshal([]byte(`{"eventName":["INSERT"],"dynamodb":{"Keys":{"`+schema.PartitionKey+`":{"S":[{"prefix":"`+schema.AuditPartitionPrefix+`"}]}}}}`), &wantPattern)
	if render(pattern) != render(wantPattern) {
		t.Errorf("mapping %s: pattern %s, want %s (inserts of an audit partition's items)", id, render(pattern), render(wantPattern))
	}
}

// TestAuditEventsGrants: audit-events may put events on its bus, read the
// table's stream (its records on its ARN, ListStreams on the table's
// streams), decrypt with the table's key through DynamoDB, send to the
// dead-letter queue, write its log group and traces; nothing else: no item
// of the table, no other bus, no credentials key.
func TestAuditEventsGrants(t *testing.T) {
	s := synthDefault(t)
	role := s.auditEventsRole(t)
	if managed := s.Resources[role].Properties["ManagedPolicyArns"]; managed != nil {
		t.Errorf("role %s carries managed policies %v", role, render(managed))
	}
	table, _ := s.only(t, "AWS::DynamoDB::Table")
	bus, _ := s.only(t, "AWS::Events::EventBus")
	tableKey, _ := s.keys(t)
	logs := refID(property(s.Resources[s.functionIDs(t)[auditEventsName]].Properties, "LoggingConfig", "LogGroup"))
	got := map[string]string{}
	for _, st := range s.roleStatements(role) {
		if st.Effect != "Allow" || len(st.Resource) != 1 {
			t.Errorf("role %s: statement %v on %v, want one Allow on one resource", role, st.Action, render(st.Resource))
			continue
		}
		on := render(st.Resource[0])
		if len(st.Condition) > 0 {
			on += " if " + render(st.Condition)
		}
		for _, a := range st.Action {
			if other, ok := got[a]; ok {
				t.Errorf("role %s may %s on %s and on %s", role, a, other, on)
			}
			got[a] = on
		}
	}
	stream, viaDynamoDB := "${"+table+".StreamArn}", ` if {"StringEquals":{"kms:ViaService":"dynamodb.`+s.cfg.Region+`.amazonaws.com"}}`
	queue := "${" + s.deadLetters(t) + ".Arn}"
	want := map[string]string{
		"events:PutEvents":          "${" + bus + ".Arn}",
		"dynamodb:DescribeStream":   stream,
		"dynamodb:GetRecords":       stream,
		"dynamodb:GetShardIterator": stream,
		"dynamodb:ListStreams":      "${" + table + ".Arn}/stream/*",
		"kms:Decrypt":               "${" + tableKey + ".Arn}" + viaDynamoDB,
		"kms:DescribeKey":           "${" + tableKey + ".Arn}" + viaDynamoDB,
		"sqs:SendMessage":           queue,
		"sqs:GetQueueAttributes":    queue,
		"sqs:GetQueueUrl":           queue,
		"logs:CreateLogStream":      "${" + logs + ".Arn}",
		"logs:PutLogEvents":         "${" + logs + ".Arn}",
		"xray:PutTraceSegments":     "*",
		"xray:PutTelemetryRecords":  "*",
	}
	for _, a := range slices.Sorted(maps.Keys(got)) {
		if want[a] != got[a] {
			t.Errorf("role %s may %s on %s, want %q", role, a, got[a], want[a])
		}
	}
	for _, a := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[a]; !ok {
			t.Errorf("role %s may not %s (on %s)", role, a, want[a])
		}
	}
}

// TestAuditDeadLetters: the queue is encrypted, refuses plain HTTP, keeps
// messages two weeks, takes undelivered events from the rule alone, and
// alarms (to the alarm topic) from its first message.
func TestAuditDeadLetters(t *testing.T) {
	s := synthDefault(t)
	queue := s.deadLetters(t)
	ruleID, _, _ := s.auditRule(t)
	p := s.Resources[queue].Properties
	if p["SqsManagedSseEnabled"] != true || p["MessageRetentionPeriod"] != 1209600.0 {
		t.Errorf("queue %s: SqsManagedSseEnabled %v, MessageRetentionPeriod %v; want true and 14 days", queue, p["SqsManagedSseEnabled"], p["MessageRetentionPeriod"])
	}
	policyID, policy := s.only(t, "AWS::SQS::QueuePolicy")
	if queues := list(policy.Properties["Queues"]); len(queues) != 1 || refID(queues[0]) != queue {
		t.Fatalf("queue policy %s is of %v", policyID, render(queues))
	}
	var tls, fromRule bool
	for _, st := range parseStatements(policy.Properties["PolicyDocument"]) {
		switch {
		case st.Effect == "Deny" && property(st.Condition, "Bool", "aws:SecureTransport") == "false":
			tls = true
		case st.Effect == "Allow":
			fromRule = slices.Equal(st.Action, []string{"sqs:SendMessage"}) && render(st.Principal) == `{"Service":"events.amazonaws.com"}` &&
				isARN(property(st.Condition, "ArnEquals", "aws:SourceArn"), ruleID) && len(st.Condition) == 1
			if !fromRule {
				t.Errorf("queue policy %s allows %v to %s if %s, want sqs:SendMessage to EventBridge for the rule alone", policyID, st.Action, render(st.Principal), render(st.Condition))
			}
		}
	}
	if !tls || !fromRule {
		t.Errorf("queue policy %s: denies plain HTTP %v, lets the rule send %v; want both", policyID, tls, fromRule)
	}

	alarm := s.alarmOf(t, "ApproximateNumberOfMessagesVisible")
	want := map[string]any{
		"Namespace": "AWS/SQS", "Statistic": "Maximum", "Threshold": 1.0, "EvaluationPeriods": 1.0,
		"ComparisonOperator": "GreaterThanOrEqualToThreshold", "TreatMissingData": "notBreaching",
	}
	for name, value := range want {
		if alarm[name] != value {
			t.Errorf("the dead letters' alarm: %s is %v, want %v", name, render(alarm[name]), value)
		}
	}
	if dims := list(alarm["Dimensions"]); len(dims) != 1 || property(dims[0], "Name") != "QueueName" || !refersTo(dims[0], queue) {
		t.Errorf("the dead letters' alarm watches %s, want the queue %s", render(alarm["Dimensions"]), queue)
	}
}

// alarmOf returns the properties of the one alarm on metric, after
// checking that it notifies the alarm topic.
func (s *synthesis) alarmOf(t *testing.T, metric string) map[string]any {
	t.Helper()
	topic, _ := s.only(t, "AWS::SNS::Topic")
	var found []string
	for _, id := range s.ids("AWS::CloudWatch::Alarm") {
		if s.Resources[id].Properties["MetricName"] == metric {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		t.Fatalf("alarms on %s: %v, want one", metric, found)
	}
	p := s.Resources[found[0]].Properties
	if actions := list(p["AlarmActions"]); len(actions) != 1 || refID(actions[0]) != topic {
		t.Errorf("alarm %s notifies %s, want the alarm topic %s", found[0], render(p["AlarmActions"]), topic)
	}
	return p
}

// TestAuditLogRule: the rule on the bus delivers every event of source
// sshdeck to the audit log group, retrying for a day, then to the
// dead-letter queue; the group keeps them as long as logRetentionDays
// says and outlives the stack; its resource policy lets that rule alone
// (through EventBridge's principals) write it. An event lost to both
// alarms.
func TestAuditLogRule(t *testing.T) {
	for _, synth := range []struct {
		name string
		s    *synthesis
	}{{"default", synthDefault(t)}, {"https", synthHTTPS(t)}} {
		s := synth.s
		bus, _ := s.only(t, "AWS::Events::EventBus")
		ruleID, rule, target := s.auditRule(t)
		p := rule.Properties
		if refID(p["EventBusName"]) != bus || p["State"] != "ENABLED" || render(p["EventPattern"]) != `{"source":["`+audit.EventSource+`"]}` {
			t.Errorf("%s synth: rule %s on %s, %v, pattern %s; want on the bus, enabled, source %s", synth.name, ruleID,
				render(p["EventBusName"]), p["State"], render(p["EventPattern"]), audit.EventSource)
		}
		group := s.auditLogGroup(t)
		if got, want := render(target["Arn"]), "arn:${AWS::Partition}:logs:"+s.cfg.Region+":${AWS::AccountId}:log-group:${"+group+"}"; got != want {
			t.Errorf("%s synth: the rule's target is %s, want %s", synth.name, got, want)
		}
		if target["RoleArn"] != nil {
			t.Errorf("%s synth: the rule's target has a role; CloudWatch Logs takes events by its resource policy", synth.name)
		}
		if !isARN(property(target, "DeadLetterConfig", "Arn"), s.deadLetters(t)) ||
			property(target, "RetryPolicy", "MaximumRetryAttempts") != 185.0 || property(target, "RetryPolicy", "MaximumEventAgeInSeconds") != 86400.0 {
			t.Errorf("%s synth: the rule's target: dead letters %s, retries %s", synth.name, render(target["DeadLetterConfig"]), render(target["RetryPolicy"]))
		}
		g := s.Resources[group]
		if g.Properties["RetentionInDays"] != float64(s.cfg.LogRetentionDays) || g.DeletionPolicy != "Retain" || g.UpdateReplacePolicy != "Retain" {
			t.Errorf("%s synth: log group %s keeps logs %v days, DeletionPolicy %q; want %d and Retain", synth.name, group,
				g.Properties["RetentionInDays"], g.DeletionPolicy, s.cfg.LogRetentionDays)
		}

		_, policy := s.only(t, "AWS::Logs::ResourcePolicy")
		document := render(policy.Properties["PolicyDocument"])
		want := `{"Statement":[{"Action":["logs:CreateLogStream","logs:PutLogEvents"],"Condition":{"ArnEquals":{"aws:SourceArn":"${` + ruleID + `.Arn}"}},` +
			`"Effect":"Allow","Principal":{"Service":["events.amazonaws.com","delivery.logs.amazonaws.com"]},"Resource":"${` + group + `.Arn}",` +
			`"Sid":"AuditEventsFromTheRule"}],"Version":"2012-10-17"}`
		if document != want {
			t.Errorf("%s synth: the log groups' resource policy is\n %s\nwant\n %s", synth.name, document, want)
		}

		lost := s.alarmOf(t, "InvocationsFailedToBeSentToDlq")
		dims := map[string]string{}
		for _, d := range list(lost["Dimensions"]) {
			dims[render(property(d, "Name"))] = render(property(d, "Value"))
		}
		if lost["Namespace"] != "AWS/Events" || dims["EventBusName"] != "${"+bus+"}" || dims["RuleName"] != render(p["Name"]) || lost["Threshold"] != 1.0 {
			t.Errorf("%s synth: the lost events' alarm: %s %v %v", synth.name, lost["Namespace"], dims, lost["Threshold"])
		}
	}
}

// TestAuditDashboard: one dashboard, named after the stack, shows the
// function (invocations, errors, iterator age), the rule's deliveries,
// the dead letters and both alarms.
func TestAuditDashboard(t *testing.T) {
	s := synthDefault(t)
	var dashboard resource
	for _, id := range s.ids("AWS::CloudWatch::Dashboard") {
		if r := s.Resources[id]; r.Properties["DashboardName"] == s.cfg.StackName+"-audit-events" {
			dashboard = r
		}
	}
	if dashboard.Properties == nil {
		t.Fatalf("no dashboard named %s-audit-events", s.cfg.StackName)
	}
	body := render(dashboard.Properties["DashboardBody"])
	fn, queue := s.functionIDs(t)[auditEventsName], s.deadLetters(t)
	_, rule, _ := s.auditRule(t)
	for _, want := range []string{
		`["AWS/Lambda","Invocations","FunctionName","${` + fn + `}"`,
		`["AWS/Lambda","Errors","FunctionName","${` + fn + `}"`,
		`["AWS/Lambda","IteratorAge","FunctionName","${` + fn + `}"`,
		`"AWS/Events","FailedInvocations","EventBusName"`,
		`"AWS/Events","InvocationsSentToDlq","EventBusName"`,
		`"RuleName","` + render(rule.Properties["Name"]) + `"`,
		`["AWS/SQS","ApproximateNumberOfMessagesVisible","QueueName","${` + queue + `.QueueName}"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the dashboard does not show %s:\n%s", want, body)
		}
	}
	// Its own alarms; the tunnels' is on the tunnels' dashboard.
	for _, id := range s.ids("AWS::CloudWatch::Alarm") {
		if strings.HasPrefix(id, "TunnelsStuckRetrying") {
			continue
		}
		if !strings.Contains(body, "${"+id+".Arn}") {
			t.Errorf("the dashboard does not show alarm %s", id)
		}
	}
}
