package storetest

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func testCacheRoundTrip(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	_, err := s.CacheEntry(ctx, "releases/o/r/1/20", base)
	wantCode(t, err, sshdeck.NotFound, "CacheEntry before any put")

	// Bytes a store converting through text would mangle.
	e := &sshdeck.CacheEntry{Key: "releases/o/r/1/20", Value: []byte{0x1f, 0x8b, 0x00, 0xff, 'x'}, StoredAt: base, KeepUntil: base.Add(time.Hour)}
	must(t, s.PutCacheEntry(ctx, e), "PutCacheEntry")
	other := &sshdeck.CacheEntry{Key: "releases/o/r/2/20", Value: []byte("two"), StoredAt: base, KeepUntil: base.Add(time.Hour)}
	must(t, s.PutCacheEntry(ctx, other), "PutCacheEntry")
	sameEntry := func(got, want *sshdeck.CacheEntry, what string) {
		t.Helper()
		same(t, got, want, func(c *sshdeck.CacheEntry) { c.StoredAt, c.KeepUntil = ms(c.StoredAt), ms(c.KeepUntil) }, what)
	}
	got, err := s.CacheEntry(ctx, e.Key, base)
	must(t, err, "CacheEntry")
	sameEntry(got, e, "CacheEntry after put")

	// A put replaces; the returned value is a copy.
	got.Value[0] = 'M'
	newer := &sshdeck.CacheEntry{Key: e.Key, Value: bytes.Repeat([]byte{0xab}, sshdeck.MaxCacheValue), StoredAt: base.Add(time.Minute), KeepUntil: base.Add(2 * time.Hour)}
	must(t, s.PutCacheEntry(ctx, newer), "PutCacheEntry of the largest value")
	got, err = s.CacheEntry(ctx, e.Key, base.Add(90*time.Minute))
	must(t, err, "CacheEntry after replacing")
	sameEntry(got, newer, "CacheEntry after replacing")

	// Past KeepUntil the entry is as good as gone.
	_, err = s.CacheEntry(ctx, e.Key, newer.KeepUntil)
	wantCode(t, err, sshdeck.NotFound, "CacheEntry at its KeepUntil")
	got, err = s.CacheEntry(ctx, other.Key, base)
	must(t, err, "CacheEntry of the other key")
	sameEntry(got, other, "the other key")

	big := &sshdeck.CacheEntry{Key: "big", Value: make([]byte, sshdeck.MaxCacheValue+1), StoredAt: base, KeepUntil: base.Add(time.Hour)}
	wantCode(t, s.PutCacheEntry(ctx, big), sshdeck.TooLarge, "PutCacheEntry over MaxCacheValue")
}

func testCacheCount(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	keep := base.Add(2 * time.Minute)
	for i := range 4 {
		added, err := s.CountBelow(ctx, "calls/a", 3, keep)
		must(t, err, "CountBelow")
		if added != (i < 3) {
			t.Fatalf("CountBelow #%d under a limit of 3: added %t", i+1, added)
		}
	}
	added, err := s.CountBelow(ctx, "calls/a", 4, keep)
	must(t, err, "CountBelow")
	if !added {
		t.Fatal("CountBelow under a higher limit did not add")
	}
	added, err = s.CountBelow(ctx, "calls/b", 1, keep)
	must(t, err, "CountBelow")
	if !added {
		t.Fatal("another counter is not the first's")
	}
	// Concurrent counts never pass the limit together.
	const limit, racers = 4, 12
	results := make(chan error, racers)
	var mu sync.Mutex
	counted := 0
	for range racers {
		go func() {
			added, err := s.CountBelow(ctx, "calls/c", limit, keep)
			if added {
				mu.Lock()
				counted++
				mu.Unlock()
			}
			results <- err
		}()
	}
	for range racers {
		must(t, <-results, "a racing CountBelow")
	}
	if counted != limit {
		t.Fatalf("%d racing counts added under a limit of %d", counted, limit)
	}
	// A counter is not a cache entry, and a cache entry's put leaves it.
	must(t, s.PutCacheEntry(ctx, &sshdeck.CacheEntry{Key: "releases/o/r/1/20", Value: []byte("x"), StoredAt: base, KeepUntil: base.Add(time.Hour)}), "PutCacheEntry")
	added, err = s.CountBelow(ctx, "calls/c", limit, keep)
	must(t, err, "CountBelow")
	if added {
		t.Fatal("a cache entry's put reset a counter")
	}
}
