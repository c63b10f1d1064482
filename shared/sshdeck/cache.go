package sshdeck

import (
	"context"
	"time"
)

// MaxCacheValue is the largest value a CacheStore takes (a DynamoDB item
// holds 400 KB, key and attributes included).
const MaxCacheValue = 350 << 10

// CacheEntry is a value cached for every instance of a deployment, such as
// a page of the releases feed.
type CacheEntry struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
	// StoredAt is when the value was fetched: its age is now - StoredAt.
	StoredAt time.Time `json:"storedAt"`
	// KeepUntil is when a store may forget the entry. A cache serves stale
	// entries when the source fails, so it is long after the entry is stale.
	KeepUntil time.Time `json:"keepUntil"`
}

// CacheStore persists cache entries, shared by every function instance.
type CacheStore interface {
	// CacheEntry returns the entry at key; NotFound when absent or past
	// its KeepUntil at now.
	CacheEntry(ctx context.Context, key string, now time.Time) (*CacheEntry, error)
	// PutCacheEntry stores e, replacing the entry at its key. TooLarge when
	// the value is over MaxCacheValue.
	PutCacheEntry(ctx context.Context, e *CacheEntry) error
	// CountBelow adds one to the counter at key unless it has reached
	// limit already, and reports whether it added: one conditional
	// increment, so that every instance of a deployment shares the count
	// and concurrent calls never take it past limit. A counter starts at
	// 0; the store may forget it after keepUntil. Counter keys are apart
	// from the entries' keys: give them a prefix of their own.
	CountBelow(ctx context.Context, key string, limit int, keepUntil time.Time) (bool, error)
}
