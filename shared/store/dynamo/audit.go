package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// Audit records are items of partitions by month, AUDIT#<yyyy-mm> of the
// record's UTC time, sorted by <fixed-width time>#<id>; gsi1 holds the
// same sort key under AUDITBY#<actor>, for one actor's records (a failed
// login of a name that is no user's has no actor, and no index entry). The
// item's ttl is the record's ExpiresAt. A month's partition takes every
// record of the month: about 500 audited writes a second before DynamoDB
// splits it, and a query of all records from a time reads the months from
// it on, one Query each.

const (
	auditPKPrefix      = schema.AuditPartitionPrefix
	auditActorPKPrefix = "AUDITBY#"
	auditMonth         = "2006-01"
	// auditLookback is where a query with no Since starts: beyond any
	// retention SSHDECK_AUDIT_DAYS allows.
	auditLookback = 5 * 366 * 24 * time.Hour
)

// AuditPartition reports whether pk is an audit record's partition: what
// the stream's consumer selects (functions/audit-events).
func AuditPartition(pk string) bool {
	return len(pk) > len(auditPKPrefix) && pk[:len(auditPKPrefix)] == auditPKPrefix
}

func auditSK(r *sshdeck.AuditRecord) string { return sortableTime(r.Time) + "#" + r.ID }

func auditKey(r *sshdeck.AuditRecord) key {
	return key{auditPKPrefix + r.Time.UTC().Format(auditMonth), auditSK(r)}
}

// auditItem is a record as stored: id time actor action target requestId
// sourceIp outcome (S), code? (S), ttl? (N).
func auditItem(r *sshdeck.AuditRecord) map[string]types.AttributeValue {
	a := newAttrs(12)
	a["id"] = str(r.ID)
	a["time"] = stamp(r.Time)
	a["actor"] = str(r.Actor)
	a["action"] = str(r.Action)
	a["target"] = str(r.Target)
	a["requestId"] = str(r.RequestID)
	a["sourceIp"] = str(r.SourceIP)
	a["outcome"] = str(string(r.Outcome))
	if r.Code != "" {
		a["code"] = str(string(r.Code))
	}
	if ttl, ok := expiryTTL(r.ExpiresAt); ok {
		a[attrTTL] = ttl
	}
	if r.Actor != "" {
		a[attrGSI1PK] = str(auditActorPKPrefix + r.Actor)
		a[attrGSI1SK] = str(auditSK(r))
	}
	return auditKey(r).with(a)
}

// DecodeAuditItem reads an audit record's item: the store's, and the
// stream consumer's (functions/audit-events), whose records' images are
// these items.
func DecodeAuditItem(item map[string]types.AttributeValue) (*sshdeck.AuditRecord, error) {
	f, d := decode(item)
	r := &sshdeck.AuditRecord{
		ID: f.str("id"), Time: f.time("time"), Actor: f.str("actor"), Action: f.str("action"),
		Target: f.str("target"), RequestID: f.str("requestId"), SourceIP: f.str("sourceIp"),
		Outcome: sshdeck.AuditOutcome(f.str("outcome")), Code: sshdeck.Code(f.str("code")),
	}
	if ttl := f.int64(attrTTL); ttl > 0 {
		r.ExpiresAt = time.Unix(ttl, 0).UTC()
	}
	return decoded(r, d, "audit record")
}

// PutAuditRecord writes a record alone (one PutItem).
func (s *Store) PutAuditRecord(ctx context.Context, r *sshdeck.AuditRecord) error {
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: auditItem(r)})
	return err
}

// AuditRecords answers q: one actor's from gsi1, everyone's from the
// month partitions, the month of the start and every one after it.
func (s *Store) AuditRecords(ctx context.Context, q sshdeck.AuditQuery) ([]*sshdeck.AuditRecord, error) {
	from, exclusive := sortableTime(q.Since), false
	start := q.Since
	if q.After != nil && !q.After.Time.Before(q.Since) {
		from, exclusive, start = auditSK(q.After), true, q.After.Time
	}
	op := ">="
	if exclusive {
		op = ">"
	}
	if q.Actor != "" {
		in := &dynamodb.QueryInput{
			IndexName:                aws.String(indexGSI1),
			KeyConditionExpression:   aws.String("#pk = :pk AND #sk " + op + " :from"),
			ExpressionAttributeNames: map[string]string{"#pk": attrGSI1PK, "#sk": attrGSI1SK},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": str(auditActorPKPrefix + q.Actor), ":from": str(from),
			},
		}
		return queryLimit(ctx, s, in, q.Limit, DecodeAuditItem)
	}
	now := time.Now().UTC()
	if start.IsZero() {
		start = now.Add(-auditLookback)
	}
	out := []*sshdeck.AuditRecord{}
	for month := firstOfMonth(start); !month.After(now); month = month.AddDate(0, 1, 0) {
		in := &dynamodb.QueryInput{
			KeyConditionExpression:   aws.String("#pk = :pk AND #sk " + op + " :from"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": str(auditPKPrefix + month.Format(auditMonth)), ":from": str(from),
			},
			ConsistentRead: aws.Bool(true),
		}
		limit := 0
		if q.Limit > 0 {
			limit = q.Limit - len(out)
		}
		page, err := queryLimit(ctx, s, in, limit, DecodeAuditItem)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if q.Limit > 0 && len(out) >= q.Limit {
			break
		}
	}
	return out, nil
}

func firstOfMonth(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// auditing is the store's API with the audit records of changes written
// with them: a write whose context is an audited request's commit point
// (sshdeck.AuditToWrite) goes as a TransactWriteItems of the write and a
// Put of the request's record, so that both commit or neither, whatever
// the store method that made it. Every other call passes through.
//
// A single write so made keeps its meaning: its condition, and a
// condition's failure as ConditionalCheckFailedException with the item
// when it asked for it. It may not ask for values back (no commit point
// does). A transaction that loses a race on an item, which the single
// write would have waited for, is sent again (up to auditAttempts).
type auditing struct {
	API
	table string
}

const auditAttempts = 4

func (a *auditing) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	note := sshdeck.AuditToWrite(ctx)
	if note == nil {
		return a.API.PutItem(ctx, in, optFns...)
	}
	return &dynamodb.PutItemOutput{}, a.single(ctx, note, in.ReturnValues, types.TransactWriteItem{Put: &types.Put{
		TableName: in.TableName, Item: in.Item, ConditionExpression: in.ConditionExpression,
		ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: in.ReturnValuesOnConditionCheckFailure,
	}}, optFns)
}

func (a *auditing) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	note := sshdeck.AuditToWrite(ctx)
	if note == nil {
		return a.API.UpdateItem(ctx, in, optFns...)
	}
	return &dynamodb.UpdateItemOutput{}, a.single(ctx, note, in.ReturnValues, types.TransactWriteItem{Update: &types.Update{
		TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression, ConditionExpression: in.ConditionExpression,
		ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: in.ReturnValuesOnConditionCheckFailure,
	}}, optFns)
}

func (a *auditing) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	note := sshdeck.AuditToWrite(ctx)
	if note == nil {
		return a.API.DeleteItem(ctx, in, optFns...)
	}
	return &dynamodb.DeleteItemOutput{}, a.single(ctx, note, in.ReturnValues, types.TransactWriteItem{Delete: &types.Delete{
		TableName: in.TableName, Key: in.Key, ConditionExpression: in.ConditionExpression,
		ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: in.ReturnValuesOnConditionCheckFailure,
	}}, optFns)
}

// TransactWriteItems adds the record's Put to a transaction that is a
// commit point, after its items, so that the caller's reading of a
// cancellation by item index holds.
func (a *auditing) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	note := sshdeck.AuditToWrite(ctx)
	if note == nil {
		return a.API.TransactWriteItems(ctx, in, optFns...)
	}
	if len(in.TransactItems) >= maxTransactItems {
		return nil, fmt.Errorf("dynamo: a transaction of %d items has no room for its audit record", len(in.TransactItems))
	}
	with := *in
	with.TransactItems = append(in.TransactItems[:len(in.TransactItems):len(in.TransactItems)], a.record(note))
	out, err := a.API.TransactWriteItems(ctx, &with, optFns...)
	if err == nil {
		note.MarkWritten()
	}
	return out, err
}

// maxTransactItems is DynamoDB's limit on the items of one transaction.
const maxTransactItems = 100

// single sends one write and the record as a transaction, and maps its
// cancellation back to what the write alone would have answered. A
// transaction returns no values: a write that asks for them
// (returnValues) is no commit point's, and a programming error.
func (a *auditing) single(ctx context.Context, note *sshdeck.AuditNote, returnValues types.ReturnValue, write types.TransactWriteItem, optFns []func(*dynamodb.Options)) error {
	if returnValues != "" && returnValues != types.ReturnValueNone {
		return errors.New("dynamo: an audited write cannot return values")
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{write, a.record(note)}}
	wait := counterBackoff
	for attempt := 1; ; attempt++ {
		_, err := a.API.TransactWriteItems(ctx, in, optFns...)
		if err == nil {
			note.MarkWritten()
			return nil
		}
		failed, conflict := cancellation(err)
		switch {
		case failed == 0:
			tce, _ := errors.AsType[*types.TransactionCanceledException](err)
			r := tce.CancellationReasons[0]
			return &types.ConditionalCheckFailedException{Message: r.Message, Item: r.Item}
		case conflict && attempt < auditAttempts:
			if err := sleep(ctx, &wait); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// record is the Put of the note's record; its key is new (its id is).
func (a *auditing) record(note *sshdeck.AuditNote) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                &a.table,
		Item:                     auditItem(&note.Record),
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}}
}
