package emf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// checkLine fails the test unless line is one embedded metric format
// document as CloudWatch's specification has it, with the tunnel
// service's metrics, and returns its members. The rules checked:
//   - one JSON object on one line, ending with a line feed;
//   - _aws is an object of Timestamp (a whole number of milliseconds) and
//     CloudWatchMetrics (an array of metric directives), nothing else;
//   - a directive has Namespace, Dimensions (an array of dimension sets,
//     each an array of 1 to 30 names) and Metrics (at most 100 metric
//     definitions of a Name, unique, and a Unit CloudWatch knows), nothing
//     else;
//   - every dimension is a member of the root whose value is a string,
//     every metric one whose value is a number.
func checkLine(t *testing.T, line []byte) map[string]any {
	t.Helper()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("not one line ending in a line feed: %q", line)
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil || dec.More() {
		t.Fatalf("not one JSON object (%v): %s", err, line)
	}
	aws, ok := root["_aws"].(map[string]any)
	if !ok {
		t.Fatalf("no _aws object: %s", line)
	}
	onlyMembers(t, "_aws", aws, "Timestamp", "CloudWatchMetrics")
	if ts, ok := aws["Timestamp"].(json.Number); !ok || strings.ContainsAny(ts.String(), ".eE") {
		t.Errorf("_aws.Timestamp %v: want milliseconds, a whole number", aws["Timestamp"])
	}
	directives, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(directives) == 0 {
		t.Fatalf("_aws.CloudWatchMetrics %v: want an array of directives", aws["CloudWatchMetrics"])
	}
	units := []string{"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
		"Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second", "Kilobytes/Second",
		"Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second", "Megabits/Second",
		"Gigabits/Second", "Terabits/Second", "Count/Second", "None"}
	for i, d := range directives {
		where := fmt.Sprintf("CloudWatchMetrics[%d]", i)
		directive, ok := d.(map[string]any)
		if !ok {
			t.Fatalf("%s is not an object", where)
		}
		onlyMembers(t, where, directive, "Namespace", "Dimensions", "Metrics")
		if ns, _ := directive["Namespace"].(string); ns == "" {
			t.Errorf("%s.Namespace %v: want a name", where, directive["Namespace"])
		}
		sets, _ := directive["Dimensions"].([]any)
		for _, set := range sets {
			names, _ := set.([]any)
			if len(names) == 0 || len(names) > 30 {
				t.Errorf("%s: a dimension set of %d names, want 1 to 30", where, len(names))
			}
			for _, name := range names {
				n, _ := name.(string)
				if _, ok := root[n].(string); !ok {
					t.Errorf("%s: dimension %v is not a string member of the root", where, name)
				}
			}
		}
		metrics, _ := directive["Metrics"].([]any)
		if len(metrics) == 0 || len(metrics) > 100 {
			t.Errorf("%s: %d metrics, want 1 to 100", where, len(metrics))
		}
		seen := map[string]bool{}
		for _, m := range metrics {
			def, _ := m.(map[string]any)
			name, _ := def["Name"].(string)
			unit, _ := def["Unit"].(string)
			onlyMembers(t, where+" metric "+name, def, "Name", "Unit", "StorageResolution")
			switch {
			case name == "" || seen[name]:
				t.Errorf("%s: metric name %q missing or twice", where, name)
			case !slices.Contains(units, unit):
				t.Errorf("%s: metric %s has unit %q, which CloudWatch does not know", where, name, unit)
			}
			seen[name] = true
			if _, ok := root[name].(json.Number); !ok {
				t.Errorf("%s: metric %s is not a number member of the root: %v", where, name, root[name])
			}
		}
	}
	return root
}

func onlyMembers(t *testing.T, where string, obj map[string]any, allowed ...string) {
	t.Helper()
	for k := range obj {
		if !slices.Contains(allowed, k) {
			t.Errorf("%s has member %q; the format allows only %v", where, k, allowed)
		}
	}
}

func number(t *testing.T, root map[string]any, name string) int64 {
	t.Helper()
	n, err := root[name].(json.Number).Int64()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// TestLine: the line's structure, its namespace and dimension, and its
// values: gauges as they are, the totals as what they grew by since the
// line before.
func TestLine(t *testing.T) {
	now := time.Date(2026, 11, 21, 15, 4, 5, 678_000_000, time.UTC)
	before := tunnel.Metrics{BytesIn: 1000, BytesOut: 50, Reconnects: 2, Failed: 1}
	m := tunnel.Metrics{
		Tunnels: []tunnel.TunnelMetrics{
			{Owner: "usr_a", Name: "web", State: sshdeck.TunnelConnected, ActiveConnections: 16},
			{Owner: "usr_a", Name: "db", State: sshdeck.TunnelConnected, ActiveConnections: 2},
			{Owner: "usr_b", Name: "x", State: sshdeck.TunnelRetrying},
			{Owner: "usr_b", Name: "y", State: sshdeck.TunnelWaiting},
			{Owner: "usr_c", Name: "z", State: sshdeck.TunnelConnecting},
		},
		BytesIn: 1000 + 5<<30, BytesOut: 50 + 7, Reconnects: 3, Failed: 4,
	}
	line, err := Line(now, "replica-1", m, before)
	if err != nil {
		t.Fatal(err)
	}
	root := checkLine(t, line)
	aws := root["_aws"].(map[string]any)
	if ts := aws["Timestamp"].(json.Number).String(); ts != fmt.Sprint(now.UnixMilli()) {
		t.Errorf("Timestamp %s, want %d (milliseconds)", ts, now.UnixMilli())
	}
	directive := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if directive["Namespace"] != "sshdeck" || fmt.Sprint(directive["Dimensions"]) != "[[Service]]" || root["Service"] != "tunnel" {
		t.Errorf("namespace %v, dimensions %v, Service %v; want sshdeck, [[Service]], tunnel", directive["Namespace"], directive["Dimensions"], root["Service"])
	}
	var defined []string
	for _, d := range directive["Metrics"].([]any) {
		def := d.(map[string]any)
		defined = append(defined, def["Name"].(string)+":"+def["Unit"].(string))
	}
	want := "TunnelsConnected:Count TunnelsRetrying:Count TunnelsFailed:Count ActiveConnections:Count BytesIn:Bytes BytesOut:Bytes Reconnects:Count"
	if got := strings.Join(defined, " "); got != want {
		t.Errorf("metrics %s, want %s", got, want)
	}
	for name, want := range map[string]int64{
		"TunnelsConnected": 2, "TunnelsRetrying": 2, "ActiveConnections": 18,
		"TunnelsFailed": 3, "BytesIn": 5 << 30, "BytesOut": 7, "Reconnects": 1,
	} {
		if got := number(t, root, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if root["Replica"] != "replica-1" {
		t.Errorf("Replica %v, want replica-1", root["Replica"])
	}
}

// lines is an io.Writer that keeps each Write as a line.
type lines struct {
	mu  sync.Mutex
	all [][]byte
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, bytes.Clone(p))
	return len(p), nil
}

func (l *lines) get() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// TestEmitterDeltas: each line counts what happened since the one before,
// one Write per line; Run writes one at once.
func TestEmitterDeltas(t *testing.T) {
	var (
		mu      sync.Mutex
		current tunnel.Metrics
	)
	set := func(m tunnel.Metrics) { mu.Lock(); current = m; mu.Unlock() }
	out := &lines{}
	e := New(out, "r", func() tunnel.Metrics { mu.Lock(); defer mu.Unlock(); return current })

	set(tunnel.Metrics{BytesIn: 100, BytesOut: 10})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx, time.Hour); close(done) }()
	for len(out.get()) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	set(tunnel.Metrics{BytesIn: 250, BytesOut: 10, Reconnects: 1})
	if err := e.Emit(time.Now()); err != nil {
		t.Fatal(err)
	}
	got := out.get()
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2", len(got))
	}
	first, second := checkLine(t, got[0]), checkLine(t, got[1])
	if in, reconnects := number(t, first, "BytesIn"), number(t, first, "Reconnects"); in != 100 || reconnects != 0 {
		t.Errorf("first line: BytesIn %d, Reconnects %d; want 100, 0", in, reconnects)
	}
	if in, outBytes, reconnects := number(t, second, "BytesIn"), number(t, second, "BytesOut"), number(t, second, "Reconnects"); in != 150 || outBytes != 0 || reconnects != 1 {
		t.Errorf("second line: BytesIn %d, BytesOut %d, Reconnects %d; want 150, 0, 1", in, outBytes, reconnects)
	}
}
