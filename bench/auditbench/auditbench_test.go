package auditbench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/bench/report"
)

// TestGroupQuick runs the group at its smallest size: every route has its
// row at every concurrency and its DynamoDB cost, and the sections say
// what they must.
func TestGroupQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every route's load, about 10 s")
	}
	var log strings.Builder
	o := report.Options{Quick: true, Log: &log}
	res, err := measure(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if len(res.Pairs) != len(routes)*len(concurrencies) {
		t.Errorf("%d pairs, want %d", len(res.Pairs), len(routes)*len(concurrencies))
	}
	for i, p := range res.Pairs {
		r, n := routes[i/len(concurrencies)], concurrencies[i%len(concurrencies)]
		if p.Route != r.Name || p.Concurrency != n {
			t.Errorf("pair %d is %s at %d, want %s at %d", i, p.Route, p.Concurrency, r.Name, n)
		}
		for _, m := range modes {
			for round, f := range p.Runs[m] {
				if f.Requests < n || f.PerSecond <= 0 || f.P50 <= 0 || f.P99 < f.P50 {
					t.Errorf("%s at %d, %s round %d: %+v", p.Route, n, m, round+1, f)
				}
			}
		}
	}

	if len(res.Costs) != len(routes) {
		t.Fatalf("%d costs, want %d", len(res.Costs), len(routes))
	}
	for _, c := range res.Costs {
		// Every request audited leaves exactly one record.
		for _, m := range modes {
			records := 0
			for _, w := range c.Writes[m] {
				for _, it := range w.Items {
					if it.Audit() {
						records++
					}
				}
			}
			if want := int(m); records != want {
				t.Errorf("%s, %s: %d audit records written, want %d", c.Route, m, records, want)
			}
		}
		if c.Units(on) <= c.Units(off) {
			t.Errorf("%s: %d WRU audited, %d unaudited: the record costs nothing?", c.Route, c.Units(on), c.Units(off))
		}
	}
	update, failure := res.Costs[1], res.Costs[len(res.Costs)-1]
	if update.Route != "update-host" || update.Calls[off]["PutItem"] != 1 || update.Calls[on]["PutItem"] != 0 ||
		update.Calls[on]["TransactWriteItems"] != 1 || update.Units(off) != 1 || update.Units(on) != 4 {
		t.Errorf("update-host: calls %v then %v, %d then %d WRU; want a PutItem of 1 WRU made a transaction of 4",
			update.Calls[off], update.Calls[on], update.Units(off), update.Units(on))
	}
	if failure.Route != "update-host, absent (404)" || failure.Units(off) != 0 || failure.Units(on) != 1 {
		t.Errorf("the failure: %d then %d WRU, want 0 then 1", failure.Units(off), failure.Units(on))
	}

	var md strings.Builder
	for _, s := range []report.Section{latencySection(o, res), costSection(res.Costs)} {
		s.Markdown(&md)
	}
	text := md.String()
	for _, needle := range []string{
		"go run ./bench -only audit", "the better of its 2 runs", "unaudited, audited, unaudited,", "load average",
		"| create-host (`POST /ssh/db/host`) | 1 |", "| update-host, absent (404) (`PUT /ssh/db/host/{absent id}`) | 16 |",
		"| update-host | 1 | 4 | +3 | 4.00× |", "| update-host, absent (404) | 0 | 1 | +1 | n/a |",
		"update-host: its change is a single PutItem of 1 WRU; audited, it becomes a TransactWriteItems of itself and the record, 2 × (1 + 1) = 4 WRU instead of 1",
		"its record is written alone, a PutItem of 1 WRU",
		"2 WRU per KB",
	} {
		if !strings.Contains(text, needle) {
			t.Errorf("the sections have no %q:\n%s", needle, text)
		}
	}
}

func TestUnits(t *testing.T) {
	item := map[string]types.AttributeValue{
		"pk":    &types.AttributeValueMemberS{Value: "OWNER#u"},                                                                               // 2 + 7
		"n":     &types.AttributeValueMemberN{Value: "1200"},                                                                                  // 1 + 2 (digits "12")
		"ok":    &types.AttributeValueMemberBOOL{Value: true},                                                                                 // 2 + 1
		"tags":  &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "eu"}}},                       // 4 + 3 + 1 + 2
		"m":     &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberB{Value: []byte{1, 2}}}}, // 1 + 3 + 1 + 1 + 2
		"gone?": &types.AttributeValueMemberNULL{Value: true},                                                                                 // 5 + 1
	}
	if got, want := itemSize(item), 9+3+3+10+8+6; got != want {
		t.Errorf("itemSize = %d, want %d", got, want)
	}
	for _, c := range []struct {
		n    string
		want int
	}{{"0", 1}, {"7", 2}, {"12", 2}, {"123", 3}, {"-0.0050", 2}, {"1E+10", 2}, {"1234567890", 6}} {
		if got := numberSize(c.n); got != c.want {
			t.Errorf("numberSize(%q) = %d, want %d", c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		size          int
		transactional bool
		want          int
	}{{0, false, 1}, {400, false, 1}, {1024, false, 1}, {1025, false, 2}, {400, true, 2}, {2100, true, 6}} {
		if got := units(c.size, c.transactional); got != c.want {
			t.Errorf("units(%d, %t) = %d, want %d", c.size, c.transactional, got, c.want)
		}
	}
}

// TestExpectStatus: the status a failing route must give passes the load
// generator as a 200; a success fails, and another failure stays one.
func TestExpectStatus(t *testing.T) {
	status := http.StatusNotFound
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	client := &http.Client{Transport: expectStatus{next: http.DefaultTransport, status: http.StatusNotFound}}
	get := func() (*http.Response, error) {
		resp, err := client.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	if resp, err := get(); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the expected 404: %v, %v; want a 200", resp, err)
	}
	status = http.StatusOK
	if _, err := get(); err == nil || !strings.Contains(err.Error(), "answered 200, want 404") {
		t.Errorf("a 200 where a 404 must be: %v", err)
	}
	status = http.StatusInternalServerError
	if resp, err := get(); err != nil || resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("a 500: %v, %v; want it as it is", resp, err)
	}
}
