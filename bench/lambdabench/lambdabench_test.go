package lambdabench

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/bench/report"
)

// TestQuick runs the group as `go run ./bench -quick` does (two functions,
// one cold start each) and checks that every table is there, one row per
// function, with figures that make sense.
func TestQuick(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	// No deadline: the run starts with two go builds (cold on a fresh
	// machine), whose time is the machine's; the cold starts after them end
	// when each function answers or exits (make test also runs go test
	// with -timeout 0).
	sections, err := Group.Run(t.Context(), report.Options{Root: root, Quick: true, Log: &log})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	if len(sections) != 3 {
		t.Fatalf("%d sections, want sizes, cold start and calls", len(sections))
	}
	for _, s := range sections {
		if s.Title == "" || s.Command == "" || s.Text == "" || len(s.Tables) != 1 {
			t.Errorf("section %q: command %q, %d tables, text %d bytes", s.Title, s.Command, len(s.Tables), len(s.Text))
		}
		for _, tb := range s.Tables {
			if len(tb.Rows) != len(quickFunctions) {
				t.Errorf("%s: %d rows for %d functions", s.Title, len(tb.Rows), len(quickFunctions))
			}
			for _, r := range tb.Rows {
				if len(r) != len(tb.Header) {
					t.Errorf("%s: row %v under header %v", s.Title, r, tb.Header)
				}
			}
		}
		var md bytes.Buffer
		s.Markdown(&md)
		if !strings.Contains(md.String(), "| get-host |") {
			t.Errorf("%s: no row of get-host in\n%s", s.Title, md.String())
		}
	}

	rows := byFunction(sections[0].Tables[0])
	for _, name := range quickFunctions {
		boot, zip := number(t, rows[name][2]), number(t, rows[name][3])
		if boot < 1 || boot > 10 || zip <= 0 || zip >= boot {
			t.Errorf("%s: bootstrap %v MB, zip %v MB", name, boot, zip)
		}
	}

	rows = byFunction(sections[1].Tables[0])
	for _, name := range quickFunctions {
		init, first := number(t, rows[name][1]), number(t, rows[name][3])
		if cpu := number(t, rows[name][5]); init <= 0 || first < init || first > 10_000 || cpu <= 0 {
			t.Errorf("%s: init %v ms, first answer %v ms, CPU %v ms", name, init, first, cpu)
		}
	}
	if rows["get-host"][6] != "200" || rows["authorizer"][6] != "Allow" {
		t.Errorf("answers: get-host %q, authorizer %q", rows["get-host"][6], rows["authorizer"][6])
	}
	if !strings.Contains(sections[1].Notes, "Worst median first answer") {
		t.Errorf("cold start notes: %s", sections[1].Notes)
	}

	// get-host reads one item and opens its credentials with KMS; the
	// authorizer reads its token (and its user: replay_test pins both).
	rows = byFunction(sections[2].Tables[0])
	if got := rows["get-host"]; got[3] != "GetItem 1" || got[4] != "1" || got[5] != "Decrypt 1" || got[6] != "1 call: met" || got[2] != "none" {
		t.Errorf("get-host calls: %v", got)
	}
	if got := rows["authorizer"]; !strings.Contains(got[3], "GetItem") || got[5] != "none" || got[2] != "none" {
		t.Errorf("authorizer calls: %v", got)
	}
}

func byFunction(t report.Table) map[string][]string {
	m := map[string][]string{}
	for _, r := range t.Rows {
		m[r[0]] = r
	}
	return m
}

func number(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Errorf("%q is not a number", s)
	}
	return f
}

func TestStats(t *testing.T) {
	runs := []coldStart{{first: 3}, {first: 1}, {first: 2}, {first: 10}}
	p50, maxd := stats(runs, func(c coldStart) time.Duration { return c.first })
	if p50 != 2 || maxd != 10 { // (2+3)/2 in integer nanoseconds
		t.Errorf("p50 %v max %v", p50, maxd)
	}
	if got := minus(map[string]int{"GetItem": 2, "Query": 1}, map[string]int{"GetItem": 1, "Query": 1}); len(got) != 1 || got["GetItem"] != 1 {
		t.Errorf("minus: %v", got)
	}
	if got := formatCalls(map[string]int{"Query": 1, "GetItem": 2, "PutItem": 0}); got != "GetItem 2, Query 1" {
		t.Errorf("formatCalls: %q", got)
	}
}
