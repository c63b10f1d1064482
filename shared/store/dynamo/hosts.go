package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// attrSeq is the attribute of the owner's host-id counter, its one item of
// kind SEQ#HOST: n (N), the last id handed out (none before the first).
const attrSeq = "n"

// NextHostID adds one to the owner's counter (ADD creates it at 1) and
// returns the new value: one UpdateItem. The counter's layout is n alone in
// every schema version, so the update sets sv to the store's.
func (s *Store) NextHostID(ctx context.Context, owner string) (int64, error) {
	if owner == "" {
		return 0, errors.New("dynamo: next host id: owner is required")
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       hostSeqKey(owner).attrs(),
		UpdateExpression:          aws.String("SET #sv = :sv ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": attrSeq, "#sv": attrSchemaVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":sv": num(schemaVersion)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, wrap("next host id", err)
	}
	n, err := decodeSeq(out.Attributes)
	return n, wrap("next host id", err)
}

// decodeSeq reads the counter's n: 0 for no counter (a nil item).
func decodeSeq(item map[string]types.AttributeValue) (int64, error) {
	f, d := decode(item)
	n := f.int64(attrSeq)
	return n, d.done("host-id counter")
}

// CreateHost stores h only if its id is free: Conflict when it exists.
//
// Ids are never reused, so the owner's counter must stay at or past every
// stored id, also one that did not come from NextHostID. The counter only
// grows: once a consistent read shows it at or past h.ID, a conditional
// PutItem is enough. That is the usual case (the id came from NextHostID):
// two single-item calls, and no transaction on the counter to collide with
// a concurrent NextHostID (DynamoDB rejects a write to an item that a
// transaction in flight holds). An id past the counter is put in one
// transaction with the raise of the counter.
func (s *Store) CreateHost(ctx context.Context, h *sshdeck.Host) error {
	if err := h.CheckNew(); err != nil {
		return fmt.Errorf("dynamo: create host: %w", err)
	}
	item := hostKey(h.Owner, h.ID).with(hostAttrs(h))
	seq, err := s.getItem(ctx, hostSeqKey(h.Owner))
	if err != nil {
		return wrap("create host", err)
	}
	last, err := decodeSeq(seq)
	if err != nil {
		return wrap("create host", err)
	}
	if h.ID > last {
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: []types.TransactWriteItem{
				{Put: s.putNew(item)},
				{Update: &types.Update{
					TableName:                 &s.table,
					Key:                       hostSeqKey(h.Owner).attrs(),
					UpdateExpression:          aws.String("SET #n = :id, #sv = :sv"),
					ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :id"),
					ExpressionAttributeNames:  map[string]string{"#n": attrSeq, "#sv": attrSchemaVersion},
					ExpressionAttributeValues: map[string]types.AttributeValue{":id": num(h.ID), ":sv": num(schemaVersion)},
				}},
			},
		})
		switch failedItem(err) {
		case 0:
			return hostExists(h.ID)
		case 1:
			// NextHostID took the counter to h.ID since the read, and it
			// stays there: the plain put below is enough.
		default:
			return wrap("create host", err)
		}
	}
	exists, err := s.putIfAbsent(ctx, item)
	if exists {
		return hostExists(h.ID)
	}
	return wrap("create host", err)
}

// Host returns the owner's host: one consistent GetItem.
func (s *Store) Host(ctx context.Context, owner string, id int64) (*sshdeck.Host, error) {
	item, err := s.getItem(ctx, hostKey(owner, id))
	if err != nil {
		return nil, wrap("host", err)
	}
	if item == nil {
		return nil, hostNotFound(id)
	}
	h, err := decodeHost(item)
	return h, wrap("host", err)
}

// Hosts returns the owner's hosts with an id above after, ordered by id,
// at most limit of them (0: all): a consistent Query of the host sort keys
// of the owner's partition from after's next id, which leaves out the
// counter and any other kind of item there.
func (s *Store) Hosts(ctx context.Context, owner string, after int64, limit int) ([]*sshdeck.Host, error) {
	hosts, err := queryLimit(ctx, s, &dynamodb.QueryInput{
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :from AND :to"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":   str(ownerPK(owner)),
			":from": str(hostKey(owner, max(after, 0)+1).sk),
			":to":   str(hostKey(owner, math.MaxInt64).sk),
		},
		ConsistentRead: aws.Bool(true),
	}, limit, decodeHost)
	if err != nil {
		return nil, wrap("hosts", err)
	}
	return hosts, nil
}

// UpdateHost puts h over the stored host if the stored version is
// h.Version-1: one PutItem, plus a GetItem when it is refused. The put
// writes the whole item: a host of schema 1 is of the store's version after
// it.
func (s *Store) UpdateHost(ctx context.Context, h *sshdeck.Host) error {
	prev := h.Version - 1
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 &s.table,
		Item:                      hostKey(h.Owner, h.ID).with(hostAttrs(h)),
		ConditionExpression:       aws.String("#version = :prev"),
		ExpressionAttributeNames:  map[string]string{"#version": attrVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":prev": num(prev)},
	})
	if conditionFailed(err) {
		return s.refused(ctx, "update host", h.Owner, h.ID, prev)
	}
	return wrap("update host", err)
}

// DeleteHost removes the owner's host, at any version when version is 0:
// one DeleteItem, plus a GetItem when a versioned delete is refused; then
// its file-manager entries: a Query, plus a BatchWriteItem per 25 entries.
func (s *Store) DeleteHost(ctx context.Context, owner string, id int64, version int64) error {
	in := &dynamodb.DeleteItemInput{
		TableName:                &s.table,
		Key:                      hostKey(owner, id).attrs(),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}
	if version > 0 {
		in.ConditionExpression = aws.String("#version = :version")
		in.ExpressionAttributeNames = map[string]string{"#version": attrVersion}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":version": num(version)}
	}
	// The host goes first, its entries after it. Every write of an entry is
	// a transaction with a check that the host exists (hostCheck), so once
	// the delete has succeeded no entry can appear, and the consistent
	// query after it sees every entry there is: none is left behind, however
	// many there are (a transaction would hold 99 besides the host, fewer
	// than a host may have). Should the process stop in between, the
	// entries left belong to a host id that is never reused and that every
	// file route checks first: they are unreachable, and cost their bytes.
	_, err := s.client.DeleteItem(ctx, in)
	switch {
	case err == nil:
		return wrap("delete host", s.deleteFiles(ctx, owner, id))
	case !conditionFailed(err):
		return wrap("delete host", err)
	case version > 0:
		return s.refused(ctx, "delete host", owner, id, version)
	default:
		return hostNotFound(id)
	}
}

// refused tells why a write conditioned on the host's version failed: the
// host is absent (NotFound) or at another version (Conflict). A consistent
// read decides, on this failure path only: minidyn ignores
// ReturnValuesOnConditionCheckFailure on PutItem and DeleteItem, so the
// failed write itself cannot tell.
func (s *Store) refused(ctx context.Context, op, owner string, id, version int64) error {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                &s.table,
		Key:                      hostKey(owner, id).attrs(),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#pk"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	switch {
	case err != nil:
		return wrap(op, err)
	case out.Item == nil:
		return hostNotFound(id)
	default:
		return sshdeck.Errorf(sshdeck.Conflict, "host %d changed since version %d", id, version)
	}
}

func hostNotFound(id int64) error { return sshdeck.Errorf(sshdeck.NotFound, "host %d not found", id) }

func hostExists(id int64) error { return sshdeck.Errorf(sshdeck.Conflict, "host %d exists", id) }
