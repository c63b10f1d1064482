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
	return s.nextHostIDs(ctx, owner, 1)
}

// NextHostIDs adds n to the owner's counter, as NextHostID adds one, and
// returns the first of the n ids: one UpdateItem.
func (s *Store) NextHostIDs(ctx context.Context, owner string, n int) (int64, error) {
	if owner == "" {
		return 0, errors.New("dynamo: next host ids: owner is required")
	}
	if n < 1 || n > sshdeck.MaxHostBatch {
		return 0, fmt.Errorf("dynamo: next host ids: %d ids, not 1 to %d", n, sshdeck.MaxHostBatch)
	}
	last, err := s.nextHostIDs(ctx, owner, n)
	if err != nil {
		return 0, err
	}
	return last - int64(n) + 1, nil
}

// nextHostIDs adds n to the counter and returns its new value, the last id.
func (s *Store) nextHostIDs(ctx context.Context, owner string, n int) (int64, error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       hostSeqKey(owner).attrs(),
		UpdateExpression:          aws.String("SET #sv = :sv ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": attrSeq, "#sv": attrSchemaVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(int64(n)), ":sv": num(schemaVersion)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	}
	// The counter is also in the transactions of CreateHost and DeleteHost,
	// which make a concurrent update fail (TransactionConflictException,
	// not retried by the SDK): it is retried here.
	out, err := s.client.UpdateItem(ctx, in)
	for wait, attempt := counterBackoff, 1; conflicted(err) && attempt < counterAttempts; attempt++ {
		if err := sleep(ctx, &wait); err != nil {
			return 0, err
		}
		out, err = s.client.UpdateItem(ctx, in)
	}
	if err != nil {
		return 0, wrap("next host id", err)
	}
	last, err := decodeSeq(out.Attributes)
	return last, wrap("next host id", err)
}

// decodeSeq reads the counter's n: 0 for no counter (a nil item).
func decodeSeq(item map[string]types.AttributeValue) (int64, error) {
	f, d := decode(item)
	n := f.int64(attrSeq)
	return n, d.done("host-id counter")
}

// CreateHost stores h only if its id is free (Conflict when it exists) and
// the owner has fewer than max hosts (LimitExceeded): one TransactWriteItems
// of the host's put, conditioned attribute_not_exists(pk), and of the
// update of the owner's counter (SEQ#HOST), which counts the owner's hosts
// (addCounted: ADD count 1 conditioned count < :max), and the put of the
// host's count of shortcuts (0).
//
// Ids are never reused, so the counter's n must stay at or past every
// stored id, also one that did not come from NextHostID. n only grows, so
// the first transaction requires n >= :id (the usual case: the id came
// from NextHostID) and changes nothing else; when it fails, the counter
// read tells, and an id past n is put with SET n = :id conditioned on n
// being below it.
func (s *Store) CreateHost(ctx context.Context, h *sshdeck.Host, max int) error {
	if err := h.CheckNew(); err != nil {
		return fmt.Errorf("dynamo: create host: %w", err)
	}
	if max < 1 {
		return fmt.Errorf("dynamo: create host: limit %d is not positive", max)
	}
	item := hostKey(h.Owner, h.ID).with(hostAttrs(h))
	raise := func(st *counterState, e *expr) error {
		e.names["#n"] = attrSeq
		e.values[":id"] = num(h.ID)
		switch {
		case st == nil && h.ID == 1:
			// The first host of a new owner: NextHostID made the counter,
			// without a count; no other host can exist (none has an id
			// past n = 1), so ADD makes the count 1 without one.
			e.cond = append(e.cond, "#n >= :id")
			e.alt = "attribute_not_exists(#c) AND #n = :id"
		case st == nil:
			e.cond = append(e.cond, "#n >= :id")
		case st.seq < h.ID:
			e.set = append(e.set, "#n = :id")
			e.cond = append(e.cond, "attribute_not_exists(#n) OR #n < :id")
		default:
			delete(e.names, "#n") // n only grows: nothing to check
			delete(e.values, ":id")
		}
		return nil
	}
	// The host's count of shortcuts starts with it, at 0, so that its
	// first shortcut need not count them (a host of before the counts has
	// none, and its first AddShortcut counts once).
	shortcuts := shortcutCounter(h.Owner, h.ID).key.with(newAttrs(1))
	shortcuts[attrCount] = num(0)
	failed, err := s.addCounted(ctx, hostCounter(h.Owner), max, []types.TransactWriteItem{
		{Put: s.putNew(item)},
		{Put: &types.Put{TableName: &s.table, Item: shortcuts}},
	}, raise)
	switch {
	case failed == 0:
		return hostExists(h.ID)
	case isAtLimit(err):
		return sshdeck.HostsExceeded(max)
	}
	return wrap("create host", err)
}

// CreateHosts stores hosts, all of one owner, all or none: one
// TransactWriteItems of every host's put, each conditioned
// attribute_not_exists(pk) (Conflict naming the first that exists), and of
// the update of the owner's counter, ADD count len(hosts) conditioned on
// room for them all (LimitExceeded) and raising n to the batch's highest
// id, as CreateHost does for one. So a batch is at most MaxHostBatch
// hosts: 98 puts, the counter and the request's audit record, a
// transaction's 100 items. Unlike
// CreateHost it puts no count of shortcuts for each host, which would
// halve the batch: a host without one counts its shortcuts once, at its
// first AddShortcut, as a host of before the counts does. A transaction
// holds at most 4 MB; an import's hosts come from one request body of at
// most 1 MiB (their sealed credentials a few dozen bytes more each), far
// below it.
func (s *Store) CreateHosts(ctx context.Context, hosts []*sshdeck.Host, max int) error {
	if err := sshdeck.CheckBatch(hosts); err != nil {
		return fmt.Errorf("dynamo: create hosts: %w", err)
	}
	if max < 1 {
		return fmt.Errorf("dynamo: create hosts: limit %d is not positive", max)
	}
	if len(hosts) > max {
		return sshdeck.HostsExceeded(max) // whatever the owner has
	}
	owner := hosts[0].Owner
	top, contiguous := int64(0), true
	writes := make([]types.TransactWriteItem, len(hosts))
	for i, h := range hosts {
		top = maxID(top, h.ID)
		writes[i] = types.TransactWriteItem{Put: s.putNew(hostKey(owner, h.ID).with(hostAttrs(h)))}
	}
	// Distinct positive ids whose highest is their number are 1..top.
	contiguous = top == int64(len(hosts))
	raise := func(st *counterState, e *expr) error {
		e.names["#n"] = attrSeq
		e.values[":id"] = num(top)
		switch {
		case st == nil && contiguous:
			// A new owner's first hosts (see CreateHost): n = top and no
			// count means that every id handed out is in the batch.
			e.cond = append(e.cond, "#n >= :id")
			e.alt = "attribute_not_exists(#c) AND #n = :id"
		case st == nil:
			e.cond = append(e.cond, "#n >= :id")
		case st.seq < top:
			e.set = append(e.set, "#n = :id")
			e.cond = append(e.cond, "attribute_not_exists(#n) OR #n < :id")
		default:
			delete(e.names, "#n")
			delete(e.values, ":id")
		}
		return nil
	}
	failed, err := s.addCountedN(ctx, hostCounter(owner), max, int64(len(hosts)), writes, raise)
	switch {
	case failed >= 0:
		return hostExists(hosts[failed].ID)
	case isAtLimit(err):
		return sshdeck.HostsExceeded(max)
	}
	return wrap("create hosts", err)
}

func maxID(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
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
// one TransactWriteItems (the delete and the owner's count of hosts), plus
// a GetItem when a versioned delete is refused; then its file-manager
// entries: a Query, plus a BatchWriteItem per 25 entries.
func (s *Store) DeleteHost(ctx context.Context, owner string, id int64, version int64) error {
	del := &types.Delete{
		TableName:                &s.table,
		Key:                      hostKey(owner, id).attrs(),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}
	if version > 0 {
		del.ConditionExpression = aws.String("#version = :version")
		del.ExpressionAttributeNames = map[string]string{"#version": attrVersion}
		del.ExpressionAttributeValues = map[string]types.AttributeValue{":version": num(version)}
	}
	// The host goes first, its entries after it. Every write of an entry is
	// a transaction with a check that the host exists (hostCheck), so once
	// the delete has succeeded no entry can appear, and the consistent
	// query after it sees every entry there is: none is left behind, however
	// many there are (a transaction would hold 99 besides the host, fewer
	// than a host may have). Should the process stop in between, the
	// entries left belong to a host id that is never reused and that every
	// file route checks first: they are unreachable, and cost their bytes.
	//
	// The delete is one transaction with the decrement of the owner's count
	// of hosts (removeCounted).
	failed, err := s.removeCounted(ctx, hostCounter(owner), types.TransactWriteItem{Delete: del})
	switch {
	case failed < 0 && err == nil:
		return wrap("delete host", s.deleteFiles(ctx, owner, id))
	case err != nil:
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
