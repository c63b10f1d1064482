package auditevents_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/internal/eventstest"
	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/auditevents"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

const bus = "deck"

// fixture is a table (minidyn) holding audit records, EventBridge (the
// fake) and a publisher to it whose log the test reads.
type fixture struct {
	db        *dynamotest.Server
	store     *dynamo.Store
	bridge    *eventstest.Server
	publisher *auditevents.Publisher
	log       *bytes.Buffer
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{db: dynamotest.Start(t), bridge: eventstest.Start(t), log: &bytes.Buffer{}}
	f.store = dynamo.New(f.db.Client, f.db.Table)
	f.publisher = &auditevents.Publisher{Events: f.bridge.Client(), Bus: bus, Log: slog.New(slog.NewJSONHandler(f.log, nil))}
	return f
}

// record is the i-th audit record of a test: a second apart, in January
// 2026 (one month's partition); odd ones failures without an actor.
func record(i int) *sshdeck.AuditRecord {
	at := time.Date(2026, 1, 15, 10, 0, i, 123456789, time.UTC)
	r := &sshdeck.AuditRecord{
		ID: audit.NewID(at), Time: at, Actor: "usr_alice", Action: "create-host", Target: fmt.Sprintf("host %d", i),
		RequestID: fmt.Sprintf("req-%d", i), SourceIP: "203.0.113.9", Outcome: sshdeck.AuditSuccess, ExpiresAt: at.Add(400 * 24 * time.Hour),
	}
	if i%2 == 1 {
		r.Actor, r.Action, r.Target, r.Outcome, r.Code = "", "login", "login mallory", sshdeck.AuditFailure, sshdeck.Unauthorized
	}
	return r
}

// write stores the records and returns their items as the table holds
// them, in the records' order.
func (f *fixture) write(t *testing.T, records ...*sshdeck.AuditRecord) []map[string]types.AttributeValue {
	t.Helper()
	for _, r := range records {
		if err := f.store.PutAuditRecord(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	items, err := f.db.Partition(t.Context(), "AUDIT#2026-01")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]map[string]types.AttributeValue{}
	for _, item := range items {
		byID[item["id"].(*types.AttributeValueMemberS).Value] = item
	}
	out := make([]map[string]types.AttributeValue, len(records))
	for i, r := range records {
		if out[i] = byID[r.ID]; out[i] == nil {
			t.Fatalf("record %s is not in the table", r.ID)
		}
	}
	return out
}

func inserts(items []map[string]types.AttributeValue) []dynamotest.Change {
	changes := make([]dynamotest.Change, len(items))
	for i, item := range items {
		changes[i] = dynamotest.Change{Name: "INSERT", Item: item}
	}
	return changes
}

func streamEvent(t *testing.T, changes ...dynamotest.Change) events.DynamoDBEvent {
	t.Helper()
	ev, err := dynamotest.StreamEvent(changes...)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// sentIDs are the record ids of the events the fake took, in its order.
func (f *fixture) sentIDs(t *testing.T) []string {
	t.Helper()
	var ids []string
	for _, e := range f.bridge.Events() {
		var r audit.Record
		if err := json.Unmarshal([]byte(e.Detail), &r); err != nil {
			t.Fatalf("event %s: detail %q: %v", e.ID, e.Detail, err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

func ids(records []*sshdeck.AuditRecord) []string {
	out := make([]string, len(records))
	for i, r := range records {
		out[i] = r.ID
	}
	return out
}

func noFailure(t *testing.T, resp events.DynamoDBEventResponse, err error) {
	t.Helper()
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v; want no failure", resp, err)
	}
}

func failsFrom(t *testing.T, resp events.DynamoDBEventResponse, err error, sequence string) {
	t.Helper()
	want := []events.DynamoDBBatchItemFailure{{ItemIdentifier: sequence}}
	if err != nil || !slices.Equal(resp.BatchItemFailures, want) {
		t.Fatalf("Handle = %+v, %v; want the failure of %s alone", resp, err, sequence)
	}
}

// TestEveryAuditInsertSent: each audit record a batch inserts goes to the
// bus, in the stream's order, as its event: source sshdeck, detail type
// "Audit record", the record's time, and the record as the API shows it
// for detail; ten to a request. Changes that are no audit insert (another
// item's, an audit item's expiry) are skipped.
func TestEveryAuditInsertSent(t *testing.T) {
	f := newFixture(t)
	var records []*sshdeck.AuditRecord
	for i := range 23 {
		records = append(records, record(i))
	}
	items := f.write(t, records...)
	alert := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ALERTS"},
		"sk": &types.AttributeValueMemberS{Value: "ALERT#alr_1"}, "tags": &types.AttributeValueMemberL{}}
	changes := inserts(items)
	changes = slices.Insert(changes, 3, dynamotest.Change{Name: "INSERT", Item: alert})
	changes = slices.Insert(changes, 7, dynamotest.Change{Name: "MODIFY", Item: alert})
	changes = append(changes, dynamotest.Change{Name: "REMOVE", Item: items[0]}, dynamotest.Change{Name: "MODIFY", Item: items[1]})

	resp, err := f.publisher.Handle(t.Context(), streamEvent(t, changes...))
	noFailure(t, resp, err)
	if got := f.sentIDs(t); !slices.Equal(got, ids(records)) {
		t.Fatalf("sent %v,\nwant %v", got, ids(records))
	}
	if calls := f.bridge.Calls(); calls["PutEvents"] != 3 || len(calls) != 1 {
		t.Errorf("calls %v, want 3 PutEvents (10, 10, 3)", calls)
	}
	for i, e := range f.bridge.Events() {
		r := records[i]
		want, _ := audit.Detail(audit.RecordOf(r))
		if e.Bus != bus || e.Source != "sshdeck" || e.DetailType != "Audit record" || e.Detail != want ||
			!e.Time.Equal(r.Time.Truncate(time.Millisecond)) || len(e.Resources) != 0 {
			t.Errorf("event %d: %+v,\nwant bus %s, source sshdeck, detail type Audit record, time %v, detail %s", i, e, bus, r.Time, want)
		}
	}
	// The detail is the API's record: no retention, the code of a failure.
	var detail map[string]any
	json.Unmarshal([]byte(f.bridge.Events()[1].Detail), &detail)
	if _, ok := detail["expiresAt"]; ok || detail["code"] != "unauthorized" || detail["outcome"] != "failure" || detail["actor"] != "" {
		t.Errorf("a failure's detail: %v", detail)
	}
	if line := f.log.String(); !strings.Contains(line, `"msg":"audit-events","records":27,"skipped":4,"sent":23,"failed_from":""`) {
		t.Errorf("log:\n%s", line)
	}
}

// TestNothingToSend: a batch without an audit insert makes no request.
func TestNothingToSend(t *testing.T) {
	f := newFixture(t)
	items := f.write(t, record(0))
	resp, err := f.publisher.Handle(t.Context(), streamEvent(t, dynamotest.Change{Name: "REMOVE", Item: items[0]}))
	noFailure(t, resp, err)
	resp, err = f.publisher.Handle(t.Context(), events.DynamoDBEvent{})
	noFailure(t, resp, err)
	if calls := f.bridge.Calls(); len(calls) != 0 {
		t.Errorf("calls %v, want none", calls)
	}
}

// TestRefusedEntry: when EventBridge refuses one entry, the batch fails
// from that record: the entries before it are sent, the rest of its
// request too (EventBridge took them), no later request is made. Lambda
// then sends the batch again from that record, and every record reaches
// the bus at least once.
func TestRefusedEntry(t *testing.T) {
	f := newFixture(t)
	var records []*sshdeck.AuditRecord
	for i := range 15 {
		records = append(records, record(i))
	}
	changes := inserts(f.write(t, records...))
	refused := records[4].ID
	f.bridge.Refuse(func(e eventstest.Event) *eventstest.Refusal {
		if strings.Contains(e.Detail, refused) {
			return &eventstest.Refusal{Code: "InternalFailure", Message: "try again"}
		}
		return nil
	})
	resp, err := f.publisher.Handle(t.Context(), streamEvent(t, changes...))
	failsFrom(t, resp, err, dynamotest.SequenceNumber(4))
	want := slices.Concat(ids(records[:4]), ids(records[5:10]))
	if got := f.sentIDs(t); !slices.Equal(got, want) {
		t.Fatalf("sent %v,\nwant %v", got, want)
	}
	if calls := f.bridge.Calls(); calls["PutEvents"] != 1 {
		t.Errorf("calls %v, want the first request alone", calls)
	}
	if log := f.log.String(); !strings.Contains(log, `"msg":"audit event refused","sequence_number":"`+dynamotest.SequenceNumber(4)+`","record_id":"`+refused+`","error_code":"InternalFailure"`) {
		t.Errorf("log:\n%s", log)
	}

	// Lambda's retry: from the failed record on.
	f.bridge.Refuse(nil)
	resp, err = f.publisher.Handle(t.Context(), streamEvent(t, changes[4:]...))
	noFailure(t, resp, err)
	got := f.sentIDs(t)
	for _, id := range ids(records) {
		if !slices.Contains(got, id) {
			t.Errorf("record %s never sent", id)
		}
	}
	if len(got) != len(records)+5 {
		t.Errorf("%d events, want each record once and the five after the refused one of its request twice", len(got))
	}
}

// TestFailedRequest: a request that fails as a whole fails the batch from
// its first record; the requests before it stand.
func TestFailedRequest(t *testing.T) {
	f := newFixture(t)
	var records []*sshdeck.AuditRecord
	for i := range 14 {
		records = append(records, record(i))
	}
	changes := inserts(f.write(t, records...))
	// Skipped records shift the sequence numbers: the failed request's
	// first record is the stream's twelfth.
	changes = slices.Insert(changes, 0, dynamotest.Change{Name: "REMOVE", Item: changes[0].Item})

	f.bridge.FailRequests("AccessDeniedException")
	resp, err := f.publisher.Handle(t.Context(), streamEvent(t, changes...))
	failsFrom(t, resp, err, dynamotest.SequenceNumber(1))
	if sent := f.sentIDs(t); len(sent) != 0 {
		t.Errorf("sent %v after the first request failed", sent)
	}
	if log := f.log.String(); !strings.Contains(log, `"msg":"audit events not sent","sequence_number":"`+dynamotest.SequenceNumber(1)+`","record_id":"`+records[0].ID+`","entries":10,"error":"`) ||
		!strings.Contains(log, "AccessDeniedException") {
		t.Errorf("log:\n%s", log)
	}

	// The second request fails: the first ten records stand.
	f.bridge.FailRequests("", "AccessDeniedException")
	resp, err = f.publisher.Handle(t.Context(), streamEvent(t, changes...))
	failsFrom(t, resp, err, dynamotest.SequenceNumber(11))
	if got, want := f.sentIDs(t), ids(records[:10]); !slices.Equal(got, want) {
		t.Errorf("sent %v,\nwant %v", got, want)
	}
}

// TestRecordThatMakesNoEvent: an audit insert that cannot become an event
// (an attribute of a type no audit item has, one the store cannot decode,
// no id, no new image) fails the batch from it once the records before it
// are sent; the error names it without quoting the item.
func TestRecordThatMakesNoEvent(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(item map[string]types.AttributeValue)
		log   string
	}{
		{"a list", func(item map[string]types.AttributeValue) {
			item["tags"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "secret-tag"}}}
		}, "its new image: attribute tags: L (list), a type no audit item holds"},
		{"a time that is a number", func(item map[string]types.AttributeValue) {
			item["time"] = &types.AttributeValueMemberN{Value: "1767225600"}
		}, "attribute time is not"},
		{"no id", func(item map[string]types.AttributeValue) { delete(item, "id") }, "the audit record has no id or no time"},
		{"no new image", nil, "the record has no new image"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			records := []*sshdeck.AuditRecord{record(0), record(1), record(2), record(3)}
			changes := inserts(f.write(t, records...))
			if c.spoil != nil {
				c.spoil(changes[2].Item)
			}
			ev := streamEvent(t, changes...)
			if c.spoil == nil {
				ev.Records[2].Change.NewImage = nil
			}
			resp, err := f.publisher.Handle(t.Context(), ev)
			failsFrom(t, resp, err, dynamotest.SequenceNumber(2))
			if got, want := f.sentIDs(t), ids(records[:2]); !slices.Equal(got, want) {
				t.Errorf("sent %v, want %v", got, want)
			}
			log := f.log.String()
			if !strings.Contains(log, `"msg":"audit record not sent: it does not make an event","sequence_number":"`+dynamotest.SequenceNumber(2)+`"`) ||
				!strings.Contains(log, c.log) || strings.Contains(log, "secret-tag") {
				t.Errorf("log:\n%s\nwant the record's sequence number and %q", log, c.log)
			}
		})
	}
}

// TestRequestsWithinLimits: entries go as many to a request as PutEvents
// takes, by their size too (the fake refuses a request of 256 KB or more
// by EventBridge's count); an entry too large for any request fails the
// batch from its record.
func TestRequestsWithinLimits(t *testing.T) {
	f := newFixture(t)
	var records []*sshdeck.AuditRecord
	for i := range 5 {
		r := record(i)
		r.Target = strings.Repeat("t", 100*1024)
		records = append(records, r)
	}
	tooLarge := record(5)
	tooLarge.Target = strings.Repeat("t", 260*1024)
	changes := inserts(f.write(t, append(records, tooLarge, record(6))...))

	resp, err := f.publisher.Handle(t.Context(), streamEvent(t, changes...))
	failsFrom(t, resp, err, dynamotest.SequenceNumber(5))
	if got := f.sentIDs(t); !slices.Equal(got, ids(records)) {
		t.Errorf("sent %v, want %v", got, ids(records))
	}
	// 100 KiB each: two to a request.
	if calls := f.bridge.Calls(); calls["PutEvents"] != 3 {
		t.Errorf("calls %v, want 3 PutEvents of 2, 2 and 1 entries", calls)
	}
	if log := f.log.String(); !strings.Contains(log, "more than PutEvents takes") {
		t.Errorf("log:\n%s", log)
	}
}
