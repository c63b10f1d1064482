package lambdabench

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestColdStartProfile is a tool, not a test: with
// LAMBDABENCH_PROFILE=<function> it builds that function for this machine
// and runs its cold start LAMBDABENCH_RUNS times (default 20), logging each
// run's figures, with LAMBDABENCH_ENV (space-separated NAME=value, e.g.
// GODEBUG=inittrace=1) added to its environment and its output logged with
// LAMBDABENCH_OUTPUT=1, under the command LAMBDABENCH_WRAP (e.g.
// "strace -f -r -o /tmp/trace") when set, and built with its symbols
// (no -ldflags='-s -w') with LAMBDABENCH_SYMBOLS=1:
//
//	LAMBDABENCH_PROFILE=get-host LAMBDABENCH_ENV=GODEBUG=inittrace=1 LAMBDABENCH_OUTPUT=1 \
//	    go test -run ColdStartProfile -v ./bench/lambdabench/
func TestColdStartProfile(t *testing.T) {
	name := os.Getenv("LAMBDABENCH_PROFILE")
	if name == "" {
		t.Skip("set LAMBDABENCH_PROFILE=<function> to profile its cold start")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var f function
	for _, g := range functions(root, false) {
		if g.name == name {
			f = g
		}
	}
	if f.name == "" {
		t.Fatalf("no function %s", name)
	}
	n, _ := strconv.Atoi(os.Getenv("LAMBDABENCH_RUNS"))
	if n <= 0 {
		n = 20
	}
	dir := t.TempDir()
	if os.Getenv("LAMBDABENCH_SYMBOLS") != "" {
		// Kept, for perf report to read the symbols.
		var err error
		if dir, err = os.MkdirTemp("", "lambdabench-profile"); err != nil {
			t.Fatal(err)
		}
		t.Logf("the bootstrap is kept in %s", dir)
	}
	flags := lambdaFlags
	if os.Getenv("LAMBDABENCH_SYMBOLS") != "" {
		flags = []string{"-tags", "lambda.norpc", "-trimpath"} // symbols, for perf
	}
	if err := buildWith(t.Context(), root, dir, []function{f}, nil, flags); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, f.name)
	if wrap := os.Getenv("LAMBDABENCH_WRAP"); wrap != "" {
		// A command to run the bootstrap under (strace -f -r -o /tmp/trace):
		// a script in its place.
		script := filepath.Join(dir, "wrapped")
		if err := os.WriteFile(script, []byte("#!/bin/sh\nexec "+wrap+" "+bin+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		bin = script
	}
	env := strings.Fields(os.Getenv("LAMBDABENCH_ENV"))
	var runs []coldStart
	for i := range n {
		cs, err := runColdStart(t.Context(), root, bin, f, env)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, cs)
		t.Logf("run %d: init %s ms, first answer %s ms, CPU %s ms, calls %v", i+1, ms(cs.init), ms(cs.first), ms(cs.cpu), cs.calls)
		if os.Getenv("LAMBDABENCH_OUTPUT") != "" {
			t.Log(cs.output)
		}
	}
	ip50, imax := stats(runs, func(c coldStart) time.Duration { return c.init })
	fp50, fmax := stats(runs, func(c coldStart) time.Duration { return c.first })
	cpu, cpuMax := stats(runs, func(c coldStart) time.Duration { return c.cpu })
	t.Logf("%s on %s/%s, %d runs: init p50 %s max %s, first answer p50 %s max %s, CPU p50 %s max %s (ms)",
		name, runtime.GOOS, runtime.GOARCH, n, ms(ip50), ms(imax), ms(fp50), ms(fmax), ms(cpu), ms(cpuMax))
}
