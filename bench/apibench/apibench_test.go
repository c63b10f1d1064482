package apibench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/bench/report"
)

// TestGroupQuick runs the group at its smallest size: every route at every
// concurrency must have its row, with figures that make sense.
func TestGroupQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs sshdeck serve")
	}
	var log strings.Builder
	o := report.Options{Root: "../..", Quick: true, Log: &log}
	t.Setenv(ProfileEnv, "")
	rows, err := Measure(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	want := map[string]bool{}
	for _, c := range cases(sizesOf(o)) {
		for _, n := range Concurrencies {
			want[c.Name+"/"+strconv.Itoa(n)] = true
		}
	}
	if len(rows) != len(want) {
		t.Errorf("%d rows, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		key := r.Case + "/" + strconv.Itoa(r.Concurrency)
		if !want[key] {
			t.Errorf("unexpected or repeated row %s", key)
		}
		delete(want, key)
		if r.Requests < r.Concurrency || r.PerSecond <= 0 || r.P50 <= 0 || r.P99 < r.P50 || r.P99 > 10*time.Second {
			t.Errorf("%s: %d requests, %.0f req/s, p50 %v, p99 %v", key, r.Requests, r.PerSecond, r.P50, r.P99)
		}
		if r.ServerCPU < 0 || r.LoadCPU < 0 {
			t.Errorf("%s: negative CPU time", key)
		}
	}
	for key := range want {
		t.Errorf("no row %s", key)
	}
	s := section(o, rows)
	var md strings.Builder
	s.Markdown(&md)
	for _, needle := range []string{"GET /ssh/db/host/{id}", "share this machine's cores", "Goal:"} {
		if !strings.Contains(md.String(), needle) {
			t.Errorf("the section has no %q:\n%s", needle, md.String())
		}
	}
	if _, err := os.Stat(o.Root + "/go.mod"); err != nil {
		t.Fatal(err)
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{latency(850 * time.Microsecond), "850 µs"},
		{latency(1500 * time.Microsecond), "1.50 ms"},
		{thousands(20000), "20 000"},
		{thousands(999), "999"},
		{thousands(1234567), "1 234 567"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
