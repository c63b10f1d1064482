// Package emf writes the tunnel service's metrics as CloudWatch embedded
// metric format (EMF) lines: one JSON line a minute on the service's
// standard output, which ECS's awslogs driver sends to the service's log
// group, where CloudWatch turns it into metrics (namespace sshdeck,
// dimension Service=tunnel; the names are shared/cloudmetrics'). It needs
// no API call and no permission beyond writing the log the task writes
// already.
//
// Each line is one replica's: its tunnels connected and retrying and the
// connections they carry now (gauges), and since its line before, the
// bytes carried each way, the reconnects and the tunnels that failed
// (deltas), so that summing any metric over the replicas and a period
// means what it says.
package emf

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/shared/cloudmetrics"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// Interval is how often Run writes a line.
const Interval = cloudmetrics.IntervalSeconds * time.Second

// Emitter writes the lines of one replica.
type Emitter struct {
	w       io.Writer
	replica string
	metrics func() tunnel.Metrics

	mu   sync.Mutex
	last tunnel.Metrics // the totals of the line before
}

// New returns an Emitter of the metrics (a Manager's Metrics) of the
// replica (its name in leases, a property of each line, no dimension),
// writing to w, one Write per line.
func New(w io.Writer, replica string, metrics func() tunnel.Metrics) *Emitter {
	return &Emitter{w: w, replica: replica, metrics: metrics}
}

// Run writes a line at once, then every interval until ctx ends. The
// caller writes the last one (Emit) once the tunnels have stopped, so that
// what they carried since is counted too.
func (e *Emitter) Run(ctx context.Context, interval time.Duration) {
	e.Emit(time.Now())
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			e.Emit(now)
		}
	}
}

// Emit writes the line of now. A write that fails is lost (the log
// driver has gone): its deltas are in the next line.
func (e *Emitter) Emit(now time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.metrics()
	line, err := Line(now, e.replica, m, e.last)
	if err != nil {
		return err
	}
	if _, err := e.w.Write(line); err != nil {
		return err
	}
	e.last = m
	return nil
}

// Line is the EMF line of m at now, its deltas since prev: a JSON object
// and a line feed. The _aws member says which of its members are metrics
// (each with its unit) and under which dimension; the values are members
// beside it, as the format wants.
func Line(now time.Time, replica string, m, prev tunnel.Metrics) ([]byte, error) {
	values := map[string]int64{}
	for _, t := range m.Tunnels {
		switch t.State {
		case sshdeck.TunnelConnected:
			values[cloudmetrics.TunnelsConnected.Name]++
		case sshdeck.TunnelRetrying, sshdeck.TunnelWaiting:
			values[cloudmetrics.TunnelsRetrying.Name]++
		}
		values[cloudmetrics.ActiveConnections.Name] += int64(t.ActiveConnections)
	}
	values[cloudmetrics.TunnelsFailed.Name] = delta(m.Failed, prev.Failed)
	values[cloudmetrics.BytesIn.Name] = delta(m.BytesIn, prev.BytesIn)
	values[cloudmetrics.BytesOut.Name] = delta(m.BytesOut, prev.BytesOut)
	values[cloudmetrics.Reconnects.Name] = delta(m.Reconnects, prev.Reconnects)

	directive := metricDirective{
		Namespace:  cloudmetrics.Namespace,
		Dimensions: [][]string{{cloudmetrics.ServiceDimension}},
	}
	doc := map[string]any{
		cloudmetrics.ServiceDimension: cloudmetrics.TunnelService,
		"Replica":                     replica,
	}
	for _, metric := range cloudmetrics.Tunnel {
		directive.Metrics = append(directive.Metrics, metricDefinition{Name: metric.Name, Unit: metric.Unit})
		doc[metric.Name] = values[metric.Name]
	}
	doc["_aws"] = metadata{Timestamp: now.UnixMilli(), CloudWatchMetrics: []metricDirective{directive}}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// delta is what a total grew by; never negative.
func delta(now, before int64) int64 {
	return max(now-before, 0)
}

// metadata is the _aws member: when, and which members are metrics.
type metadata struct {
	// Timestamp is in milliseconds since the epoch.
	Timestamp         int64             `json:"Timestamp"`
	CloudWatchMetrics []metricDirective `json:"CloudWatchMetrics"`
}

type metricDirective struct {
	Namespace  string             `json:"Namespace"`
	Dimensions [][]string         `json:"Dimensions"`
	Metrics    []metricDefinition `json:"Metrics"`
}

type metricDefinition struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}
