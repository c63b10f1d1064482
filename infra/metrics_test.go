package main

import (
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/sshdeck/sshdeck/shared/cloudmetrics"
)

const testAlarmTopicARN = "arn:aws:sns:us-east-1:111111111111:sshdeck-alarms"

// TestTunnelsStuckRetryingAlarm: the alarm reads the tunnel service's
// TunnelsRetrying (namespace sshdeck, Service=tunnel), Maximum over 5
// minutes, above 0 in 3 periods in a row, missing data not breaching. It
// notifies the topic that alarmTopicArn names, in alarm and back to OK,
// and nothing without one.
func TestTunnelsStuckRetryingAlarm(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       *synthesis
		actions []string
	}{{"default", synthDefault(t), nil}, {"https (alarmTopicArn)", synthHTTPS(t), []string{testAlarmTopicARN}}} {
		t.Run(tc.name, func(t *testing.T) {
			must(t, "the alarm", func() {
				tc.s.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
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
			id, alarm := tc.s.only(t, "AWS::CloudWatch::Alarm")
			for _, property := range []string{"AlarmActions", "OKActions"} {
				if got := strs(alarm.Properties[property]); strings.Join(got, " ") != strings.Join(tc.actions, " ") {
					t.Errorf("alarm %s: %s %v, want %v", id, property, got, tc.actions)
				}
			}
			if got := render(tc.s.Outputs["TunnelsStuckAlarmArn"].Value); got != "${"+id+".Arn}" {
				t.Errorf("output TunnelsStuckAlarmArn is %s, want the alarm's ARN", got)
			}
		})
	}
}

// TestTunnelDashboard: one dashboard graphs every metric the tunnel
// service writes, under its namespace and dimension, and shows the alarm;
// an output links to it.
func TestTunnelDashboard(t *testing.T) {
	s := synthDefault(t)
	must(t, "one dashboard", func() { s.template.ResourceCountIs(jsii.String("AWS::CloudWatch::Dashboard"), jsii.Number(1)) })
	id, dashboard := s.only(t, "AWS::CloudWatch::Dashboard")
	if name := dashboard.Properties["DashboardName"]; name != s.cfg.StackName+"-tunnels" {
		t.Errorf("dashboard %s is named %v, want %s-tunnels", id, name, s.cfg.StackName)
	}
	body := render(dashboard.Properties["DashboardBody"])
	for _, m := range cloudmetrics.Tunnel {
		graphed := `["` + cloudmetrics.Namespace + `","` + m.Name + `","` + cloudmetrics.ServiceDimension + `","` + cloudmetrics.TunnelService + `"`
		if !strings.Contains(body, graphed) {
			t.Errorf("the dashboard does not graph %s (no %s in its body)", m.Name, graphed)
		}
	}
	alarmID, _ := s.only(t, "AWS::CloudWatch::Alarm")
	if !strings.Contains(body, "${"+alarmID+".Arn}") {
		t.Errorf("the dashboard does not show the alarm %s:\n%s", alarmID, body)
	}
	if url := render(s.Outputs["TunnelDashboardUrl"].Value); !strings.HasSuffix(url, "#dashboards:name=${"+id+"}") {
		t.Errorf("output TunnelDashboardUrl is %s, want a link to dashboard %s", url, id)
	}
}
