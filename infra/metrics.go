package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sshdeck/sshdeck/shared/cloudmetrics"
)

// TunnelMetrics is the tunnel service's CloudWatch dashboard and its alarm
// on tunnels stuck retrying, over the metrics its tasks write as embedded
// metric format lines in their log (tunnel-service/emf; the names are
// shared/cloudmetrics').
type TunnelMetrics struct {
	Dashboard awscloudwatch.Dashboard
	// StuckRetrying is in alarm when some tunnel has been retrying (or
	// waiting to retry) for 15 minutes: three 5-minute periods in a row
	// whose Maximum of TunnelsRetrying is above 0. No data (no task
	// writing) is not breaching: the load balancer's health checks watch
	// the tasks themselves.
	StuckRetrying awscloudwatch.Alarm
}

// Stuck-retrying alarm: TunnelsRetrying > 0 in each of 3 periods of 5
// minutes.
const (
	stuckPeriodMinutes = 5
	stuckPeriods       = 3
)

func newTunnelMetrics(scope constructs.Construct, cfg Config, alarms awssns.ITopic) *TunnelMetrics {
	stuck := awscloudwatch.NewAlarm(scope, jsii.String("TunnelsStuckRetrying"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String("sshdeck: a tunnel has been retrying after a failure for 15 minutes or more " +
			"(TunnelsRetrying > 0 in 3 periods of 5 minutes in a row). Read its status (GET /ssh/tunnel/status: reason, lastError) " +
			"and the tunnel service's log."),
		Metric:             tunnelMetric(cloudmetrics.TunnelsRetrying, awscloudwatch.Stats_MAXIMUM(), stuckPeriodMinutes),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		Threshold:          jsii.Number(0),
		EvaluationPeriods:  jsii.Number(stuckPeriods),
		DatapointsToAlarm:  jsii.Number(stuckPeriods),
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	// The stack's alarm topic, in alarm and back to OK.
	stuck.AddAlarmAction(awscloudwatchactions.NewSnsAction(alarms))
	stuck.AddOkAction(awscloudwatchactions.NewSnsAction(alarms))

	// Per minute, each task's line once: the gauges summed over the tasks
	// are the deployment's, and so are the deltas.
	perMinute := func(ms ...cloudmetrics.Metric) *[]awscloudwatch.IMetric {
		out := make([]awscloudwatch.IMetric, len(ms))
		for i, m := range ms {
			// A label makes an alarm's metric a query, so only the
			// dashboard's carry one.
			out[i] = tunnelMetric(m, awscloudwatch.Stats_SUM(), 1).With(&awscloudwatch.MetricOptions{
				Label: jsii.String(m.Name + ": " + m.Description),
			})
		}
		return &out
	}
	graph := func(title string, left *[]awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: left, Width: jsii.Number(12), Height: jsii.Number(6),
		})
	}
	dashboard := awscloudwatch.NewDashboard(scope, jsii.String("TunnelDashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   jsii.String(cfg.StackName + "-tunnels"),
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
		Widgets: &[]*[]awscloudwatch.IWidget{
			{
				graph("Tunnels (all tasks, per minute)", perMinute(cloudmetrics.TunnelsConnected, cloudmetrics.TunnelsRetrying, cloudmetrics.TunnelsFailed)),
				awscloudwatch.NewAlarmWidget(&awscloudwatch.AlarmWidgetProps{
					Title: jsii.String("Tunnels stuck retrying"), Alarm: stuck, Width: jsii.Number(12), Height: jsii.Number(6),
				}),
			},
			{
				graph("Bytes relayed (per minute)", perMinute(cloudmetrics.BytesIn, cloudmetrics.BytesOut)),
				graph("Connections and reconnects (per minute)", perMinute(cloudmetrics.ActiveConnections, cloudmetrics.Reconnects)),
			},
		},
	})
	return &TunnelMetrics{Dashboard: dashboard, StuckRetrying: stuck}
}

// tunnelMetric is one of the tunnel service's metrics: its namespace and
// dimension, the statistic over periods of the minutes given.
func tunnelMetric(m cloudmetrics.Metric, statistic *string, minutes float64) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(cloudmetrics.Namespace),
		MetricName:    jsii.String(m.Name),
		DimensionsMap: &map[string]*string{cloudmetrics.ServiceDimension: jsii.String(cloudmetrics.TunnelService)},
		Statistic:     statistic,
		Period:        awscdk.Duration_Minutes(jsii.Number(minutes)),
	})
}
