// Package tunnelbench is the "tunnel" group of sshdeck's bench: the
// throughput of a tunnel and of a forward to the user's machine (one
// stream, 16 in parallel) against raw TCP and OpenSSH doing the same job
// through the same sshd, the time from a connect request to `connected`,
// the memory an idle tunnel holds, and the service with 16 users at their
// limits (64 tunnels, 4 status streams each) against the Fargate task's
// CPU and memory (tenancy.go).
package tunnelbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/bench/report"
)

// Group is the tunnel benchmarks.
var Group = report.Group{Name: "tunnel", Run: run}

// ProfileEnv names a directory to write profiles into: the CPU profile of
// the process while an sshdeck relay tunnel carries the throughput streams
// (tunnel-cpu.pprof) and while its tunnel service carries a forward's
// (tunnel-forward-cpu.pprof: the service's side only, the forward being a
// process of its own), and the heap and goroutine profiles with the most
// idle tunnels up (tunnel-idle-heap.pprof, tunnel-idle-goroutine.pprof).
const ProfileEnv = "SSHDECK_BENCH_PROFILE_DIR"

const command = "go run ./bench -only tunnel"

// sizes are what a run measures.
type sizes struct {
	single   int64 // bytes of the one-stream run
	streams  int   // parallel streams
	each     int64 // bytes of each parallel stream
	reps     int   // repetitions of each throughput figure
	connects int   // connect requests timed
	idle     []int // counts of idle tunnels whose memory is measured
}

var full = sizes{single: 256 << 20, streams: 16, each: 16 << 20, reps: 3, connects: 20, idle: []int{1, 100, 1000}}
var quick = sizes{single: 1 << 20, streams: 16, each: 64 << 10, reps: 1, connects: 2, idle: []int{1, 2}}

func run(ctx context.Context, o report.Options) ([]report.Section, error) {
	sz, tz := full, tenancyFull
	if o.Quick {
		sz, tz = quick, tenancyQuick
	}
	// First, alone in the process: its CPU figures are the process's.
	ten, err := tenancy(ctx, o, tz)
	if err != nil {
		return nil, fmt.Errorf("tenancy: %w", err)
	}
	profiles := os.Getenv(ProfileEnv)
	if profiles != "" {
		if err := os.MkdirAll(profiles, 0o755); err != nil {
			return nil, err
		}
	}
	e, err := newEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer e.close()
	var p ports

	o.Logf("tunnel: connect latency (%d connects)", sz.connects)
	connect, err := e.connectLatency(ctx, o, &p, sz.connects)
	if err != nil {
		return nil, fmt.Errorf("connect latency: %w", err)
	}
	o.Logf("tunnel: throughput (%s, %d×%s, %d times)", size(sz.single), sz.streams, size(sz.each), sz.reps)
	tp, err := e.throughput(ctx, o, &p, sz, profiles)
	if err != nil {
		return nil, fmt.Errorf("throughput: %w", err)
	}
	o.Logf("tunnel: idle memory at %v tunnels", sz.idle)
	mem, err := e.idleMemory(ctx, o, &p, sz.idle, profiles)
	if err != nil {
		return nil, fmt.Errorf("idle memory: %w", err)
	}
	return []report.Section{tp.section(), connect.section(), mem.section(), ten.section()}, nil
}

// writeProfile writes the named runtime profile (heap, goroutine) into dir.
func writeProfile(dir, name, file string) error {
	f, err := os.Create(filepath.Join(dir, file))
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup(name).WriteTo(f, 0)
}

// durations are repeated measurements.
type durations []time.Duration

func (d durations) sorted() durations {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}

// quantile is the nearest-rank q-quantile: with 20 samples p99 is the
// largest.
func (d durations) quantile(q float64) time.Duration {
	s := d.sorted()
	if len(s) == 0 {
		return 0
	}
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func mib(b float64) string { return fmt.Sprintf("%.1f", b/(1<<20)) }

func kib(b float64) string { return fmt.Sprintf("%.1f", b/(1<<10)) }

func list(s []string) string {
	if len(s) == 0 {
		return "(none seen)"
	}
	return strings.Join(s, "; ")
}
