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
)

// Attributes of a window of failed logins (loginFailureKey): the count, and
// the window's end as fixed-width UTC (sortableTime), so that the
// conditions of AddFailure compare it with now as text.
const (
	attrFailures = "n"
	attrUntil    = "until"
)

// checkFailureKey refuses a key the caller did not bound: the partition
// key holds 2048 bytes, and sshdeck.MaxFailureKey is far more than a
// hashed name or an address needs.
func checkFailureKey(op, k string) error {
	if k == "" || len(k) > sshdeck.MaxFailureKey {
		return fmt.Errorf("dynamo: %s: a key of 1 to %d bytes is required, not %d", op, sshdeck.MaxFailureKey, len(k))
	}
	return nil
}

// Failures returns the count of the key's window in force at now: one
// consistent GetItem (a login must see the failure of a moment ago). A
// window that ended at now is none, as TTL purges it only days late.
func (s *Store) Failures(ctx context.Context, k string, now time.Time) (int, time.Time, error) {
	if err := checkFailureKey("login failures", k); err != nil {
		return 0, time.Time{}, err
	}
	item, err := s.getItem(ctx, loginFailureKey(k))
	if err != nil || item == nil {
		return 0, time.Time{}, wrap("login failures", err)
	}
	n, until, err := decodeFailures(item)
	if err != nil {
		return 0, time.Time{}, wrap("login failures", err)
	}
	if !now.Before(until) {
		return 0, time.Time{}, nil
	}
	return n, until, nil
}

// AddFailure adds one to the key's window in force at now, or opens one
// ending at now+window. Every add is first one UpdateItem, `ADD n 1` (and
// until, ttl if not set yet, sv) conditioned on no window or one still in
// force (`attribute_not_exists(pk) OR until > :now`), ALL_NEW: DynamoDB
// applies the updates of one item one at a time, so no concurrent add is
// lost and each answers its own count. When the condition fails the stored
// window has ended: a PutItem of a new one at 1 replaces it, conditioned on
// it being still there and ended (or gone, purged since). When that fails
// too, a concurrent add opened the new window first, and the next
// UpdateItem adds to it: no wait is needed, as nothing holds the item (no
// transaction names it), and the attempts are bounded as the counters'
// (counterAttempts), past which the add is a Conflict.
func (s *Store) AddFailure(ctx context.Context, k string, now time.Time, window time.Duration) (int, time.Time, error) {
	if err := checkFailureKey("add login failure", k); err != nil {
		return 0, time.Time{}, err
	}
	if window <= 0 {
		return 0, time.Time{}, errors.New("dynamo: add login failure: a window is required")
	}
	until := now.Add(window)
	ttl, _ := expiryTTL(until)
	names := map[string]string{"#pk": attrPK, "#n": attrFailures, "#until": attrUntil, "#ttl": attrTTL, "#sv": attrSchemaVersion}
	values := map[string]types.AttributeValue{
		":one": num(1), ":until": str(sortableTime(until)), ":ttl": ttl, ":sv": num(schemaVersion),
		":now": str(sortableTime(now)),
	}
	for attempt := 1; ; attempt++ {
		out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.table,
			Key:                       loginFailureKey(k).attrs(),
			UpdateExpression:          aws.String("ADD #n :one SET #until = if_not_exists(#until, :until), #ttl = if_not_exists(#ttl, :ttl), #sv = :sv"),
			ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #until > :now"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
			ReturnValues:              types.ReturnValueAllNew,
		})
		if err == nil {
			n, until, err := decodeFailures(out.Attributes)
			return n, until, wrap("add login failure", err)
		}
		if !conditionFailed(err) {
			return 0, time.Time{}, wrap("add login failure", err)
		}
		// The window ended: open the next.
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 &s.table,
			Item:                      loginFailureKey(k).with(failureAttrs(1, until)),
			ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #until <= :now"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#until": attrUntil},
			ExpressionAttributeValues: map[string]types.AttributeValue{":now": values[":now"]},
		})
		if err == nil {
			return 1, until.UTC(), nil
		}
		if !conditionFailed(err) {
			return 0, time.Time{}, wrap("add login failure", err)
		}
		if attempt == counterAttempts {
			return 0, time.Time{}, busy()
		}
	}
}

// failureAttrs is a window of failed logins as stored: n (N), until (S,
// fixed-width) and ttl (N, the epoch second of until, for DynamoDB's TTL to
// purge ended windows).
func failureAttrs(n int64, until time.Time) map[string]types.AttributeValue {
	a := newAttrs(3)
	a[attrFailures] = num(n)
	a[attrUntil] = str(sortableTime(until))
	a[attrTTL], _ = expiryTTL(until)
	return a
}

// decodeFailures reads the item of failureAttrs (written since version 2
// only), or of AddFailure's update.
func decodeFailures(item map[string]types.AttributeValue) (int, time.Time, error) {
	f, d := decode(item)
	n, until := f.int(attrFailures), f.time(attrUntil)
	return n, until, d.done("window of login failures")
}
