package eventstest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"

	"github.com/sshdeck/sshdeck/internal/awsjson"
	"github.com/sshdeck/sshdeck/internal/eventstest"
)

// TestWireFormat speaks the protocol by hand, as a client other than the Go
// SDK would, and checks the bytes EventBridge would answer.
func TestWireFormat(t *testing.T) {
	s := eventstest.Start(t)
	post := func(target, body string) (int, map[string]any) {
		t.Helper()
		return awsjson.Post(t, s.URL, target, body)
	}

	status, out := post("AWSEvents.PutEvents", `{"Entries":[`+
		`{"Source":"sshdeck","DetailType":"Audit record","Detail":"{\"id\":\"aud_1\"}","EventBusName":"deck","Time":1767225600.123},`+
		`{"Source":"sshdeck","DetailType":"Audit record","Detail":"not json","EventBusName":"deck"},`+
		`{"Source":"sshdeck","Detail":"{}"}]}`)
	entries, _ := out["Entries"].([]any)
	if status != 200 || out["FailedEntryCount"] != 2.0 || len(entries) != 3 {
		t.Fatalf("PutEvents: %d %v", status, out)
	}
	if id, _ := entries[0].(map[string]any)["EventId"].(string); len(id) != 36 {
		t.Errorf("entry 0: %v, want an EventId", entries[0])
	}
	for i, code := range map[int]string{1: "MalformedDetail", 2: "InvalidArgument"} {
		if e := entries[i].(map[string]any); e["ErrorCode"] != code || e["ErrorMessage"] == "" || e["EventId"] != nil {
			t.Errorf("entry %d: %v, want ErrorCode %s with a message and no EventId", i, e, code)
		}
	}
	events := s.Events()
	want := eventstest.Event{Bus: "deck", Source: "sshdeck", DetailType: "Audit record", Detail: `{"id":"aud_1"}`,
		Time: time.Date(2026, 1, 1, 0, 0, 0, 123e6, time.UTC)}
	if len(events) != 1 || events[0].ID != entries[0].(map[string]any)["EventId"] {
		t.Fatalf("events %+v, want the first entry's", events)
	}
	if got := events[0]; got.Bus != want.Bus || got.Source != want.Source || got.DetailType != want.DetailType ||
		got.Detail != want.Detail || !got.Time.Equal(want.Time) {
		t.Errorf("event %+v, want %+v", got, want)
	}

	eleven := `{"Entries":[` + strings.Repeat(`{"Source":"s","DetailType":"d","Detail":"{}"},`, 10) + `{"Source":"s","DetailType":"d","Detail":"{}"}]}`
	large := `{"Entries":[{"Source":"s","DetailType":"d","Detail":"{\"x\":\"` + strings.Repeat("x", 256*1024) + `\"}"}]}`
	for _, c := range []struct{ target, body, errType string }{
		{"AWSEvents.PutEvents", `{"Entries":[]}`, "ValidationException"},
		{"AWSEvents.PutEvents", eleven, "ValidationException"},
		{"AWSEvents.PutEvents", large, "ValidationException"},
		{"AWSEvents.PutEvents", `{"Entries":`, "SerializationException"},
		{"AWSEvents.PutRule", `{}`, "UnknownOperationException"},
		{"", `{}`, "UnknownOperationException"},
	} {
		status, out := post(c.target, c.body)
		if status != 400 || out["__type"] != c.errType || out["message"] == "" {
			t.Errorf("%s %.60s: %d %v, want 400 %s with a message", c.target, c.body, status, out, c.errType)
		}
	}
	if calls := s.Calls(); calls["PutEvents"] != 5 || calls["PutRule"] != 1 {
		t.Errorf("calls %v, want 5 PutEvents and 1 PutRule", calls)
	}
	if len(s.Events()) != 1 {
		t.Errorf("%d events after refused requests, want still 1", len(s.Events()))
	}
}

// TestSDK: the Go SDK's client puts events, reads an entry's refusal in
// its answer, and a request's failure as its error.
func TestSDK(t *testing.T) {
	s := eventstest.Start(t)
	client := s.Client()
	at := time.Date(2026, 3, 4, 5, 6, 7, 890e6, time.UTC)
	entry := func(detail string) types.PutEventsRequestEntry {
		return types.PutEventsRequestEntry{EventBusName: aws.String("deck"), Source: aws.String("sshdeck"),
			DetailType: aws.String("Audit record"), Detail: aws.String(detail), Time: aws.Time(at)}
	}
	s.Refuse(func(e eventstest.Event) *eventstest.Refusal {
		if strings.Contains(e.Detail, "refuse") {
			return &eventstest.Refusal{Code: "ThrottlingException", Message: "Rate exceeded"}
		}
		return nil
	})
	out, err := client.PutEvents(t.Context(), &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{
		entry(`{"n":1}`), entry(`{"n":2,"refuse":true}`), entry(`{"n":3}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if out.FailedEntryCount != 1 || len(out.Entries) != 3 || out.Entries[0].EventId == nil || out.Entries[2].EventId == nil ||
		aws.ToString(out.Entries[1].ErrorCode) != "ThrottlingException" || out.Entries[1].EventId != nil {
		t.Fatalf("answer %+v", out)
	}
	events := s.Events()
	if len(events) != 2 || events[0].Detail != `{"n":1}` || events[1].Detail != `{"n":3}` || !events[0].Time.Equal(at) || events[0].Bus != "deck" {
		t.Fatalf("events %+v", events)
	}

	s.Reset()
	s.FailRequests("AccessDeniedException")
	_, err = client.PutEvents(t.Context(), &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{entry(`{}`)}})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDeniedException" {
		t.Fatalf("a failed request: %v, want AccessDeniedException", err)
	}
	if _, err := client.PutEvents(t.Context(), &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{entry(`{}`)}}); err != nil {
		t.Fatalf("the request after it: %v", err)
	}
	if calls := s.Calls(); calls["PutEvents"] != 2 || len(s.Events()) != 1 {
		t.Errorf("after Reset: calls %v, %d events; want 2 PutEvents and 1 event", calls, len(s.Events()))
	}
}
