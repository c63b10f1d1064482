package functions

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/internal/cloudtest"
	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/internal/eventstest"
	"github.com/sshdeck/sshdeck/shared/app/auditapp"
	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
)

// The audit-events function is fed by the table's stream, which minidyn
// does not have: the tests write audit records through the store, read
// their items back from the table, and make of them the batch DynamoDB
// Streams would give the function (dynamotest.StreamEvent, through JSON as
// Lambda hands it over). The function is built as its main builds it, from
// the environment the CDK stack gives it (auditapp.AuditEvents), and puts the
// events on the EventBridge fake of internal/cloudtest.

// auditMonth is the partition of auditRecord's records.
const auditMonth = "AUDIT#2026-01"

// auditRecord is the i-th record of a test, a second apart in January
// 2026: a host's update by alice; every third one a refused login.
func auditRecord(i int) *sshdeck.AuditRecord {
	at := time.Date(2026, 1, 15, 9, 0, i, 987654321, time.UTC)
	r := &sshdeck.AuditRecord{
		ID: audit.NewID(at), Time: at, Actor: "usr_5f1c2a7e9b3d4c60", Action: "update-host", Target: "host 1",
		RequestID: "req-" + at.Format("150405"), SourceIP: "203.0.113.24", Outcome: sshdeck.AuditSuccess,
		ExpiresAt: at.Add(400 * 24 * time.Hour),
	}
	if i%3 == 2 {
		r.Actor, r.Action, r.Target, r.Outcome, r.Code = "", "login", "login mallory", sshdeck.AuditFailure, sshdeck.Unauthorized
	}
	return r
}

// auditItems returns the items of the records, as the table holds them,
// in the records' order.
func auditItems(t *testing.T, c *cloud, records ...*sshdeck.AuditRecord) []map[string]types.AttributeValue {
	t.Helper()
	items, err := c.dynamo.Partition(t.Context(), auditMonth)
	must(t, err)
	byID := map[string]map[string]types.AttributeValue{}
	for _, item := range items {
		if id, ok := item["id"].(*types.AttributeValueMemberS); ok {
			byID[id.Value] = item
		}
	}
	out := make([]map[string]types.AttributeValue, len(records))
	for i, r := range records {
		if out[i] = byID[r.ID]; out[i] == nil {
			t.Fatalf("audit record %s is not in the table", r.ID)
		}
	}
	return out
}

func streamEvent(t *testing.T, changes ...dynamotest.Change) events.DynamoDBEvent {
	t.Helper()
	ev, err := dynamotest.StreamEvent(changes...)
	must(t, err)
	return ev
}

// auditFunction builds the function's handler as functions/audit-events
// builds it, from the environment.
func auditFunction(t *testing.T) func(events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	t.Helper()
	publisher, err := auditapp.AuditEvents(t.Context())
	must(t, err)
	return func(ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return publisher.Handle(t.Context(), ev)
	}
}

// checkEvent checks that e is the event of r on the deployment's bus: the
// envelope of audit.Event, r's time, and r as the API shows it (the
// fields of GET /audit, no retention) for its detail.
func checkEvent(t *testing.T, e eventstest.Event, r *sshdeck.AuditRecord) {
	t.Helper()
	if e.Bus != cloudtest.EventBus || e.Source != "sshdeck" || e.DetailType != "Audit record" || !e.Time.Equal(r.Time.Truncate(time.Millisecond)) {
		t.Errorf("event of %s: bus %q, source %q, detail type %q, time %v; want %q, sshdeck, Audit record, %v",
			r.ID, e.Bus, e.Source, e.DetailType, e.Time, cloudtest.EventBus, r.Time)
	}
	var detail map[string]any
	if err := json.Unmarshal([]byte(e.Detail), &detail); err != nil {
		t.Fatalf("event of %s: detail %q: %v", r.ID, e.Detail, err)
	}
	want := map[string]any{
		"id": r.ID, "time": r.Time.Format(time.RFC3339Nano), "actor": r.Actor, "action": r.Action, "target": r.Target,
		"requestId": r.RequestID, "sourceIp": r.SourceIP, "outcome": string(r.Outcome),
	}
	if r.Code != "" {
		want["code"] = string(r.Code)
	}
	if !maps.Equal(detail, want) {
		t.Errorf("event of %s: detail %v,\nwant %v", r.ID, detail, want)
	}
}

// TestAuditEvents: the audit records a batch of the stream inserts (one
// written alone, one in the transaction of its change) reach the bus
// through the function's entry point, one event each, in the stream's
// order; another item's insert and update are skipped. The function makes
// no call to DynamoDB or KMS (its role allows none) and one PutEvents, and
// logs one line for the batch.
func TestAuditEvents(t *testing.T) {
	c := startCloud(t)
	ctx := t.Context()
	alone, withChange, last := auditRecord(0), auditRecord(1), auditRecord(2)
	must(t, c.store.PutAuditRecord(ctx, alone))
	note := &sshdeck.AuditNote{Record: *withChange}
	alert := &sshdeck.Alert{ID: "alr_audit", Title: "Maintenance", Message: "Tonight.", Priority: "high", Type: "warning",
		CreatedAt: withChange.Time, ExpiresAt: withChange.Time.Add(24 * time.Hour)}
	must(t, c.store.CreateAlert(sshdeck.AuditCommit(sshdeck.WithAudit(ctx, note)), alert))
	if !note.Written() {
		t.Fatal("the alert's write did not write its audit record")
	}
	must(t, c.store.PutAuditRecord(ctx, last))
	items := auditItems(t, c, alone, withChange, last)
	alerts, err := c.dynamo.Partition(ctx, "ALERTS")
	must(t, err)
	if len(alerts) != 1 {
		t.Fatalf("%d items in ALERTS, want the alert's", len(alerts))
	}
	batch := streamEvent(t,
		dynamotest.Change{Name: "INSERT", Item: items[0]},
		dynamotest.Change{Name: "INSERT", Item: alerts[0]},
		dynamotest.Change{Name: "INSERT", Item: items[1]},
		dynamotest.Change{Name: "MODIFY", Item: alerts[0]},
		dynamotest.Change{Name: "INSERT", Item: items[2]},
	)

	logs := captureStdout(t)
	handle := auditFunction(t)
	c.dynamo.ResetCalls()
	c.kms.ResetCalls()
	c.events.Reset()
	resp, err := handle(batch)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v; want no failure", resp, err)
	}
	sent := c.events.Events()
	if len(sent) != 3 {
		t.Fatalf("%d events, want one per audit record (3): %+v", len(sent), sent)
	}
	for i, r := range []*sshdeck.AuditRecord{alone, withChange, last} {
		checkEvent(t, sent[i], r)
	}

	if calls := c.dynamo.Calls(); len(calls) != 0 {
		t.Errorf("the function made DynamoDB calls %v; its role allows none", calls)
	}
	c.dynamo.CheckPolicy(t, "audit-events", iam.AuditEventsPolicy())
	if calls := c.kms.AllCalls(); len(calls) != 0 {
		t.Errorf("the function made KMS calls %v; its role allows none", calls)
	}
	if calls := c.events.Calls(); !maps.Equal(calls, map[string]int{"PutEvents": 1}) {
		t.Errorf("EventBridge calls %v, want one PutEvents", calls)
	}
	out := logs()
	if n := strings.Count(out, `"msg":"audit-events"`); n != 1 || !strings.Contains(out, `"records":5,"skipped":2,"sent":3,"failed_from":""`) {
		t.Errorf("log, want one line for the batch (5 records, 2 skipped, 3 sent):\n%s", out)
	}
}

// TestAuditEventsReportTheFirstFailure: when EventBridge refuses one
// entry, the function answers that record's sequence number as the
// batch's one failure (Lambda retries from there, not the whole batch);
// when a request fails as a whole, its first record's. Sent again from
// there, every record reaches the bus.
func TestAuditEventsReportTheFirstFailure(t *testing.T) {
	c := startCloud(t)
	var records []*sshdeck.AuditRecord
	for i := range 12 {
		records = append(records, auditRecord(i))
		must(t, c.store.PutAuditRecord(t.Context(), records[i]))
	}
	var changes []dynamotest.Change
	for _, item := range auditItems(t, c, records...) {
		changes = append(changes, dynamotest.Change{Name: "INSERT", Item: item})
	}
	handle := auditFunction(t)

	refused := records[6].ID
	c.events.Refuse(func(e eventstest.Event) *eventstest.Refusal {
		if strings.Contains(e.Detail, refused) {
			return &eventstest.Refusal{Code: "ThrottlingException", Message: "Rate exceeded"}
		}
		return nil
	})
	resp, err := handle(streamEvent(t, changes...))
	want := []events.DynamoDBBatchItemFailure{{ItemIdentifier: dynamotest.SequenceNumber(6)}}
	if err != nil || !slices.Equal(resp.BatchItemFailures, want) {
		t.Fatalf("Handle = %+v, %v; want the one failure %v", resp, err, want)
	}
	if sent := c.events.Events(); len(sent) != 9 {
		t.Errorf("%d events, want 9: the first request's ten but the refused one, and no second request", len(sent))
	}

	// Lambda sends the batch again from the failed record.
	c.events.Reset()
	resp, err = handle(streamEvent(t, changes[6:]...))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the retry: Handle = %+v, %v; want no failure", resp, err)
	}
	sent := c.events.Events()
	if len(sent) != 6 {
		t.Fatalf("the retry: %d events, want 6", len(sent))
	}
	for i, e := range sent {
		checkEvent(t, e, records[6+i])
	}

	// A request refused whole (the role may not put events there).
	c.events.Reset()
	c.events.FailRequests("AccessDeniedException")
	resp, err = handle(streamEvent(t, changes...))
	want = []events.DynamoDBBatchItemFailure{{ItemIdentifier: dynamotest.SequenceNumber(0)}}
	if err != nil || !slices.Equal(resp.BatchItemFailures, want) || len(c.events.Events()) != 0 {
		t.Fatalf("Handle = %+v, %v (%d events); want the one failure %v and no event", resp, err, len(c.events.Events()), want)
	}
}

// TestAuditEventsSampleEvent replays events/audit-events.json: its audit
// record's insert becomes the one event, the host's update is skipped.
func TestAuditEventsSampleEvent(t *testing.T) {
	c := startCloud(t)
	ev, err := cloudtest.ReadStreamEvent(eventsDir, "audit-events")
	must(t, err)
	handle := auditFunction(t)
	resp, err := handle(ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v; want no failure", resp, err)
	}
	sent := c.events.Events()
	if len(sent) != 1 {
		t.Fatalf("%d events, want 1: %+v", len(sent), sent)
	}
	const detail = `{"id":"aud_019bc0fdb9f9a3f1c2d4e5b6a7981234","time":"2026-01-15T09:30:12.345Z","actor":"usr_5f1c2a7e9b3d4c60",` +
		`"action":"update-host","target":"host 2","requestId":"6f1d3c2a-9b8e-4d7c-8a1f-000000000011","sourceIp":"203.0.113.24","outcome":"success"}`
	at := time.Date(2026, 1, 15, 9, 30, 12, 345e6, time.UTC)
	if e := sent[0]; e.Detail != detail || !e.Time.Equal(at) || e.Bus != cloudtest.EventBus || e.Source != audit.EventSource || e.DetailType != audit.EventDetailType {
		t.Errorf("event %+v,\nwant detail %s at %v on %s", e, detail, at, cloudtest.EventBus)
	}
}

// TestAuditEventsNeedsItsBus: without SSHDECK_EVENT_BUS the function does
// not start, and says which setting to give.
func TestAuditEventsNeedsItsBus(t *testing.T) {
	startCloud(t)
	t.Setenv(config.EventBus, "")
	if _, err := auditapp.AuditEvents(t.Context()); err == nil || !strings.HasPrefix(err.Error(), config.EventBus+" is not set") {
		t.Errorf("auditapp.AuditEvents without %s: %v", config.EventBus, err)
	}
}

// TestAuditEventsOfARoute: the whole path through the real entry points:
// create-host's function answers its sample event and writes the change's
// audit record in its transaction; the stream's batch of that insert, given
// to audit-events, puts its one event on the bus, naming the request.
func TestAuditEventsOfARoute(t *testing.T) {
	c := startCloud(t)
	fixture := seed(t, c.store, c.sealer)
	event := fixtureEvent(t, fixture, "create-host")
	r, _ := routes.ByName("create-host")
	fn, err := entryPoint(r)
	must(t, err)
	resp, err := fn(t.Context(), event)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create-host: %d %v: %s", resp.StatusCode, err, resp.Body)
	}
	items, err := c.dynamo.Partition(t.Context(), "AUDIT#"+time.Now().UTC().Format("2006-01"))
	must(t, err)
	var change []dynamotest.Change
	for _, item := range items {
		if id, ok := item["requestId"].(*types.AttributeValueMemberS); ok && id.Value == event.RequestContext.RequestID {
			change = append(change, dynamotest.Change{Name: "INSERT", Item: item})
		}
	}
	if len(change) != 1 {
		t.Fatalf("create-host's request left %d audit items, want one", len(change))
	}
	c.events.Reset()
	if out, err := auditFunction(t)(streamEvent(t, change...)); err != nil || len(out.BatchItemFailures) != 0 {
		t.Fatalf("audit-events: %+v, %v", out, err)
	}
	sent := c.events.Events()
	if len(sent) != 1 {
		t.Fatalf("%d events, want the create-host's", len(sent))
	}
	var detail audit.Record
	must(t, json.Unmarshal([]byte(sent[0].Detail), &detail))
	userID, _ := event.RequestContext.Authorizer["userId"].(string)
	if detail.Action != "create-host" || detail.Actor != userID || detail.RequestID != event.RequestContext.RequestID ||
		detail.SourceIP != event.RequestContext.Identity.SourceIP || detail.Outcome != "success" || !strings.HasPrefix(detail.Target, "host ") {
		t.Errorf("the event's detail: %+v", detail)
	}
}
