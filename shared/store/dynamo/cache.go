package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// PutCacheEntry puts the entry over the one at its key: one PutItem. The
// value is Binary, and ttl its KeepUntil, for DynamoDB's TTL to purge it.
func (s *Store) PutCacheEntry(ctx context.Context, e *sshdeck.CacheEntry) error {
	if len(e.Value) > sshdeck.MaxCacheValue {
		return sshdeck.Errorf(sshdeck.TooLarge, "cache value of %d bytes is over %d", len(e.Value), sshdeck.MaxCacheValue)
	}
	item := cacheKey(e.Key).with(cacheAttrs(e))
	if ttl, ok := expiryTTL(e.KeepUntil); ok {
		item[attrTTL] = ttl
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item})
	return wrap("put cache entry", err)
}

// CacheEntry returns the entry at key: one GetItem, the only eventually
// consistent read of the store's but Ping's, on purpose. A cache may be a
// moment stale (the entry before the last put is a valid entry too), and a
// strongly consistent read costs twice the read units, which for an item of
// up to 350 KB is 88 units rather than 44. An entry past its KeepUntil is
// NotFound, as TTL purges it only days late.
func (s *Store) CacheEntry(ctx context.Context, key string, now time.Time) (*sshdeck.CacheEntry, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: cacheKey(key).attrs()})
	if err != nil {
		return nil, wrap("cache entry", err)
	}
	var e *sshdeck.CacheEntry
	if out.Item != nil {
		if e, err = decodeCacheEntry(out.Item); err != nil {
			return nil, wrap("cache entry", err)
		}
	}
	if e == nil || !now.Before(e.KeepUntil) {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "no cache entry %q", key)
	}
	return e, nil
}

// attrBudget is the count of a budget item (CountBelow).
const attrBudget = "n"

// CountBelow adds one to the counter item at the key (its own partition,
// like a cache entry's) in one UpdateItem, conditioned on the count being
// below limit (or absent: ADD starts it at 0): DynamoDB applies concurrent
// updates of an item one at a time, so the count never passes limit. A
// refused increment is a failed condition, answered false. The item is
// key (S), n (N), ttl (N, keepUntil) and sv.
func (s *Store) CountBelow(ctx context.Context, key string, limit int, keepUntil time.Time) (bool, error) {
	values := map[string]types.AttributeValue{
		":one": num(1), ":limit": num(int64(limit)), ":key": str(key), ":sv": num(schemaVersion),
	}
	names := map[string]string{"#n": attrBudget, "#key": "key", "#sv": attrSchemaVersion}
	update := "ADD #n :one SET #key = :key, #sv = :sv"
	if ttl, ok := expiryTTL(keepUntil); ok {
		update += ", #ttl = :ttl"
		names["#ttl"], values[":ttl"] = attrTTL, ttl
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       cacheKey(key).attrs(),
		ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :limit"),
		UpdateExpression:          aws.String(update),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, wrap("count", err)
	}
	return true, nil
}

// cacheAttrs is a cache entry as stored (PutCacheEntry adds ttl): key (S),
// value (B, absent when empty), storedAt and keepUntil (S, stamps).
func cacheAttrs(e *sshdeck.CacheEntry) map[string]types.AttributeValue {
	a := newAttrs(5)
	a["key"] = str(e.Key)
	putBytes(a, "value", e.Value)
	putTime(a, "storedAt", e.StoredAt)
	putTime(a, "keepUntil", e.KeepUntil)
	return a
}

// decodeCacheEntry reads the item of cacheAttrs, of either schema version:
// 1 wrote an empty value as NULL, which fields reads as absent.
func decodeCacheEntry(item map[string]types.AttributeValue) (*sshdeck.CacheEntry, error) {
	f, d := decode(item)
	e := &sshdeck.CacheEntry{Key: f.str("key"), Value: f.bytes("value"), StoredAt: f.time("storedAt"), KeepUntil: f.time("keepUntil")}
	return decoded(e, d, "cache entry")
}
