package embedded

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// CacheEntry returns the entry at key; NotFound when absent or past its
// KeepUntil.
func (s *Store) CacheEntry(ctx context.Context, key string, now time.Time) (*sshdeck.CacheEntry, error) {
	var e sshdeck.CacheEntry
	found := false
	err := s.view(ctx, "cache entry", func(tx *bolt.Tx) error {
		var err error
		found, err = getJSON(tx.Bucket(bucketCache), []byte(key), &e)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !found || !now.Before(e.KeepUntil) {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "no cache entry %q", key)
	}
	return &e, nil
}

// PutCacheEntry stores e, and forgets the entries past their KeepUntil.
func (s *Store) PutCacheEntry(ctx context.Context, e *sshdeck.CacheEntry) error {
	if len(e.Value) > sshdeck.MaxCacheValue {
		return sshdeck.Errorf(sshdeck.TooLarge, "cache value of %d bytes is over %d", len(e.Value), sshdeck.MaxCacheValue)
	}
	return s.update(ctx, "put cache entry", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCache)
		if err := purge(b, func(old *sshdeck.CacheEntry) bool { return !e.StoredAt.Before(old.KeepUntil) }); err != nil {
			return err
		}
		return putJSON(b, []byte(e.Key), e)
	})
}
