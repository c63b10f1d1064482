package apibench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/internal/gobuild"
)

// abKey is the Key of the case measured against the baseline: the list of
// the big user's hosts (1000 in a full run).
const abKey = "list-big"

// baseline is sshdeck built at another revision of this repository.
type baseline struct {
	rev    string // as given (-baseline)
	commit string // its commit, abbreviated
	dir    string // holds the binary; the server's data go there too
	bin    string
}

// buildBaseline builds sshdeck at rev: the repository at rev is checked
// out with `git worktree add` into a temporary directory, built (with no
// deadline, as every build), and the worktree removed.
func buildBaseline(ctx context.Context, o report.Options, rev string) (_ *baseline, err error) {
	commit, err := git(ctx, o.Root, "rev-parse", "--verify", "--quiet", "--short", rev+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("baseline %q is not a revision of this repository: %w", rev, err)
	}
	dir, err := os.MkdirTemp("", "sshdeck-apibench-baseline")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	src := filepath.Join(dir, "src")
	o.Logf("building sshdeck at %s (%s) in a worktree, %s", rev, commit, src)
	if _, err := git(ctx, o.Root, "worktree", "add", "--detach", "--quiet", src, commit); err != nil {
		return nil, err
	}
	b := &baseline{rev: rev, commit: commit, dir: dir, bin: filepath.Join(dir, "sshdeck")}
	buildErr := gobuild.BuildIn(src, "./cmd/sshdeck", b.bin, nil)
	// The worktree goes whatever the build did, even if ctx is done.
	_, rmErr := git(context.WithoutCancel(ctx), o.Root, "worktree", "remove", "--force", src)
	if err := errors.Join(buildErr, rmErr); err != nil {
		return nil, fmt.Errorf("sshdeck at %s: %w", rev, err)
	}
	return b, nil
}

// git runs git in dir and returns its trimmed stdout.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// ABRow is one concurrency of the route against both servers, measured
// one right after the other.
type ABRow struct {
	Concurrency int
	This, Base  Row
}

// Throughput is this tree's req/s over the baseline's: above 1 is faster.
func (r ABRow) Throughput() float64 { return ratio(r.This.PerSecond, r.Base.PerSecond) }

// CPU is this tree's server CPU per request over the baseline's: below 1
// is cheaper.
func (r ABRow) CPU() float64 {
	return ratio(float64(r.This.ServerCPU), float64(r.Base.ServerCPU))
}

// ratio is a/b, or 0 when b is not positive (no figure to compare with).
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func formatRatio(r float64) string {
	if r == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", r)
}

// AB is the comparison of this tree with the baseline on one route.
type AB struct {
	Rev, Commit string
	Case        string
	Rows        []ABRow
}

// measureAB serves with the baseline binary next to this tree's server w,
// seeds it as w was seeded, and runs the case at every concurrency
// against this tree and then the baseline, in turn, so that both figures
// of a row come from the same moment of the machine.
func measureAB(ctx context.Context, o report.Options, w *world, b *baseline, c Case, s sizes) (*AB, error) {
	bw, err := startBinary(ctx, o, b.dir, b.bin, false)
	if err != nil {
		return nil, fmt.Errorf("sshdeck at %s: %w", b.rev, err)
	}
	defer bw.close()
	bw.bigHosts = s.bigHosts
	if err := bw.seed(ctx, Concurrencies[len(Concurrencies)-1]); err != nil {
		return nil, fmt.Errorf("seed sshdeck at %s: %w", b.rev, err)
	}
	ab := &AB{Rev: b.rev, Commit: b.commit, Case: c.Name}
	for _, n := range Concurrencies {
		var r ABRow
		r.Concurrency = n
		for _, side := range []struct {
			w   *world
			row *Row
		}{{w, &r.This}, {bw, &r.Base}} {
			row, err := measure(ctx, side.w, c, n, s, "")
			if err != nil {
				return nil, fmt.Errorf("A/B %s at concurrency %d: %w", c.Name, n, err)
			}
			*side.row = row
		}
		o.Logf("A/B %-36s c=%-3d this tree %8.0f req/s %s/req | %s %8.0f req/s %s/req | req/s %s, CPU/req %s",
			c.Name, n, r.This.PerSecond, cpuPerRequest(r.This.ServerCPU), b.commit, r.Base.PerSecond, cpuPerRequest(r.Base.ServerCPU),
			formatRatio(r.Throughput()), formatRatio(r.CPU()))
		ab.Rows = append(ab.Rows, r)
	}
	return ab, nil
}

// abSection reports the comparison: both rows of every concurrency, and
// their ratios.
func abSection(o report.Options, ab *AB) report.Section {
	s := sizesOf(o)
	t := report.Table{Header: []string{"route", "concurrency", "sshdeck", "req/s", "p50", "p99", "server CPU/req", "req/s ratio", "server CPU/req ratio"}}
	for _, r := range ab.Rows {
		t.Add(ab.Case, r.Concurrency, "this tree", fmt.Sprintf("%.0f", r.This.PerSecond), latency(r.This.P50), latency(r.This.P99), cpuPerRequest(r.This.ServerCPU),
			formatRatio(r.Throughput()), formatRatio(r.CPU()))
		t.Add(ab.Case, r.Concurrency, fmt.Sprintf("%s (%s)", ab.Rev, ab.Commit), fmt.Sprintf("%.0f", r.Base.PerSecond), latency(r.Base.P50), latency(r.Base.P99), cpuPerRequest(r.Base.ServerCPU),
			"(the base)", "(the base)")
	}
	command := "go run ./bench -only api -baseline " + ab.Rev
	if o.Quick {
		command = "go run ./bench -quick -only api -baseline " + ab.Rev
	}
	return report.Section{
		Title:   fmt.Sprintf("Local API: this tree against %s", ab.Rev),
		Command: command,
		Text: fmt.Sprintf(`
`+"`sshdeck`"+` built at %[1]s (%[2]s, checked out with `+"`git worktree add`"+` and built as this tree is)
serves next to this tree's server, over its own data directory seeded the same way through
the API, and `+"`%[3]s`"+` is run against each in turn at every concurrency (this tree, then
%[1]s, %[4]s warm-up then %[5]s each), so that both rows of a concurrency come from the same
moment of the machine. The ratios are this tree's over %[1]s's: req/s above 1.00× is faster,
server CPU per request below 1.00× is cheaper.`, ab.Rev, ab.Commit, ab.Case, s.warmup, s.duration),
		Tables: []report.Table{t},
	}
}
