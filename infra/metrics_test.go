package main

import (
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/sshdeck/sshdeck/shared/cloudmetrics"
)

// TestTunnelsStuckRetryingAlarm: the alarm reads the tunnel service's
// TunnelsRetrying (namespace sshdeck, Service=tunnel), Maximum over 5
// minutes, above 0 in 3 periods in a row, missing data not breaching. It
// notifies the stack's alarm topic, in alarm and back to OK.
func TestTunnelsStuckRetryingAlarm(t *testing.T) {
	s := synthDefault(t)
	must(t, "the alarm", func() {
		s.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"Namespace":          cloudmetrics.Namespace,
			"MetricName":         cloudmetrics.TunnelsRetrying.Name,
			"Dimensions":         []any{map[string]any{"Name": cloudmetrics.ServiceDimension, "Value": cloudmetrics.TunnelService}},
			"Statistic":          "Maximum",
			"Period":             300,
			"ComparisonOperator": "GreaterThanThreshold",
			"Threshold":          0,
			"EvaluationPeriods":  3,
			"DatapointsToAlarm":  3,
			"TreatMissingData":   "notBreaching",
		})
	})
	topic, _ := s.only(t, "AWS::SNS::Topic")
	id, alarm := "", resource{}
	for _, name := range s.ids("AWS::CloudWatch::Alarm") {
		if r := s.Resources[name]; r.Properties["MetricName"] == cloudmetrics.TunnelsRetrying.Name {
			id, alarm = name, r
		}
	}
	if id == "" {
		t.Fatal("no alarm on TunnelsRetrying")
	}
	for _, property := range []string{"AlarmActions", "OKActions"} {
		if actions := list(alarm.Properties[property]); len(actions) != 1 || refID(actions[0]) != topic {
			t.Errorf("alarm %s: %s %v, want the alarm topic %s", id, property, actions, topic)
		}
	}
	if got := render(s.Outputs["TunnelsStuckAlarmArn"].Value); got != "${"+id+".Arn}" {
		t.Errorf("output TunnelsStuckAlarmArn is %s, want the alarm's ARN", got)
	}
}

// TestTunnelDashboard: one dashboard graphs every metric the tunnel
// service writes, under its namespace and dimension, and shows the alarm;
// an output links to it.
func TestTunnelDashboard(t *testing.T) {
	s := synthDefault(t)
	id, dashboard := "", resource{}
	for _, name := range s.ids("AWS::CloudWatch::Dashboard") {
		if r := s.Resources[name]; r.Properties["DashboardName"] == s.cfg.StackName+"-tunnels" {
			id, dashboard = name, r
		}
	}
	if id == "" {
		t.Fatalf("no dashboard named %s-tunnels", s.cfg.StackName)
	}
	body := render(dashboard.Properties["DashboardBody"])
	for _, m := range cloudmetrics.Tunnel {
		graphed := `["` + cloudmetrics.Namespace + `","` + m.Name + `","` + cloudmetrics.ServiceDimension + `","` + cloudmetrics.TunnelService + `"`
		if !strings.Contains(body, graphed) {
			t.Errorf("the dashboard does not graph %s (no %s in its body)", m.Name, graphed)
		}
	}
	stuck := ""
	for _, name := range s.ids("AWS::CloudWatch::Alarm") {
		if s.Resources[name].Properties["MetricName"] == cloudmetrics.TunnelsRetrying.Name {
			stuck = name
		}
	}
	if !strings.Contains(body, "${"+stuck+".Arn}") {
		t.Errorf("the dashboard does not show the alarm %s:\n%s", stuck, body)
	}
	if url := render(s.Outputs["TunnelDashboardUrl"].Value); !strings.HasSuffix(url, "#dashboards:name=${"+id+"}") {
		t.Errorf("output TunnelDashboardUrl is %s, want a link to dashboard %s", url, id)
	}
}
