package auditevents

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// PutEvents' limits on one request: 10 entries, and less than 256 KB of
// them in all.
const (
	maxEntries      = 10
	maxRequestBytes = 256 * 1024
)

// entry is the PutEvents entry of one stream record, and what a failure of
// it is reported and logged by.
type entry struct {
	entry    types.PutEventsRequestEntry
	size     int
	sequence string // the stream record's SequenceNumber
	recordID string
}

// auditInsert reports whether r is the insert of an audit record: the
// stream's INSERT of an item whose partition key is an audit month's. The
// key, not the new image, says so: a record of an audit item without its
// image (a stream of keys only) is then an error, not skipped.
func auditInsert(r events.DynamoDBEventRecord) bool {
	if r.EventName != string(events.DynamoDBOperationTypeInsert) {
		return false
	}
	pk, ok := r.Change.Keys[schema.PartitionKey]
	return ok && pk.DataType() == events.DataTypeString && dynamo.AuditPartition(pk.String())
}

// entryOf is the PutEvents entry of an audit insert: its record, decoded
// as the store decodes it, as the event's detail (audit.Record's JSON),
// the record's time as the event's.
func (p *Publisher) entryOf(r events.DynamoDBEventRecord) (entry, error) {
	if len(r.Change.NewImage) == 0 {
		return entry{}, errors.New("the record has no new image: the table's stream must carry new images (NEW_IMAGE)")
	}
	item, err := Item(r.Change.NewImage)
	if err != nil {
		return entry{}, fmt.Errorf("its new image: %w", err)
	}
	rec, err := dynamo.DecodeAuditItem(item)
	if err != nil {
		return entry{}, err
	}
	// Consumers dedupe by the record's id, and order by its time.
	if rec.ID == "" || rec.Time.IsZero() {
		return entry{}, errors.New("the audit record has no id or no time")
	}
	detail, err := audit.Detail(audit.RecordOf(rec))
	if err != nil {
		return entry{}, fmt.Errorf("the audit record %s as JSON: %w", rec.ID, err)
	}
	e := entry{
		entry: types.PutEventsRequestEntry{
			EventBusName: aws.String(p.Bus),
			Source:       aws.String(audit.EventSource),
			DetailType:   aws.String(audit.EventDetailType),
			Detail:       aws.String(detail),
			Time:         aws.Time(rec.Time),
		},
		sequence: r.Change.SequenceNumber,
		recordID: rec.ID,
	}
	if e.size = entrySize(e.entry); e.size >= maxRequestBytes {
		return entry{}, fmt.Errorf("the event of audit record %s is %d bytes, more than PutEvents takes (%d)", rec.ID, e.size, maxRequestBytes)
	}
	return e, nil
}

// entrySize is what an entry counts toward a request's limit, from above:
// EventBridge counts an entry's Time as 14 bytes and its Source,
// DetailType, Detail and Resources as their UTF-8 bytes, and its API
// reference adds "any necessary characters and keys of the JSON
// representation". The entry's JSON, as the SDK sends it (the time as
// epoch seconds with milliseconds), holds all of those and the bus's name
// besides, so a request within the limit by this measure is within it by
// EventBridge's.
func entrySize(e types.PutEventsRequestEntry) int {
	// Strings and a number: Marshal cannot fail.
	b, _ := json.Marshal(struct {
		Source, DetailType, Detail, EventBusName *string
		Resources                                []string `json:",omitempty"`
		Time                                     float64
	}{e.Source, e.DetailType, e.Detail, e.EventBusName, e.Resources, 1767225600.123})
	return len(b)
}

// requests cuts entries, in order, into PutEvents requests within its
// limits: each as long as both allow.
func requests(entries []entry) [][]entry {
	var out [][]entry
	start, size := 0, 0
	for i, e := range entries {
		if i-start == maxEntries || size+e.size >= maxRequestBytes {
			out = append(out, entries[start:i])
			start, size = i, 0
		}
		size += e.size
	}
	if start < len(entries) {
		out = append(out, entries[start:])
	}
	return out
}
