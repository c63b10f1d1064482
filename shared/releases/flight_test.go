package releases_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/upstreamtest"
	"github.com/sshdeck/sshdeck/shared/releases"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/shared/upstream"
)

// github returns the feed's source over the local GitHub fake, and a
// store; each test makes the services it needs over them.
func github(t *testing.T) (*upstreamtest.GitHub, *upstream.GitHub, sshdeck.CacheStore) {
	t.Helper()
	fake := upstreamtest.StartGitHub(t)
	src, err := upstream.NewGitHub(upstream.GitHubConfig{BaseURL: fake.URL, Repo: "acme/deck"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := embedded.Open(filepath.Join(t.TempDir(), "sshdeck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return fake, src, store
}

// waitFor polls cond: what it waits for is other goroutines' progress,
// which has no event to wait on. A minute bounds a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestOneFlightPerPage: concurrent misses of a page share one call to
// GitHub and its answer; another page is its own call; a request that
// gives up waiting does not end the call, whose page is cached for the
// next request.
func TestOneFlightPerPage(t *testing.T) {
	fake, src, store := github(t)
	now := time.Date(2026, 11, 21, 15, 0, 10, 0, time.UTC)
	svc := releases.NewService(src, store, nil, func() time.Time { return now })
	release := fake.Hold()
	defer release()

	const n = 8
	type answer struct {
		feed *releases.Feed
		err  error
	}
	answers := make(chan answer, n+1)
	for range n {
		go func() {
			f, err := svc.Page(context.Background(), 1, 20)
			answers <- answer{f, err}
		}()
	}
	go func() {
		f, err := svc.Page(context.Background(), 2, 20)
		answers <- answer{f, err}
	}()
	// One that gives up while the call is held.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { _, err := svc.Page(ctx, 3, 1); gaveUp <- err }()

	waitFor(t, "every request to join its page's call", func() bool {
		return releases.Callers(svc, 1, 20) == n && releases.Callers(svc, 2, 20) == 1 && releases.Callers(svc, 3, 1) == 1 && fake.Held() == 3
	})
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the request that gave up: %v", err)
	}
	release()
	for range n + 1 {
		a := <-answers
		if a.err != nil || a.feed.Cached || a.feed.CacheAge != 0 || (a.feed.Page == 1) != (len(a.feed.Items) == 4) {
			t.Fatalf("an answer of the shared call: %+v, %v", a.feed, a.err)
		}
	}
	if fake.Calls() != 3 {
		t.Fatalf("GitHub asked %d times, want 3 (one per page)", fake.Calls())
	}
	waitFor(t, "the call of the request that gave up to end", func() bool { return releases.Callers(svc, 3, 1) == 0 })
	if f, err := svc.Page(context.Background(), 3, 1); err != nil || !f.Cached || fake.Calls() != 3 {
		t.Fatalf("the page of the request that gave up: %+v, %v, %d calls", f, err, fake.Calls())
	}
}

// TestCallBudgetPerDeployment: the calls to GitHub are counted in the
// store, per minute of the clock, for every instance: past 30, an uncached
// page is RateLimited until the minute ends, a cached one is served stale,
// and the next minute calls again.
func TestCallBudgetPerDeployment(t *testing.T) {
	fake, src, store := github(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 21, 15, 0, 10, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	a := releases.NewService(src, store, nil, clock)
	b := releases.NewService(src, store, nil, clock)
	ctx := context.Background()
	if _, err := a.Page(ctx, 1, 1); err != nil {
		t.Fatal(err)
	}
	set(time.Date(2026, 11, 21, 15, 31, 10, 0, time.UTC)) // page 1 is stale
	// Both instances spend the minute's calls.
	for page := 2; page <= releases.CallsPerMinute+1; page++ {
		svc := a
		if page%2 == 0 {
			svc = b
		}
		if f, err := svc.Page(ctx, page, 1); err != nil || f.Cached {
			t.Fatalf("page %d: %+v, %v", page, f, err)
		}
	}
	calls := fake.Calls()
	for _, svc := range []*releases.Service{a, b} {
		_, err := svc.Page(ctx, 40, 1)
		if sshdeck.ErrorCode(err) != sshdeck.RateLimited || sshdeck.RetryAfter(err) != 50*time.Second {
			t.Fatalf("a page past the budget: %v", err)
		}
	}
	if f, err := b.Page(ctx, 1, 1); err != nil || !f.Cached || f.CacheAge != 31*60 {
		t.Fatalf("a stale page past the budget: %+v, %v", f, err)
	}
	if fake.Calls() != calls {
		t.Fatalf("GitHub asked %d more times past the budget", fake.Calls()-calls)
	}
	set(time.Date(2026, 11, 21, 15, 32, 0, 0, time.UTC))
	if f, err := a.Page(ctx, 40, 1); err != nil || f.Cached || fake.Calls() != calls+1 {
		t.Fatalf("the next minute: %+v, %v, %d more calls", f, err, fake.Calls()-calls)
	}
}
