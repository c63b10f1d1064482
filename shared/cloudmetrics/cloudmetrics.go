// Package cloudmetrics names the CloudWatch metrics of the tunnel service:
// the namespace, the dimension and each metric, which the service writes
// as embedded metric format lines (tunnel-service/emf) and the CDK app's
// dashboard and alarm read (infra/metrics.go). One list, so that neither
// can name a metric the other does not. Standard library only, like
// shared/routes, so that the CDK module links nothing of the service.
package cloudmetrics

// Namespace is the CloudWatch namespace of sshdeck's metrics.
const Namespace = "sshdeck"

// ServiceDimension is the one dimension of the tunnel service's metrics,
// and TunnelService its value: per-replica values add up under it.
const (
	ServiceDimension = "Service"
	TunnelService    = "tunnel"
)

// Units, as CloudWatch spells them.
const (
	Count = "Count"
	Bytes = "Bytes"
)

// Metric is one metric of the tunnel service.
type Metric struct {
	Name string
	Unit string
	// Gauge metrics are a replica's value at the moment of the line: sum
	// them over one line's interval (a minute) for the deployment's, or
	// take the Maximum. The others are what happened since the replica's
	// line before (a delta): sum them over any period.
	Gauge bool
	// Description says what it counts, for the dashboard.
	Description string
}

// The tunnel service's metrics, in the order of its lines and dashboard.
var (
	TunnelsConnected  = Metric{Name: "TunnelsConnected", Unit: Count, Gauge: true, Description: "tunnels connected"}
	TunnelsRetrying   = Metric{Name: "TunnelsRetrying", Unit: Count, Gauge: true, Description: "tunnels retrying, or waiting to retry, after a failure"}
	TunnelsFailed     = Metric{Name: "TunnelsFailed", Unit: Count, Description: "tunnels that failed (no retry allowed or left, or their replica gone)"}
	ActiveConnections = Metric{Name: "ActiveConnections", Unit: Count, Gauge: true, Description: "connections the relay tunnels carry"}
	BytesIn           = Metric{Name: "BytesIn", Unit: Bytes, Description: "bytes carried from the endpoints' clients to the sources"}
	BytesOut          = Metric{Name: "BytesOut", Unit: Bytes, Description: "bytes carried back to the endpoints' clients"}
	Reconnects        = Metric{Name: "Reconnects", Unit: Count, Description: "times a tunnel came up again after a failure"}

	Tunnel = []Metric{TunnelsConnected, TunnelsRetrying, TunnelsFailed, ActiveConnections, BytesIn, BytesOut, Reconnects}
)

// IntervalSeconds is how often a replica writes its line: CloudWatch's
// standard resolution, a minute.
const IntervalSeconds = 60
