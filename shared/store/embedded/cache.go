package embedded

import (
	"context"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// CacheEntry returns the entry at key; NotFound when absent or past its
// KeepUntil.
func (s *Store) CacheEntry(ctx context.Context, key string, now time.Time) (*sshdeck.CacheEntry, error) {
	var r cacheRecord
	found := false
	err := s.view(ctx, "cache entry", func(tx *bolt.Tx) error {
		var err error
		found, err = getJSON(tx.Bucket(bucketCache), []byte(key), &r)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !found || !now.Before(r.KeepUntil) {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "no cache entry %q", key)
	}
	return r.entry(), nil
}

// PutCacheEntry stores e, and forgets the entries past their KeepUntil.
func (s *Store) PutCacheEntry(ctx context.Context, e *sshdeck.CacheEntry) error {
	if len(e.Value) > sshdeck.MaxCacheValue {
		return sshdeck.Errorf(sshdeck.TooLarge, "cache value of %d bytes is over %d", len(e.Value), sshdeck.MaxCacheValue)
	}
	return s.update(ctx, "put cache entry", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCache)
		if err := purge(b, func(old *cacheRecord) bool { return !e.StoredAt.Before(old.KeepUntil) }); err != nil {
			return err
		}
		return putJSON(b, []byte(e.Key), cacheRecordOf(e))
	})
}

// CountBelow keeps the counter in the cache bucket, as a cache record whose
// value is the count in decimal: PutCacheEntry's purge forgets it after
// keepUntil like an entry. Transactions are serial: no two calls pass the
// limit together.
func (s *Store) CountBelow(ctx context.Context, key string, limit int, keepUntil time.Time) (bool, error) {
	added := false
	err := s.update(ctx, "count", func(tx *bolt.Tx) error {
		added = false
		b := tx.Bucket(bucketCache)
		var r cacheRecord
		found, err := getJSON(b, []byte(key), &r)
		if err != nil {
			return err
		}
		n := 0
		if found {
			if n, err = strconv.Atoi(string(r.Value)); err != nil {
				return fmt.Errorf("counter %q: %w", key, err)
			}
		}
		if n >= limit {
			return nil
		}
		added = true
		return putJSON(b, []byte(key), &cacheRecord{Key: key, Value: []byte(strconv.Itoa(n + 1)), KeepUntil: keepUntil})
	})
	if err != nil {
		return false, err
	}
	return added, nil
}

// cacheRecord is a cache entry as stored, JSON under the names of schema 2
// (the value in base64, as encoding/json writes bytes).
type cacheRecord struct {
	Key       string    `json:"key"`
	Value     []byte    `json:"value"`
	StoredAt  time.Time `json:"storedAt"`
	KeepUntil time.Time `json:"keepUntil"`
}

func (*cacheRecord) jsonRecord() {}

func cacheRecordOf(e *sshdeck.CacheEntry) *cacheRecord {
	return &cacheRecord{Key: e.Key, Value: e.Value, StoredAt: e.StoredAt, KeepUntil: e.KeepUntil}
}

func (r *cacheRecord) entry() *sshdeck.CacheEntry {
	return &sshdeck.CacheEntry{Key: r.Key, Value: r.Value, StoredAt: r.StoredAt, KeepUntil: r.KeepUntil}
}
