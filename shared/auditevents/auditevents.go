// Package auditevents puts each audit record the table gains on the
// deployment's EventBridge bus (API.md, "Audit and events"): the logic of
// functions/audit-events, the consumer of the table's DynamoDB stream in
// AWS. The store writes a record in the transaction of its change; the
// stream hands its insert to this function, which decodes it with the
// store's own decoder (dynamo.DecodeAuditItem) and sends the event of it
// (audit.Event's envelope: source "sshdeck", detail-type "Audit record",
// the record as the detail) with PutEvents.
//
// Delivery is at least once: a record whose event EventBridge refused is
// reported as the batch's first failure (ReportBatchItemFailures), and
// Lambda sends it again with every record after it, some of which may
// have gone already. Consumers tell events apart by detail.id.
//
// The function reads no table and opens no key: everything it sends is in
// the stream's records.
package auditevents

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// Publisher puts the audit records of a stream's batches on a bus.
type Publisher struct {
	Events *eventbridge.Client
	// Bus is the bus's name or ARN (SSHDECK_EVENT_BUS).
	Bus string
	// Log gets one line per batch, and one per record that failed (by
	// its sequence number and record id; records hold no credential, and
	// the line does not quote them anyway). nil discards.
	Log *slog.Logger
}

// Handle is the Lambda handler of a batch of the table's stream. It sends
// the events of the audit records the batch inserts, in the stream's
// order, and answers the sequence number of the first record whose event
// was not sent, if any: Lambda then checkpoints before it and sends it
// again with every record after it (the event source mapping's
// ReportBatchItemFailures). Records that are no audit insert are skipped
// (the mapping's filter drops them before they come here).
//
// It never returns an error: a batch that failed as a whole is reported
// as its first audit record, so that retries count toward the mapping's
// limit and the batch reaches its on-failure queue in the end.
func (p *Publisher) Handle(ctx context.Context, batch events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var pending []entry
	// undecodable is the first audit insert that cannot become an event:
	// the batch fails from it once the entries before it are sent.
	undecodable := ""
	skipped := 0
	for _, r := range batch.Records {
		if !auditInsert(r) {
			skipped++
			continue
		}
		e, err := p.entryOf(r)
		if err != nil {
			log.Error("audit record not sent: it does not make an event", "sequence_number", r.Change.SequenceNumber,
				"event_id", r.EventID, "error", err.Error())
			undecodable = r.Change.SequenceNumber
			break
		}
		pending = append(pending, e)
	}

	sent, failed := 0, undecodable
	for _, request := range requests(pending) {
		n, failedAt := p.put(ctx, log, request)
		sent += n
		if failedAt != "" {
			failed = failedAt
			break
		}
	}
	log.Info("audit-events", "records", len(batch.Records), "skipped", skipped, "sent", sent, "failed_from", failed)
	if failed == "" {
		return events.DynamoDBEventResponse{}, nil
	}
	return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: failed}}}, nil
}

// put sends one request's entries and returns how many EventBridge took
// before the first it refused, and that one's sequence number ("" when it
// took them all). A request that failed as a whole fails from its first
// entry.
func (p *Publisher) put(ctx context.Context, log *slog.Logger, request []entry) (int, string) {
	in := &eventbridge.PutEventsInput{Entries: make([]types.PutEventsRequestEntry, len(request))}
	for i, e := range request {
		in.Entries[i] = e.entry
	}
	out, err := p.Events.PutEvents(ctx, in)
	if err != nil {
		log.Error("audit events not sent", "sequence_number", request[0].sequence, "record_id", request[0].recordID,
			"entries", len(request), "error", err.Error())
		return 0, request[0].sequence
	}
	// EventBridge answers each entry in the request's order: an event id,
	// or an error code.
	if len(out.Entries) != len(request) {
		log.Error("audit events not sent: PutEvents answered another number of entries", "sequence_number", request[0].sequence,
			"entries", len(request), "answered", len(out.Entries))
		return 0, request[0].sequence
	}
	for i, res := range out.Entries {
		if code := value(res.ErrorCode); code != "" || res.EventId == nil {
			log.Error("audit event refused", "sequence_number", request[i].sequence, "record_id", request[i].recordID,
				"error_code", code, "error_message", value(res.ErrorMessage))
			return i, request[i].sequence
		}
	}
	if out.FailedEntryCount > 0 {
		log.Error("audit events not sent: PutEvents counted failed entries it did not name", "sequence_number", request[0].sequence,
			"failed_entries", out.FailedEntryCount)
		return 0, request[0].sequence
	}
	return len(request), ""
}

func value(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
