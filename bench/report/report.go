// Package report is what every benchmark group of sshdeck's bench returns:
// sections of figures in tables, each with the command that reproduces it,
// rendered as Markdown into BENCHMARKS.md.
package report

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Options are given to every group.
type Options struct {
	// Root is the repository's root directory (go.mod, events/, build/).
	Root string
	// Quick runs every measurement at its smallest size, to check that it
	// works (the tests use it); its figures mean nothing.
	Quick bool
	// Log receives progress lines while a group runs.
	Log io.Writer
	// Baseline, when set, is a git revision of this repository: the api
	// group also measures sshdeck built at it, on one route, for an A/B
	// comparison in the same run (go run ./bench -baseline REV).
	Baseline string
}

// Logf writes one progress line.
func (o Options) Logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

// Group is one group of benchmarks (the local API, the Lambda functions,
// the tunnels).
type Group struct {
	// Name selects the group on the command line (go run ./bench -only Name).
	Name string
	Run  func(ctx context.Context, o Options) ([]Section, error)
}

// Section is a set of figures that one command reproduces.
type Section struct {
	Title string
	// Command reproduces the section from the repository's root.
	Command string
	// Text is Markdown, before the tables: what is measured, and how.
	Text   string
	Tables []Table
	// Notes is Markdown, after the tables: goals met or missed, and why.
	Notes string
}

// Table is a Markdown table.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row, formatting each cell with fmt.Sprint.
func (t *Table) Add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = fmt.Sprint(c)
	}
	t.Rows = append(t.Rows, row)
}

// Markdown writes the section under a level-3 heading.
func (s Section) Markdown(w io.Writer) {
	fmt.Fprintf(w, "### %s\n\n", s.Title)
	if s.Command != "" {
		fmt.Fprintf(w, "```sh\n%s\n```\n\n", s.Command)
	}
	if s.Text != "" {
		fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(s.Text))
	}
	for _, t := range s.Tables {
		t.Markdown(w)
	}
	if s.Notes != "" {
		fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(s.Notes))
	}
}

// Markdown writes the table, followed by a blank line.
func (t Table) Markdown(w io.Writer) {
	row := func(cells []string) {
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	row(t.Header)
	sep := make([]string, len(t.Header))
	for i := range sep {
		sep[i] = "---"
	}
	row(sep)
	for _, r := range t.Rows {
		row(r)
	}
	fmt.Fprintln(w)
}
