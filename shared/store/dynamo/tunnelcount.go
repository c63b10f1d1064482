package dynamo

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The owner's count of tunnels: the item OWNER#<owner> / COUNT#TUNNELS,
// whose n (N) is how many tunnels the owner has. Every create of a tunnel
// is one transaction with the raise of n, conditioned n < limit, and every
// delete one with its lowering: no two creates can pass the limit, however
// concurrent, because DynamoDB applies the transactions one at a time to
// the counter. An owner whose tunnels were made before the counter existed
// has none: the first create counts them (a consistent Query) and puts the
// counter with the new tunnel, conditioned on there being no counter.

// tunnelCountKey is the owner's count of tunnels, in the owner's partition.
func tunnelCountKey(owner string) key { return key{ownerPK(owner), "COUNT#TUNNELS"} }

// createAttempts bounds the transactions of one create that lose to
// concurrent ones (TransactionConflict) or to a counter that moved.
const createAttempts = 8

// CreateTunnel stores t (generation 1) and raises the owner's count in one
// TransactWriteItems: a Put of the tunnel conditioned
// attribute_not_exists(pk) and an Update of the counter (SET n = n + 1, sv,
// conditioned attribute_exists(n), and n < limit with a limit). The tunnel
// comes first: an existing name is Conflict whatever the count says. When the counter's
// condition fails, a consistent GetItem of it says why: absent (the first
// create since counters, see initTunnelCount), at the limit
// (LimitExceeded, after recountTunnels), or moved meanwhile (again).
func (s *Store) CreateTunnel(ctx context.Context, t *sshdeck.Tunnel, limit int) error {
	if t.Owner == "" || t.Name == "" {
		return errors.New("dynamo: create tunnel: owner and name are required")
	}
	if t.Generation != 1 {
		return errors.New("dynamo: create tunnel: generation must be 1")
	}
	put := s.putNew(tunnelKey(t.Owner, t.Name).with(tunnelAttrs(t)))
	for attempt := range createAttempts {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return wrap("create tunnel", err)
			}
		}
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: []types.TransactWriteItem{{Put: put}, {Update: s.raiseTunnelCount(t.Owner, limit)}},
		})
		if err == nil {
			return nil
		}
		codes := cancelCodes(err, 2)
		switch {
		case codes == nil:
			return wrap("create tunnel", err)
		case codes[0] == "ConditionalCheckFailed":
			return tunnelConflict(t.Name, 1)
		case codes[1] != "ConditionalCheckFailed":
			continue // TransactionConflict: a concurrent write of the counter
		}
		n, found, err := s.tunnelCount(ctx, t.Owner)
		switch {
		case err != nil:
			return wrap("create tunnel", err)
		case !found:
			done, err := s.initTunnelCount(ctx, t, put, limit)
			if err != nil || done {
				return err
			}
		case limit > 0 && n >= int64(limit):
			fixed, err := s.recountTunnels(ctx, t.Owner, n)
			if err != nil {
				return wrap("create tunnel", err)
			}
			if !fixed {
				return sshdeck.TunnelLimit(limit)
			}
		}
	}
	return sshdeck.Errorf(sshdeck.Conflict, "too many tunnels of this user are being created at once; try again")
}

// raiseTunnelCount is the counter's Update of a create.
func (s *Store) raiseTunnelCount(owner string, limit int) *types.Update {
	u := &types.Update{
		TableName:                 &s.table,
		Key:                       tunnelCountKey(owner).attrs(),
		UpdateExpression:          aws.String("SET #n = #n + :one, #sv = :sv"),
		ConditionExpression:       aws.String("attribute_exists(#n)"),
		ExpressionAttributeNames:  map[string]string{"#n": attrSeq, "#sv": attrSchemaVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":sv": num(schemaVersion)},
	}
	if limit > 0 {
		u.ConditionExpression = aws.String("attribute_exists(#n) AND #n < :limit")
		u.ExpressionAttributeValues[":limit"] = num(int64(limit))
	}
	return u
}

// tunnelCount reads the owner's counter: one consistent GetItem.
func (s *Store) tunnelCount(ctx context.Context, owner string) (n int64, found bool, err error) {
	item, err := s.getItem(ctx, tunnelCountKey(owner))
	if err != nil || item == nil {
		return 0, false, err
	}
	n, err = decodeSeq(item)
	return n, true, err
}

// countTunnels counts the owner's tunnels: a consistent Query, Select
// COUNT, of the owner's prefix of TUNNELS.
func (s *Store) countTunnels(ctx context.Context, owner string) (int64, error) {
	n, err := s.count(ctx, prefixQuery(tunnelsPK, tunnelSKPrefix(owner)))
	return int64(n), err
}

// initTunnelCount makes the counter of an owner who has none, with the
// create: the owner's tunnels are counted, and one TransactWriteItems puts
// the tunnel and the counter at that count plus one (conditioned
// attribute_not_exists(pk)). done is false when a concurrent create made the counter
// first: the caller tries again with it.
//
// A tunnel deleted between the count and the transaction leaves the
// counter one above the truth; recountTunnels mends that when it matters,
// at the limit.
func (s *Store) initTunnelCount(ctx context.Context, t *sshdeck.Tunnel, put *types.Put, limit int) (done bool, err error) {
	n, err := s.countTunnels(ctx, t.Owner)
	if err != nil {
		return false, wrap("create tunnel", err)
	}
	if limit > 0 && n >= int64(limit) {
		return false, sshdeck.TunnelLimit(limit)
	}
	counter := newAttrs(1)
	counter[attrSeq] = num(n + 1)
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{{Put: put}, {Put: s.putNew(tunnelCountKey(t.Owner).with(counter))}},
	})
	if err == nil {
		return true, nil
	}
	codes := cancelCodes(err, 2)
	switch {
	case codes == nil:
		return false, wrap("create tunnel", err)
	case codes[0] == "ConditionalCheckFailed":
		return false, tunnelConflict(t.Name, 1)
	}
	return false, nil
}

// recountTunnels checks a counter found at n, at the limit, against a
// count of the tunnels, and sets it to that count if it is lower and the
// counter is still at n (an UpdateItem conditioned n = :n: any create or
// delete since moved it, and then the count may be stale). fixed says the
// counter went down: the create may try again.
func (s *Store) recountTunnels(ctx context.Context, owner string, n int64) (fixed bool, err error) {
	c, err := s.countTunnels(ctx, owner)
	if err != nil || c >= n {
		return false, err
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       tunnelCountKey(owner).attrs(),
		UpdateExpression:          aws.String("SET #n = :c"),
		ConditionExpression:       aws.String("#n = :n"),
		ExpressionAttributeNames:  map[string]string{"#n": attrSeq},
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": num(c), ":n": num(n)},
	})
	if conditionFailed(err) {
		return true, nil // moved meanwhile: look again
	}
	return err == nil, err
}

// DeleteTunnel deletes the tunnel (its lease and sealed credentials are
// attributes of its item) and lowers the owner's count in one
// TransactWriteItems: a Delete conditioned attribute_exists(pk) (and
// generation = :gen with a generation) and an Update of the counter (SET
// n = n - 1, conditioned attribute_exists(n) AND n > 0). A failed tunnel
// condition is NotFound or Conflict (ReturnValuesOnConditionCheckFailure
// tells them apart); a failed counter condition alone, an owner without a
// counter, deletes the tunnel alone: the next create counts.
func (s *Store) DeleteTunnel(ctx context.Context, owner, name string, gen int64) error {
	del := &types.Delete{
		TableName:                           &s.table,
		Key:                                 tunnelKey(owner, name).attrs(),
		ConditionExpression:                 aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": attrPK},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if gen != 0 {
		del.ConditionExpression = aws.String("attribute_exists(#pk) AND #generation = :gen")
		del.ExpressionAttributeNames["#generation"] = attrGeneration
		del.ExpressionAttributeValues = map[string]types.AttributeValue{":gen": num(gen)}
	}
	lower := &types.Update{
		TableName:                 &s.table,
		Key:                       tunnelCountKey(owner).attrs(),
		UpdateExpression:          aws.String("SET #n = #n - :one"),
		ConditionExpression:       aws.String("attribute_exists(#n) AND #n > :zero"),
		ExpressionAttributeNames:  map[string]string{"#n": attrSeq},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":zero": num(0)},
	}
	for attempt := range createAttempts {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return wrap("delete tunnel", err)
			}
		}
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: []types.TransactWriteItem{{Delete: del}, {Update: lower}},
		})
		if err == nil {
			return nil
		}
		codes := cancelCodes(err, 2)
		switch {
		case codes == nil:
			return wrap("delete tunnel", err)
		case codes[0] == "ConditionalCheckFailed":
			return s.deleteRefused(ctx, owner, name, gen)
		case codes[1] != "ConditionalCheckFailed":
			continue // TransactionConflict
		}
		// No counter (or one at 0, which a tunnel left means is wrong):
		// the tunnel alone.
		in := &dynamodb.DeleteItemInput{
			TableName: &s.table, Key: del.Key, ConditionExpression: del.ConditionExpression,
			ExpressionAttributeNames: del.ExpressionAttributeNames, ExpressionAttributeValues: del.ExpressionAttributeValues,
		}
		_, err = s.client.DeleteItem(ctx, in)
		if conditionFailed(err) {
			return s.deleteRefused(ctx, owner, name, gen)
		}
		return wrap("delete tunnel", err)
	}
	return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q is being changed; try again", name)
}

// deleteRefused tells NotFound from Conflict after a refused delete: one
// consistent GetItem (minidyn does not return the item of a failed
// transaction's condition).
func (s *Store) deleteRefused(ctx context.Context, owner, name string, gen int64) error {
	found, err := s.exists(ctx, tunnelKey(owner, name))
	switch {
	case err != nil:
		return wrap("delete tunnel", err)
	case !found:
		return tunnelNotFound(name)
	}
	return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q is not at generation %d", name, gen)
}

// StoppedTunnels returns every owner's tunnels that are neither to run nor
// autoStart, last written before `before`: a consistent Query of the
// TUNNELS partition (every page) filtered on run and autoStart, which reads
// (and pays for) every tunnel, as RunnableTunnels does; the time is
// compared here (stored times are not in byte order). The replicas call it
// once an hour.
func (s *Store) StoppedTunnels(ctx context.Context, before time.Time) ([]*sshdeck.Tunnel, error) {
	tunnels, err := s.queryTunnels(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:   aws.String("#pk = :pk"),
		FilterExpression:         aws.String("#run = :false AND #spec.#autoStart = :false"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#run": attrRun, "#spec": "spec", "#autoStart": "autoStart"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(tunnelsPK), ":false": &types.AttributeValueMemberBOOL{Value: false},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, wrap("stopped tunnels", err)
	}
	out := tunnels[:0]
	for _, t := range tunnels {
		if t.UpdatedAt.Before(before) {
			out = append(out, t)
		}
	}
	sortTunnels(out)
	return out, nil
}

// cancelCodes returns the reason code of each item of a cancelled
// transaction ("None", "ConditionalCheckFailed", "TransactionConflict",
// ...) of a transaction of n items, or nil when err is anything else.
func cancelCodes(err error, n int) []string {
	tce, ok := errors.AsType[*types.TransactionCanceledException](err)
	if !ok || len(tce.CancellationReasons) != n {
		return nil
	}
	codes := make([]string, len(tce.CancellationReasons))
	for i, r := range tce.CancellationReasons {
		codes[i] = aws.ToString(r.Code)
	}
	return codes
}

// backoff waits before the attempt-th try of a transaction that lost to
// another: jittered, from 10 ms doubling to 320 ms.
func backoff(ctx context.Context, attempt int) error {
	wait := 10 * time.Millisecond << min(attempt-1, 5)
	timer := time.NewTimer(wait/2 + rand.N(wait/2+1))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
