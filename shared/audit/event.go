package audit

import (
	"encoding/json"
	"time"
)

// The events of audit records, the same in AWS (EventBridge, source
// "sshdeck") and locally (webhooks): an EventBridge event whose detail is
// the record. A consumer tells events apart by detail.id, the record's id:
// delivery is at least once.
const (
	EventSource     = "sshdeck"
	EventDetailType = "Audit record"
)

// Event is an audit record's event as a webhook receives it: the envelope
// EventBridge gives its targets, with the record's id as the event's.
type Event struct {
	Version    string    `json:"version"`
	ID         string    `json:"id"`
	DetailType string    `json:"detail-type"`
	Source     string    `json:"source"`
	Time       time.Time `json:"time"`
	Resources  []string  `json:"resources"`
	Detail     Record    `json:"detail"`
}

// EventOf is the event of r.
func EventOf(r Record) Event {
	return Event{Version: "0", ID: r.ID, DetailType: EventDetailType, Source: EventSource, Time: r.Time, Resources: []string{}, Detail: r}
}

// Detail is the JSON of r as an event's detail (EventBridge's PutEvents
// takes it as a string).
func Detail(r Record) (string, error) {
	b, err := json.Marshal(r)
	return string(b), err
}
