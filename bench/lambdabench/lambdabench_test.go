package lambdabench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/internal/cloudtest"
)

// TestQuick runs the group as `go run ./bench -quick` does (three
// functions, one cold start each) and checks that every table is there, one
// row per function, with figures that make sense.
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
		cpu, answer, peak := number(t, rows[name][5]), number(t, rows[name][6]), number(t, rows[name][7])
		if init <= 0 || first < init || first > 10_000 || cpu <= 0 || answer <= 0 || answer > cpu || peak < 1 || peak > 256 {
			t.Errorf("%s: init %v ms, first answer %v ms, CPU %v ms, of the answer %v ms, peak RSS %v MB", name, init, first, cpu, answer, peak)
		}
	}
	if rows["get-host"][8] != "200" || rows["login"][8] != "200" || rows["authorizer"][8] != "Allow" {
		t.Errorf("answers: get-host %q, login %q, authorizer %q", rows["get-host"][8], rows["login"][8], rows["authorizer"][8])
	}
	// The argon2id hash of login's answer (19 MiB, 2 passes) is several
	// milliseconds of CPU on any machine.
	if login, get := number(t, rows["login"][6]), number(t, rows["get-host"][6]); login < get+5 {
		t.Errorf("login's answer took %v ms of CPU, get-host's %v ms: no argon2id hash in it?", login, get)
	}
	if !strings.Contains(sections[1].Notes, "Worst median first answer") || !strings.Contains(sections[1].Notes, "Login's answer") {
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

// TestEventPayload: the routes that send a TOTP code get the fixture's
// current one; the others their file as it is.
func TestEventPayload(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	fixture := &cloudtest.Fixture{PendingTOTP: []byte("12345678901234567890"), ActiveTOTP: []byte("09876543210987654321")}
	now := time.Now()
	fns := map[string]function{}
	for _, f := range functions(root, false) {
		fns[f.name] = f
	}
	for name, key := range map[string][]byte{"enable-totp": fixture.PendingTOTP, "disable-totp": fixture.ActiveTOTP} {
		b, err := eventPayload(root, fns[name], fixture, now)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.APIGatewayProxyRequest
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		if want := `{"code":"` + cloudtest.TOTPCode(key, now) + `"}`; ev.Body != want || ev.Resource != fns[name].route.Path {
			t.Errorf("%s: %s %s, want the body %s", name, ev.Resource, ev.Body, want)
		}
	}
	b, err := eventPayload(root, fns["get-host"], fixture, now)
	file, _ := os.ReadFile(fns["get-host"].event)
	if err != nil || !bytes.Equal(b, file) {
		t.Errorf("get-host's payload is not its file: %v", err)
	}
}
