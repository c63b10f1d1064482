package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// PutCacheEntry puts the entry over the one at its key: one PutItem. The
// value is Binary, and ttl its KeepUntil, for DynamoDB's TTL to purge it.
func (s *Store) PutCacheEntry(ctx context.Context, e *sshdeck.CacheEntry) error {
	if len(e.Value) > sshdeck.MaxCacheValue {
		return sshdeck.Errorf(sshdeck.TooLarge, "cache value of %d bytes is over %d", len(e.Value), sshdeck.MaxCacheValue)
	}
	attrs, err := marshal(e)
	if err != nil {
		return wrap("put cache entry", err)
	}
	item := cacheKey(e.Key).with(attrs)
	if ttl, ok := expiryTTL(e.KeepUntil); ok {
		item[attrTTL] = ttl
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item})
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
	var e sshdeck.CacheEntry
	if out.Item != nil {
		if err := unmarshal(out.Item, &e); err != nil {
			return nil, wrap("cache entry", err)
		}
	}
	if out.Item == nil || !now.Before(e.KeepUntil) {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "no cache entry %q", key)
	}
	return &e, nil
}
