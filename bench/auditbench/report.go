package auditbench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

const command = "go run ./bench -only audit"

// micros formats a latency in whole µs: the added latencies of the audit
// are tens to hundreds of µs, and one unit for every figure of the table
// lets them be subtracted by eye.
func micros(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }

// signedMicros is micros with its sign, for a difference.
func signedMicros(d time.Duration) string { return fmt.Sprintf("%+d µs", d.Microseconds()) }

func latencySection(o report.Options, res result) report.Section {
	s := sizesOf(o)
	t := report.Table{Header: []string{"route", "concurrency", "req/s unaudited", "req/s audited", "audited / unaudited req/s",
		"p50 unaudited", "p50 audited", "added p50", "p99 unaudited", "p99 audited", "req/s of each round (unaudited; audited)"}}
	for _, p := range res.Pairs {
		a, b := p.Best(off), p.Best(on)
		t.Add(fmt.Sprintf("%s (`%s`)", p.Route, p.Call), p.Concurrency,
			fmt.Sprintf("%.0f", a.PerSecond), fmt.Sprintf("%.0f", b.PerSecond), ratio(p.Throughput()),
			micros(a.P50), micros(b.P50), signedMicros(p.AddedP50()), micros(a.P99), micros(b.P99),
			rounds2(p))
	}
	return report.Section{
		Title:   "Audit: the write routes with and without their audit records (embedded store)",
		Command: command,
		Text: fmt.Sprintf(`
What is compared: two API servers (`+"`api.New`"+`) in the bench's process over **one** embedded
store in a new temporary directory, built from the same services, so with the same handlers,
user, token and authenticator: one with `+"`Audit: &audit.Recorder{Store: store}`"+` (audited: each
request of a write route leaves one record, in the transaction of its change), one with
`+"`Audit`"+` nil (unaudited: the before). Each is behind its own `+"`httptest.NewServer`"+`, real HTTP
over loopback; the load generator (`+"`bench/load`"+`) runs in the same process, N workers each
with its own kept-alive connection, for a %[1]s warm-up then %[2]s; every latency is recorded,
p50 and p99 are nearest-rank. Servers, store and generator share this machine's cores, and no
request log is written.

Alternation: for each route and concurrency the runs go unaudited, audited, unaudited,
audited (%[3]d rounds), one right after the other, so that what else the machine does in the
meantime falls on both. The table shows, for each mode, **the better of its %[3]d runs** (the one
of more req/s, with its own p50 and p99): a busy machine only ever slows a run down. The last
column has every run's req/s, in the order run, to show the spread. The ratio is the
audited req/s over the unaudited; added p50 is the audited p50 less the unaudited.

The requests: create-host posts a new host (JSON, with a password, so every write seals
it); update-host puts one of the user's hosts, each worker its own (no two race for a
version), alternating two bodies so each is a change; add-recent-file adds to one host's
list, cycling through 150 paths (more than its cap of 100: each add moves or trims);
add-shortcut adds a new path each request, spread over 64 hosts new for the run (each add
counts its host's shortcuts); create-token makes a token of an hour; the failure puts a host
id that does not exist: 404, after which the audited server writes the failure's record
alone (`+"`audit.Recorder.Finish`"+`) where the unaudited one wrote nothing. Any other answer fails
the run. Each run writes to hosts made for it before it starts (not measured), so no run
inherits another's writes, with one exception: every run of create-token is over a new store of
its own, set up as the shared one, because the embedded store's `+"`CreateTokenWithin`"+` reads every
token of the store (anyone's, revoked and expired ones too) to count the user's live ones: in
one store each run would start slower than the last, by the tokens the runs before it made.
Within one of its runs each create still reads the tokens the run made before it, so its
figures are of a store of hundreds of tokens, and the faster (unaudited) runs make more.

The machine's load average (1, 5, 15 min) was %[4]s before the group and %[5]s after.`,
			s.warmup, s.duration, rounds, res.LoadBefore, res.LoadAfter),
		Tables: []report.Table{t},
		Notes: `
The embedded store syncs the file at each commit (one fsync per group of concurrent writes,
` + "`shared/store/embedded/commit.go`" + `): an audited change adds the record to its change's
transaction, a few hundred bytes more in the same commit and no commit more; a failure's
record is a commit of its own where the unaudited request only read. That is why the failure
loses far more of its throughput than the changes do: it goes from a read to a write.`,
	}
}

// rounds2 is every run's req/s of the pair, in the order run.
func rounds2(p pair) string {
	var b strings.Builder
	for i, m := range modes {
		if i > 0 {
			b.WriteString("; ")
		}
		for round, f := range p.Runs[m] {
			if round > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%.0f", f.PerSecond)
		}
	}
	return b.String()
}

// ratio formats a ratio; 0 (no base to divide by) is "n/a".
func ratio(r float64) string {
	if r == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", r)
}

func costSection(costs []cost) report.Section {
	detail := report.Table{Header: []string{"route", "audit", "DynamoDB calls", "writes: item, its size → its WRU", "WRU"}}
	summary := report.Table{Header: []string{"route", "WRU unaudited", "WRU audited", "added WRU", "audited / unaudited"}}
	var notes []string
	for _, c := range costs {
		for _, m := range modes {
			detail.Add(fmt.Sprintf("%s (`%s`)", c.Route, c.Call), m, callList(c.Calls[m]), writeList(c.Writes[m]), c.Units(m))
		}
		r := 0.0
		if base := c.Units(off); base > 0 {
			r = float64(c.Units(on)) / float64(base)
		}
		summary.Add(c.Route, c.Units(off), c.Units(on), fmt.Sprintf("%+d", c.Units(on)-c.Units(off)), ratio(r))
		notes = append(notes, "- "+explain(c))
	}
	return report.Section{
		Title:   "Audit: DynamoDB calls and write request units per request",
		Command: command,
		Text: `
The same services and handlers, built the same way, over the DynamoDB store
(` + "`shared/store/dynamo`" + `) on an in-process DynamoDB (minidyn, ` + "`internal/dynamotest`" + `), two servers
again, one audited and one not. One request of each route goes to the unaudited server, then
one to the audited (update-host's second is the other body, still a change). The token's check
is in the authenticator's cache before, so the calls are the route's alone, as behind API
Gateway's authorizer. The calls are counted by the in-process DynamoDB (` + "`dynamotest.Calls`" + `);
the items of each write call are noted by a wrapper of the store's DynamoDB client, and must
agree with those counts.

Write request units (WRU, what an on-demand table bills) are computed from the items, by
DynamoDB's rules: a standard write (PutItem, UpdateItem, DeleteItem, each request of a
BatchWriteItem) costs 1 WRU per KB of the item, rounded up; every item of a TransactWriteItems
costs 2 WRU per KB (the prepare and the commit). A ConditionCheck is counted as a
transactional write of its item (it is in both columns, so the added cost does not depend on
that). Sizes are DynamoDB's item sizes (attribute names and values) of the items written: a
Put's from the item sent, an Update's and a ConditionCheck's from the item read back after the
request (the updates here only grow their items, and DynamoDB charges the larger of before and
after). Every item here is under 1 KB, the audit records included (about 0.4 KB).`,
		Tables: []report.Table{summary, detail},
		Notes:  "What auditing adds, route by route:\n\n" + strings.Join(notes, "\n"),
	}
}

// callList is the calls of each operation, by name.
func callList(calls map[string]int) string {
	if len(calls) == 0 {
		return "none"
	}
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(calls)) {
		parts = append(parts, fmt.Sprintf("%s %d", op, calls[op]))
	}
	return strings.Join(parts, ", ")
}

// writeList is each write call with its items.
func writeList(writes []writeCall) string {
	if len(writes) == 0 {
		return "none"
	}
	var calls []string
	for _, c := range writes {
		var items []string
		for _, it := range c.Items {
			items = append(items, fmt.Sprintf("%s %s %d B → %d", it.Kind, it.Label(), it.Size, it.Units(c.Transactional())))
		}
		calls = append(calls, c.Op+": "+strings.Join(items, ", "))
	}
	return strings.Join(calls, "; ")
}

// explain says in words what the record did to the route's writes: was
// written alone, turned a single write into a transaction of it and the
// record, or joined the transaction that already was the change.
func explain(c cost) string {
	added := c.Units(on) - c.Units(off)
	call, record, ok := auditCall(c.Writes[on])
	if !ok {
		return fmt.Sprintf("%s: no audit record was written (%+d WRU).", c.Route, added)
	}
	if !call.Transactional() {
		return fmt.Sprintf("%s: the request changed nothing; its record is written alone, a %s of %d WRU where nothing was written.",
			c.Route, call.Op, record.Units(false))
	}
	if single, ok := becameTransaction(c.Writes[off], call); ok {
		u, after := single.Items[0].Units(false), 0
		for _, it := range call.Items {
			after += it.Units(true)
		}
		return fmt.Sprintf("%s: its change is a single %s of %d WRU; audited, it becomes a TransactWriteItems of itself and the record, "+
			"2 × (%d + %d) = %d WRU instead of %d: %s the write's cost, for a record of %d WRU.",
			c.Route, single.Op, u, u, record.Units(false), after, u, ratio(float64(after)/float64(u)), record.Units(false))
	}
	return fmt.Sprintf("%s: its change already is a TransactWriteItems; the record's Put joins it at the transactional rate, 2 × %d = %+d WRU.",
		c.Route, record.Units(false), added)
}

// auditCall finds the write call that wrote the audit record, and the
// record's item.
func auditCall(writes []writeCall) (writeCall, itemWrite, bool) {
	for _, c := range writes {
		for _, it := range c.Items {
			if it.Audit() {
				return c, it, true
			}
		}
	}
	return writeCall{}, itemWrite{}, false
}

// becameTransaction finds, when the audited transaction is of one item
// and the record, the standard write of that item among the unaudited
// request's writes: the single write that auditing made a transaction.
func becameTransaction(unaudited []writeCall, audited writeCall) (writeCall, bool) {
	if len(audited.Items) != 2 {
		return writeCall{}, false
	}
	change := audited.Items[0]
	if change.Audit() {
		change = audited.Items[1]
	}
	for _, c := range unaudited {
		if !c.Transactional() && len(c.Items) == 1 && sameKey(c.Items[0].Key, change.Key) {
			return c, true
		}
	}
	return writeCall{}, false
}

func sameKey(a, b map[string]types.AttributeValue) bool {
	for _, k := range []string{schema.PartitionKey, schema.SortKey} {
		if keyString(a, k) != keyString(b, k) {
			return false
		}
	}
	return true
}
