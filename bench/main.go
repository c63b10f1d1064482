// Command bench measures sshdeck (the local API, the cost of its audit
// trail, the Lambda functions and the tunnels) and writes the figures into
// BENCHMARKS.md, each with the command that reproduces it and the machine
// it ran on. `make bench` runs every group; `go run ./bench -only tunnel`
// runs one and rewrites only its part of the file; `-baseline REV` adds an
// A/B comparison of one API route with sshdeck built at the git revision
// REV.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/sshdeck/sshdeck/bench/apibench"
	"github.com/sshdeck/sshdeck/bench/auditbench"
	"github.com/sshdeck/sshdeck/bench/lambdabench"
	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/bench/tunnelbench"
)

// groups are run in this order, and written in this order.
var groups = []report.Group{apibench.Group, auditbench.Group, lambdabench.Group, tunnelbench.Group}

func main() {
	out := flag.String("out", "BENCHMARKS.md", "the file to write the figures into (the part of each group run is replaced, the rest is kept)")
	only := flag.String("only", "", "comma-separated groups to run (default all): "+names())
	quick := flag.Bool("quick", false, "run every measurement at its smallest size, to check that it works (figures mean nothing, nothing is written)")
	baseline := flag.String("baseline", "", "a git revision: the api group also builds sshdeck at it and measures the list of the big user's hosts against both, for an A/B comparison in the same run")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, *only, *quick, *baseline); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func names() string {
	var n []string
	for _, g := range groups {
		n = append(n, g.Name)
	}
	return strings.Join(n, ",")
}

func run(ctx context.Context, out, only string, quick bool, baseline string) error {
	selected, err := selectGroups(only)
	if err != nil {
		return err
	}
	if baseline != "" && !slices.ContainsFunc(selected, func(g report.Group) bool { return g.Name == apibench.Group.Name }) {
		return fmt.Errorf("-baseline compares the %s group, which is not selected", apibench.Group.Name)
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run it from the repository's root (make bench, or go run ./bench)")
	}
	opts := report.Options{Root: root, Quick: quick, Log: os.Stderr, Baseline: baseline}
	for _, g := range selected {
		opts.Logf("== %s", g.Name)
		sections, err := g.Run(ctx, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", g.Name, err)
		}
		if quick {
			continue
		}
		if err := writeGroup(out, g.Name, render(sections)); err != nil {
			return err
		}
		opts.Logf("wrote %s's figures into %s", g.Name, out)
	}
	return nil
}

func selectGroups(only string) ([]report.Group, error) {
	if only == "" {
		return groups, nil
	}
	var selected []report.Group
	for name := range strings.SplitSeq(only, ",") {
		i := indexOf(name)
		if i < 0 {
			return nil, fmt.Errorf("no group %q; the groups are %s", name, names())
		}
		selected = append(selected, groups[i])
	}
	return selected, nil
}

func indexOf(name string) int {
	for i, g := range groups {
		if g.Name == name {
			return i
		}
	}
	return -1
}

func render(sections []report.Section) []byte {
	var b bytes.Buffer
	b.WriteString("Measured on:\n\n")
	report.ThisMachine().Markdown(&b)
	b.WriteString("\n")
	for _, s := range sections {
		s.Markdown(&b)
	}
	return b.Bytes()
}

// writeGroup replaces the group's part of the file, between its markers,
// keeping everything else (the prose, the record of profiles and fixes, the
// other groups' figures). A group not yet in the file goes at its end.
func writeGroup(path, name string, body []byte) error {
	text, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		text, err = []byte("# sshdeck benchmarks\n"), nil
	}
	if err != nil {
		return err
	}
	begin, end := markers(name)
	part := begin + "\n" + string(body) + end
	s := string(text)
	if i, j := strings.Index(s, begin), strings.Index(s, end); i >= 0 && j > i {
		s = s[:i] + part + s[j+len(end):]
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n" + part + "\n"
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func markers(name string) (begin, end string) {
	return fmt.Sprintf("<!-- make bench: %s begin (generated; edit bench/, not this part) -->", name),
		fmt.Sprintf("<!-- make bench: %s end -->", name)
}
