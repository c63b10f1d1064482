package apibench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	res, err := Measure(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	rows := res.Rows
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
	// The server's resident set after each route, in the cases' order, and
	// its peak, which is at least each of them.
	cs := cases(sizesOf(o))
	if len(res.RSS) != len(cs) {
		t.Errorf("%d RSS figures for %d routes", len(res.RSS), len(cs))
	}
	for i, r := range res.RSS {
		if i < len(cs) && r.Case != cs[i].Name || r.RSS < 1<<20 || r.RSS > res.PeakRSS {
			t.Errorf("RSS after %q: %d bytes, peak %d", r.Case, r.RSS, res.PeakRSS)
		}
	}
	if res.AB != nil {
		t.Error("an A/B comparison with no baseline")
	}
	s := section(o, res)
	var md strings.Builder
	s.Markdown(&md)
	for _, needle := range []string{"GET /ssh/db/host/{id}", "share this machine's cores", "Goal: `GET",
		"Peak RSS of sshdeck serve through the api group: ", "Goal: peak RSS of `sshdeck serve`", "| server RSS after its runs (MB) |"} {
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

func TestPeakRSSGoal(t *testing.T) {
	if got := peakRSSLine(41_234_567); got != "Peak RSS of sshdeck serve through the api group: 41.2 MB" {
		t.Errorf("peakRSSLine: %q", got)
	}
	for _, c := range []struct {
		peak uint64
		want string
	}{{40_000_000, "**met** (40.0 MB)"}, {64_000_000, "**met** (64.0 MB)"}, {64_100_000, "**missed** (64.1 MB)"}} {
		if got := peakRSSGoal(c.peak); !strings.Contains(got, "at most 64 MB: "+c.want) {
			t.Errorf("peakRSSGoal(%d) = %q, want %q", c.peak, got, c.want)
		}
	}
}

func TestABSection(t *testing.T) {
	ab := &AB{Rev: "v1.2", Commit: "abc1234", Case: "GET /ssh/db/host (1000 hosts)", Rows: []ABRow{
		{Concurrency: 1,
			This: Row{PerSecond: 3000, P50: 300 * time.Microsecond, P99: time.Millisecond, ServerCPU: 150 * time.Microsecond},
			Base: Row{PerSecond: 2000, P50: 450 * time.Microsecond, P99: 2 * time.Millisecond, ServerCPU: 300 * time.Microsecond}},
		{Concurrency: 64, This: Row{PerSecond: 500}, Base: Row{}},
	}}
	if r := ab.Rows[0]; r.Throughput() != 1.5 || r.CPU() != 0.5 {
		t.Errorf("ratios %v and %v, want 1.5 and 0.5", r.Throughput(), r.CPU())
	}
	if r := ab.Rows[1]; r.Throughput() != 0 || r.CPU() != 0 {
		t.Errorf("ratios against no figure: %v and %v, want 0 (n/a)", r.Throughput(), r.CPU())
	}
	s := abSection(report.Options{}, ab)
	if s.Command != "go run ./bench -only api -baseline v1.2" || len(s.Tables) != 1 || len(s.Tables[0].Rows) != 4 {
		t.Fatalf("section %+v", s)
	}
	rows := s.Tables[0].Rows
	want := [][]string{
		{"GET /ssh/db/host (1000 hosts)", "1", "this tree", "3000", "300 µs", "1.00 ms", "150 µs", "1.50×", "0.50×"},
		{"GET /ssh/db/host (1000 hosts)", "1", "v1.2 (abc1234)", "2000", "450 µs", "2.00 ms", "300 µs", "(the base)", "(the base)"},
	}
	for i, w := range want {
		if strings.Join(rows[i], "|") != strings.Join(w, "|") {
			t.Errorf("row %d: %v, want %v", i, rows[i], w)
		}
	}
	if rows[2][7] != "n/a" || rows[2][8] != "n/a" {
		t.Errorf("ratios against a base of 0: %v", rows[2])
	}
}

// TestBuildBaseline builds a command at a revision of a small repository
// of its own: the binary is there, and the worktree is gone.
func TestBuildBaseline(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		out, err := git(t.Context(), repo, append([]string{"-c", "user.name=bench", "-c", "user.email=bench@example.com"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	write := func(path, text string) {
		t.Helper()
		path = filepath.Join(repo, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "--quiet")
	write("go.mod", "module example.com/deck\n\ngo 1.22\n")
	write("cmd/sshdeck/main.go", "package main\n\nfunc main() { println(\"old\") }\n")
	run("add", ".")
	run("commit", "--quiet", "-m", "old")
	old := run("rev-parse", "--short", "HEAD")
	write("cmd/sshdeck/main.go", "package main\n\nfunc main() { println(\"new\") }\n")
	run("commit", "--quiet", "-am", "new")

	o := report.Options{Root: repo}
	b, err := buildBaseline(t.Context(), o, "HEAD~1")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(b.dir)
	if b.rev != "HEAD~1" || b.commit != old {
		t.Errorf("baseline %q at %q, want HEAD~1 at %s", b.rev, b.commit, old)
	}
	out, err := exec.Command(b.bin).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "old" {
		t.Errorf("the baseline binary printed %q (%v), want the old one", out, err)
	}
	if list := run("worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("a worktree is left:\n%s", list)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "src")); !os.IsNotExist(err) {
		t.Errorf("the worktree's directory is left: %v", err)
	}
	if _, err := buildBaseline(t.Context(), o, "no-such-rev"); err == nil || !strings.Contains(err.Error(), "not a revision") {
		t.Errorf("a revision that does not exist: %v", err)
	}
}
