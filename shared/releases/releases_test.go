package releases_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/releases"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/shared/upstream"
)

// source is a GitHub that answers what the test says.
type source struct {
	releases []upstream.Release
	err      error
	calls    int
}

func (s *source) Repo() string         { return "acme/deck" }
func (s *source) ReleasesPage() string { return "https://github.com/acme/deck/releases" }
func (s *source) Releases(context.Context, int, int) ([]upstream.Release, error) {
	s.calls++
	return s.releases, s.err
}

func newService(t *testing.T, src *source, now *time.Time) *releases.Service {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "sshdeck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return releases.NewService(src, store, nil, func() time.Time { return *now })
}

// TestUpstreamErrors: with nothing cached, each way GitHub fails is a 502
// whose sentence says which.
func TestUpstreamErrors(t *testing.T) {
	now := time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		err  error
		says string
	}{
		{fmt.Errorf("github releases of acme/deck: %w", &upstream.StatusError{Status: 404, Message: "Not Found"}), "GitHub answered 404 Not Found for the releases of acme/deck"},
		{fmt.Errorf("github releases of acme/deck: %w", &upstream.RateLimitError{Status: 403, Reset: now.Add(time.Hour)}), "rate limit is reached until 2026-11-21T16:00:00Z"},
		{fmt.Errorf("github releases of acme/deck: no answer within 10s: %w", context.DeadlineExceeded), "GitHub did not answer in time"},
		{errors.New("github releases of acme/deck: dial tcp: connection refused"), "GitHub could not be reached"},
	} {
		_, err := newService(t, &source{err: tc.err}, &now).Page(t.Context(), 1, 20)
		if sshdeck.ErrorCode(err) != sshdeck.Upstream || !strings.Contains(sshdeck.ErrorMessage(err), tc.says) {
			t.Errorf("%v: got %v, want an upstream error saying %q", tc.err, err, tc.says)
		}
	}
}

// TestTooLargeToCache: a page over the cache's limit is answered, not
// cached: the next request asks GitHub again.
func TestTooLargeToCache(t *testing.T) {
	now := time.Now()
	// Random notes, which gzip cannot shrink below the limit.
	var notes strings.Builder
	for notes.Len() < 2*sshdeck.MaxCacheValue {
		notes.WriteString(rand.Text())
	}
	src := &source{releases: []upstream.Release{{ID: 1, TagName: "v1", Body: notes.String()}}}
	svc := newService(t, src, &now)
	for range 2 {
		f, err := svc.Page(t.Context(), 1, 20)
		if err != nil || f.Cached || len(f.Items) != 1 {
			t.Fatalf("page: cached %t, error %v", f != nil && f.Cached, err)
		}
	}
	if src.calls != 2 {
		t.Fatalf("GitHub asked %d times, want 2 (nothing cached)", src.calls)
	}
}

// countingCache is the store's cache, counting reads.
type countingCache struct {
	sshdeck.CacheStore
	reads int
}

func (c *countingCache) CacheEntry(ctx context.Context, key string, now time.Time) (*sshdeck.CacheEntry, error) {
	c.reads++
	return c.CacheStore.CacheEntry(ctx, key, now)
}

// TestFreshPageFromMemory: a page this instance cached is answered from
// memory while it is fresh (no store read, no GitHub call), with its true
// age; each page is its own; past the TTL the store and GitHub are asked
// again; and a page read from the store is remembered too.
func TestFreshPageFromMemory(t *testing.T) {
	now := time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)
	store, err := embedded.Open(filepath.Join(t.TempDir(), "sshdeck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cache := &countingCache{CacheStore: store}
	src := &source{releases: []upstream.Release{{ID: 1, TagName: "v1"}}}
	clock := func() time.Time { return now }
	svc := releases.NewService(src, cache, nil, clock)
	ctx := t.Context()
	if f, err := svc.Page(ctx, 1, 20); err != nil || f.Cached {
		t.Fatalf("first page: %+v, %v", f, err)
	}
	reads := cache.reads
	now = now.Add(10 * time.Minute)
	f, err := svc.Page(ctx, 1, 20)
	if err != nil || !f.Cached || f.CacheAge != 600 || len(f.Items) != 1 || f.Items[0].Version != "v1" || f.Page != 1 || f.PerPage != 20 {
		t.Fatalf("fresh page: %+v, %v", f, err)
	}
	if cache.reads != reads || src.calls != 1 {
		t.Fatalf("fresh page: %d store reads, %d GitHub calls; want none more", cache.reads-reads, src.calls-1)
	}
	// Another page is not this one.
	src.releases = []upstream.Release{{ID: 2, TagName: "v2"}}
	if f, err := svc.Page(ctx, 2, 20); err != nil || f.Cached || f.Items[0].Version != "v2" || src.calls != 2 {
		t.Fatalf("page 2: %+v, %v, %d GitHub calls", f, err, src.calls)
	}
	if f, err := svc.Page(ctx, 1, 10); err != nil || f.Cached || src.calls != 3 {
		t.Fatalf("page 1 by 10: %+v, %v, %d GitHub calls", f, err, src.calls)
	}
	// Past the TTL the remembered page is not answered.
	now = now.Add(releases.TTL)
	if f, err := svc.Page(ctx, 1, 20); err != nil || f.Cached || f.Items[0].Version != "v2" || src.calls != 4 {
		t.Fatalf("after the TTL: %+v, %v, %d GitHub calls", f, err, src.calls)
	}
	// Another instance reads the store once, then remembers.
	other := releases.NewService(src, cache, nil, clock)
	now = now.Add(time.Minute)
	reads = cache.reads
	for range 3 {
		if f, err := other.Page(ctx, 1, 20); err != nil || !f.Cached || f.CacheAge != 60 || f.Items[0].Version != "v2" {
			t.Fatalf("other instance: %+v, %v", f, err)
		}
	}
	if cache.reads != reads+1 || src.calls != 4 {
		t.Fatalf("other instance: %d store reads, %d GitHub calls; want 1 and none", cache.reads-reads, src.calls-4)
	}
}
