// Package auditbench is the "audit" group of sshdeck's benchmarks: what
// the audit trail costs the write routes, before (api.Config.Audit nil)
// and after (an audit.Recorder), in the same run: requests per second and
// latencies over the embedded store, and DynamoDB calls and write request
// units over the DynamoDB store.
package auditbench

import (
	"context"
	"os"
	"strings"

	"github.com/sshdeck/sshdeck/bench/report"
)

// Group measures the cost of auditing.
var Group = report.Group{Name: "audit", Run: run}

// result is what the group measured.
type result struct {
	Pairs []pair
	Costs []cost
	// LoadBefore and LoadAfter are the machine's load averages (1, 5 and
	// 15 minutes) before and after the runs: the runs share the machine.
	LoadBefore, LoadAfter string
}

func run(ctx context.Context, o report.Options) ([]report.Section, error) {
	res, err := measure(ctx, o)
	if err != nil {
		return nil, err
	}
	return []report.Section{latencySection(o, res), costSection(res.Costs)}, nil
}

// measure runs both measurements: DynamoDB's first (it takes a second),
// then the load runs.
func measure(ctx context.Context, o report.Options) (result, error) {
	res := result{LoadBefore: loadAverage()}
	var err error
	if res.Costs, err = measureCost(ctx, o); err != nil {
		return res, err
	}
	if res.Pairs, err = measureLatency(ctx, o); err != nil {
		return res, err
	}
	res.LoadAfter = loadAverage()
	return res, nil
}

// loadAverage is the first three fields of /proc/loadavg, "?" when it
// cannot be read.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if fields := strings.Fields(string(b)); err == nil && len(fields) >= 3 {
		return strings.Join(fields[:3], " ")
	}
	return "?"
}
