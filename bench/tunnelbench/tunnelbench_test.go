package tunnelbench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/internal/sshdtest"
)

// TestQuick runs the group at its smallest sizes and checks that every
// table is there with sane figures.
func TestQuick(t *testing.T) {
	sshdtest.Require(t)
	// No deadline: the run starts sshd and ssh processes and logs in to
	// sshd many times, which takes what the machine gives it; the waits
	// that are not work have their own bounds (env.go, openssh.go).
	var log bytes.Buffer
	sections, err := Group.Run(t.Context(), report.Options{Quick: true, Log: &log})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	byTitle := map[string]report.Section{}
	for _, s := range sections {
		byTitle[s.Title] = s
		if s.Command != command {
			t.Errorf("%s: command %q", s.Title, s.Command)
		}
		var md bytes.Buffer
		s.Markdown(&md)
		t.Logf("\n%s", md.String())
	}

	tp := byTitle["Tunnels: throughput"]
	if len(tp.Tables) != 3 {
		t.Fatalf("throughput: %d tables, want 3 (one stream, parallel streams, comparisons)", len(tp.Tables))
	}
	for _, table := range tp.Tables[:2] {
		rows := rowsByName(t, table)
		for _, name := range []string{rawTCP, opensshJump, sshdeckRelay, opensshOneHop, opensshJumpD, sshdeckDirect, opensshOneHopD, sshdeckForward, opensshLocal} {
			row, ok := rows[name]
			if !ok {
				t.Errorf("%s: no row %q", table.Header[0], name)
				continue
			}
			positive(t, table.Header[0]+" "+name+" MB/s", row[2])
			if name != rawTCP {
				// The same cipher on both sides of a comparison, or the
				// row says it runs each side's defaults.
				want := sameCipher
				if name == sshdeckDirect || name == opensshOneHopD {
					want = defaultCipher // both sides OpenSSH's client
				}
				if name != opensshJumpD && row[1] != want {
					t.Errorf("%s: %s runs %q, want %q", table.Header[0], name, row[1], want)
				}
				if name == opensshJumpD && !strings.HasPrefix(row[1], "defaults: ") {
					t.Errorf("%s: the defaults row says %q", table.Header[0], row[1])
				}
			}
			// The tunnel service's CPU for the paths it carries, the client
			// processes' for OpenSSH's and a forward's (both, for a
			// forward): figures, else "–". At these sizes a figure may be
			// within a clock tick of 0, or below it.
			service := name == sshdeckRelay || name == sshdeckDirect || name == sshdeckForward
			client := name != rawTCP && (!service || name == sshdeckForward)
			for col, want := range map[int]bool{4: service, 5: client} {
				if _, err := strconv.ParseFloat(row[col], 64); (err == nil) != want || !want && row[col] != "–" {
					t.Errorf("%s: %s's %s is %q", table.Header[0], name, table.Header[col], row[col])
				}
			}
		}
	}
	goals := rowsByName(t, tp.Tables[2])
	if len(goals) != len(comparisons) {
		t.Errorf("comparisons: %d rows, want %d", len(goals), len(comparisons))
	}
	for name, row := range goals {
		positive(t, name+" × one stream", row[1])
		positive(t, name+" × streams", row[2])
	}
	for _, name := range []string{opensshJump, sshdeckRelay, opensshOneHop, sshdeckDirect, opensshOneHopD, sshdeckForward, opensshLocal} {
		if !strings.Contains(tp.Text, name+": OpenSSH_") && !strings.Contains(tp.Text, name+": Go: ") {
			t.Errorf("throughput text names no negotiated cipher for %q:\n%s", name, tp.Text)
		}
	}

	ct := byTitle["Tunnels: time to connect"]
	if len(ct.Tables) != 1 {
		t.Fatalf("connect: %d tables", len(ct.Tables))
	}
	if len(ct.Tables[0].Rows) != 4 {
		t.Errorf("connect: %d rows, want 4", len(ct.Tables[0].Rows))
	}
	for _, row := range ct.Tables[0].Rows {
		p50, p99 := positive(t, row[0]+" p50", row[1]), positive(t, row[0]+" p99", row[2])
		if p99 < p50 {
			t.Errorf("%s: p99 %v < p50 %v", row[0], p99, p50)
		}
	}
	rows := ct.Tables[0].Rows
	if a, c := num(rows[0][1]), num(rows[1][1]); c < a {
		t.Errorf("connected (%v ms) before the connect request was answered (%v ms)", c, a)
	}

	mem := byTitle["Tunnels: memory per idle tunnel"]
	if len(mem.Tables) != 2 || len(mem.Tables[0].Rows) != len(quick.idle) || len(mem.Tables[1].Rows) != len(quick.idle) {
		t.Fatalf("memory: want two tables (dedicated, shared) with a row for each of %v tunnels: %+v", quick.idle, mem.Tables)
	}
	// Shared tunnels ride one connection to the source, whatever their
	// number; the goal is stated.
	for _, row := range mem.Tables[1].Rows {
		if row[5] != "1" {
			t.Errorf("%s shared tunnels ride %s connections to the source, want 1", row[0], row[5])
		}
	}
	if !strings.Contains(mem.Notes, "per idle tunnel added to a shared connection") {
		t.Errorf("memory notes state no goal for shared tunnels: %s", mem.Notes)
	}
	for i, row := range mem.Tables[0].Rows {
		if row[0] != strconv.Itoa(quick.idle[i]) {
			t.Errorf("memory row %d is for %s tunnels, want %d", i, row[0], quick.idle[i])
		}
		// Each tunnel holds goroutines: a count of 0 means the tunnels
		// were not up when measured. Its memory at these tiny counts may be
		// below the noise between two measurements, so it is only checked
		// to be a number of plausible size, negative or not (TestPerTunnel
		// checks the arithmetic).
		positive(t, "goroutines per tunnel at "+row[0], row[3])
		for _, col := range []int{1, 2} {
			if f, err := strconv.ParseFloat(row[col], 64); err != nil || f < -1<<20 || f > 1<<20 {
				t.Errorf("%s at %s tunnels is %q, want a number of KiB", mem.Tables[0].Header[col], row[0], row[col])
			}
		}
	}
	ten := byTitle["Tunnels: a full tenancy (16 users at their limits)"]
	if len(ten.Tables) != 2 || len(ten.Tables[0].Rows) != 3 || len(ten.Tables[1].Rows) != 2 {
		t.Fatalf("tenancy: want a table of 3 phases and one of 2 unit costs: %+v", ten.Tables)
	}
	for _, row := range ten.Tables[0].Rows {
		positive(t, "RSS of "+row[0], row[2])
		positive(t, "goroutines of "+row[0], row[4])
	}
	if !strings.Contains(ten.Notes, "Budget") || !strings.Contains(ten.Notes, "250 millicores") {
		t.Errorf("tenancy notes state no budget: %s", ten.Notes)
	}
	if len(sections) != 4 {
		t.Errorf("%d sections, want 4", len(sections))
	}
}

func rowsByName(t *testing.T, table report.Table) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, r := range table.Rows {
		if len(r) != len(table.Header) {
			t.Errorf("row %v has %d cells for %d columns", r, len(r), len(table.Header))
		}
		out[r[0]] = r
	}
	return out
}

func num(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return f
}

func positive(t *testing.T, what, cell string) float64 {
	t.Helper()
	f := num(cell)
	if f <= 0 {
		t.Errorf("%s is %q, want a positive number", what, cell)
	}
	return f
}

// TestPerTunnel: memory after starting the tunnels below the memory before
// comes out negative (it printed 18014398509481894.0 KiB, a uint64 that
// wrapped around), and the table says why such a figure is there.
func TestPerTunnel(t *testing.T) {
	for _, c := range []struct {
		after, before uint64
		tunnels       int
		want          float64
	}{
		{after: 300 << 10, before: 100 << 10, tunnels: 2, want: 100 << 10},
		{after: 100 << 10, before: 190 << 10, tunnels: 1, want: -90 << 10},
		{after: 5, before: 5, tunnels: 1000, want: 0},
		{after: 1 << 20, before: 0, tunnels: 0, want: 1 << 20}, // no tunnel: divided by 1
	} {
		if got := perTunnel(c.after, c.before, c.tunnels); got != c.want {
			t.Errorf("perTunnel(%d, %d, %d) = %v, want %v", c.after, c.before, c.tunnels, got, c.want)
		}
	}
	if got := kib(perTunnel(100<<10, 190<<10, 1)); got != "-90.0" {
		t.Errorf("kib of a negative difference: %q, want -90.0", got)
	}

	r := &memResult{
		base:   memSnapshot{heap: 200 << 10, stacks: 64 << 10, rss: 40 << 20, goroutines: 10, available: 8 << 30},
		levels: []memSnapshot{{tunnels: 1, heap: 150 << 10, stacks: 68 << 10, rss: 40 << 20, goroutines: 17, available: 8 << 30}},
	}
	s := r.section()
	row := s.Tables[0].Rows[0]
	if row[1] != "-46.0" || row[2] != "0.0" || row[3] != "7.0" {
		t.Errorf("row %v, want heap+stacks -46.0 KiB, RSS 0.0, 7.0 goroutines", row)
	}
	if !strings.Contains(s.Notes, "negative figure") {
		t.Errorf("no note on the negative figure: %q", s.Notes)
	}
	r.levels[0].heap = 400 << 10
	if s := r.section(); strings.Contains(s.Notes, "negative") {
		t.Errorf("a note on negative figures with none: %q", s.Notes)
	}
}

// BenchmarkIdleMemory runs the memory per idle tunnel alone (dedicated and
// shared connections, at the full run's counts) and logs its section, as
// `go run ./bench -only tunnel` writes it:
//
//	go test -run '^$' -bench IdleMemory -benchtime 1x ./bench/tunnelbench/
func BenchmarkIdleMemory(b *testing.B) {
	sshdtest.Require(b)
	var log bytes.Buffer
	e, err := newEnv(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer e.close()
	var p ports
	var mem *memResult
	for b.Loop() {
		if mem, err = e.idleMemory(b.Context(), report.Options{Log: &log}, &p, full.idle, ""); err != nil {
			b.Fatalf("%v\nlog:\n%s", err, log.String())
		}
	}
	// Printed, not logged: the testing package cuts a benchmark's log.
	fmt.Printf("%s\n", log.String())
	mem.section().Markdown(os.Stdout)
}
