// Package releases serves the releases feed: a repository's GitHub
// releases mapped to feed items, cached in the store for every function
// instance, and served stale when GitHub fails.
package releases

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/upstream"
)

const (
	// TTL is how long a cached page is served without asking GitHub.
	TTL = 30 * time.Minute
	// Keep is how long a cached page is kept to be served stale while
	// GitHub fails.
	Keep = 7 * 24 * time.Hour
	// DefaultPerPage and MaxPerPage are the API's page sizes.
	DefaultPerPage = 20
	MaxPerPage     = 100
	// MaxPage is the last page the feed serves: past it the API answers
	// 400, so that no one spends GitHub's rate limit on pages that are
	// empty for any real repository.
	MaxPage = 100
	// CallsPerMinute is the most calls to GitHub the feed makes in a
	// minute of the clock, for the whole deployment (a counter in the
	// store that every instance shares).
	CallsPerMinute = 30
)

// Source is where releases come from: *upstream.GitHub.
type Source interface {
	Repo() string
	ReleasesPage() string
	Releases(ctx context.Context, page, perPage int) ([]upstream.Release, error)
}

// Feed is the body of GET /releases/rss.
type Feed struct {
	Feed       Info   `json:"feed"`
	Items      []Item `json:"items"`
	TotalCount int    `json:"total_count"`
	Page       int    `json:"page"`
	PerPage    int    `json:"per_page"`
	// Cached tells whether the items came from the cache; CacheAge is
	// their age in whole seconds (0 when fetched for this answer).
	Cached   bool  `json:"cached"`
	CacheAge int64 `json:"cache_age"`
}

// Info describes the feed.
type Info struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Link        string `json:"link"`
	// Updated is when the items were fetched from GitHub.
	Updated time.Time `json:"updated"`
}

// Item is one release.
type Item struct {
	ID           int64      `json:"id"`
	Title        string     `json:"title"`
	Description  string     `json:"description"`
	Link         string     `json:"link"`
	PubDate      *time.Time `json:"pubDate"` // null for a draft
	Version      string     `json:"version"`
	IsPrerelease bool       `json:"isPrerelease"`
	IsDraft      bool       `json:"isDraft"`
	Assets       []Asset    `json:"assets"`
}

// Asset is a file attached to a release.
type Asset struct {
	Name          string `json:"name"`
	Size          int64  `json:"size"` // bytes
	DownloadCount int64  `json:"download_count"`
	DownloadURL   string `json:"download_url"`
}

// Service answers feed pages.
type Service struct {
	source Source
	cache  sshdeck.CacheStore
	log    *slog.Logger
	now    func() time.Time

	mu sync.Mutex
	// limitedUntil is when GitHub's rate limit lifts: no call before it.
	limitedUntil time.Time
	// flights are the calls to GitHub under way, by cache key: a miss of
	// a page that is being fetched waits for that call and shares its
	// answer, so one page is fetched by one call at a time.
	flights map[string]*flight
	// fresh holds, by cache key, the pages this instance stored or read
	// from the cache, decoded: while one is younger than TTL it is answered
	// without reading the store, gunzipping and decoding it again.
	fresh map[string]remembered
}

// remembered is a page as the cache holds it, decoded.
type remembered struct {
	items    []Item
	storedAt time.Time
}

// maxRemembered bounds Service.fresh; past it, it starts over.
const maxRemembered = 64

// NewService returns a Service; log nil discards, now nil is time.Now.
func NewService(source Source, cache sshdeck.CacheStore, log *slog.Logger, now func() time.Time) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Service{source: source, cache: cache, log: log, now: now, fresh: map[string]remembered{}, flights: map[string]*flight{}}
}

// flight is one call to GitHub for a page, and its answer once done is
// closed.
type flight struct {
	done  chan struct{}
	items []Item
	err   error
	// callers counts the requests that asked for this call (the tests
	// wait for all of theirs to share one).
	callers int
}

// cached is what the cache holds of a page: gzipped JSON, as release notes
// are long markdown that compresses well, and a DynamoDB item is 400 KB.
type cached struct {
	Items []Item `json:"items"`
}

// Page answers one page of the feed. page and perPage must be clamped by the
// caller (1.., 1..MaxPerPage). The items of an answer may be shared with
// other answers: they are read only.
func (s *Service) Page(ctx context.Context, page, perPage int) (*Feed, error) {
	key := s.key(page, perPage)
	now := s.now()
	if r, ok := s.recall(key, now); ok {
		return s.feed(page, perPage, r.items, r.storedAt, now, true), nil
	}
	entry, items := s.lookup(ctx, key, now)
	if entry != nil && now.Sub(entry.StoredAt) < TTL {
		s.remember(key, remembered{items: items, storedAt: entry.StoredAt})
		return s.feed(page, perPage, items, entry.StoredAt, now, true), nil
	}
	fresh, err := s.fetchOnce(ctx, key, page, perPage, now)
	if err != nil {
		if entry != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "releases: serving a stale page", slog.String("error", err.Error()))
			return s.feed(page, perPage, items, entry.StoredAt, now, true), nil
		}
		return nil, err
	}
	return s.feed(page, perPage, fresh, now, now, false), nil
}

// fetchOnce fetches the page and caches it, or, when a call for the page
// is under way in this instance, waits for that call and answers what it
// got. The call does not end with the request that started it (nor does
// it outlive the client's own timeout): the others waiting for it would
// fail with it.
func (s *Service) fetchOnce(ctx context.Context, key string, page, perPage int, now time.Time) ([]Item, error) {
	s.mu.Lock()
	f, waiting := s.flights[key]
	if !waiting {
		f = &flight{done: make(chan struct{})}
		s.flights[key] = f
	}
	f.callers++
	s.mu.Unlock()
	if !waiting {
		go func() {
			defer func() {
				s.mu.Lock()
				delete(s.flights, key)
				s.mu.Unlock()
				close(f.done)
			}()
			callCtx := context.WithoutCancel(ctx)
			if f.items, f.err = s.fetch(callCtx, page, perPage, now); f.err == nil && s.store(callCtx, key, f.items, now) {
				s.remember(key, remembered{items: f.items, storedAt: now})
			}
		}()
	}
	select {
	case <-f.done:
		return f.items, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// key is the page's cache key.
func (s *Service) key(page, perPage int) string {
	return "releases/" + s.source.Repo() + "/" + strconv.Itoa(page) + "/" + strconv.Itoa(perPage)
}

// recall returns the page remembered under key while it is younger than
// TTL. Another instance may have refreshed the store's copy since: this
// one is as good until its own TTL runs out.
func (s *Service) recall(key string, now time.Time) (remembered, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.fresh[key]
	if !ok || now.Sub(r.storedAt) >= TTL {
		return remembered{}, false
	}
	return r, true
}

func (s *Service) remember(key string, r remembered) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.fresh) >= maxRemembered {
		clear(s.fresh)
	}
	s.fresh[key] = r
}

// lookup returns the cached page, or nothing: a store that fails to answer
// is logged and the page fetched, as if it were not cached.
func (s *Service) lookup(ctx context.Context, key string, now time.Time) (*sshdeck.CacheEntry, []Item) {
	entry, err := s.cache.CacheEntry(ctx, key, now)
	if err != nil {
		if sshdeck.ErrorCode(err) != sshdeck.NotFound {
			s.log.LogAttrs(ctx, slog.LevelWarn, "releases: cache unreadable", slog.String("error", err.Error()))
		}
		return nil, nil
	}
	items, err := decode(entry.Value)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "releases: cache entry undecodable", slog.String("key", key), slog.String("error", err.Error()))
		return nil, nil
	}
	return entry, items
}

// fetch asks GitHub for the page, unless its rate limit has not lifted yet.
func (s *Service) fetch(ctx context.Context, page, perPage int, now time.Time) ([]Item, error) {
	s.mu.Lock()
	until := s.limitedUntil
	s.mu.Unlock()
	if now.Before(until) {
		return nil, sshdeck.Errorf(sshdeck.Upstream, "GitHub's rate limit is reached until %s", until.UTC().Format(time.RFC3339))
	}
	if err := s.spend(ctx, now); err != nil {
		return nil, err
	}
	releases, err := s.source.Releases(ctx, page, perPage)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "releases: GitHub failed", slog.String("error", err.Error()))
		return nil, s.upstreamError(err)
	}
	items := make([]Item, 0, len(releases))
	for _, r := range releases {
		items = append(items, item(r))
	}
	return items, nil
}

// spend counts a call to GitHub against the deployment's CallsPerMinute
// of the current minute: a BudgetError when they are spent. A store that
// cannot count lets the call through (logged): the budget spares GitHub's
// rate limit, which GitHub enforces anyway, and is not worth failing the
// feed for.
func (s *Service) spend(ctx context.Context, now time.Time) error {
	minute := now.UTC().Truncate(time.Minute)
	key := "releases-calls/" + minute.Format("2006-01-02T15:04")
	added, err := s.cache.CountBelow(ctx, key, CallsPerMinute, minute.Add(2*time.Minute))
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "releases: the calls to GitHub could not be counted", slog.String("error", err.Error()))
		return nil
	}
	if !added {
		retry := minute.Add(time.Minute).Sub(now)
		return &sshdeck.Error{
			Code:       sshdeck.RateLimited,
			Message:    fmt.Sprintf("the releases feed has asked GitHub %d times this minute, the most it may; try again in %d s", CallsPerMinute, int(retry.Seconds()+0.999)),
			RetryAfter: retry,
		}
	}
	return nil
}

// upstreamError says what went wrong with GitHub, in a sentence for the
// client (the error itself is logged).
func (s *Service) upstreamError(err error) error {
	if limit, ok := errors.AsType[*upstream.RateLimitError](err); ok {
		s.mu.Lock()
		s.limitedUntil = limit.Reset
		s.mu.Unlock()
		return sshdeck.Errorf(sshdeck.Upstream, "GitHub's rate limit is reached until %s", limit.Reset.UTC().Format(time.RFC3339))
	}
	if status, ok := errors.AsType[*upstream.StatusError](err); ok {
		return sshdeck.Errorf(sshdeck.Upstream, "GitHub answered %d %s for the releases of %s", status.Status, http.StatusText(status.Status), s.source.Repo())
	}
	var timeout interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &timeout) && timeout.Timeout() {
		return sshdeck.Errorf(sshdeck.Upstream, "GitHub did not answer in time")
	}
	return sshdeck.Errorf(sshdeck.Upstream, "GitHub could not be reached")
}

// store caches a fetched page and reports whether it did. A page that
// cannot be cached is still answered: the failure is logged.
func (s *Service) store(ctx context.Context, key string, items []Item, now time.Time) bool {
	value, err := encode(items)
	if err == nil {
		err = s.cache.PutCacheEntry(ctx, &sshdeck.CacheEntry{Key: key, Value: value, StoredAt: now, KeepUntil: now.Add(Keep)})
	}
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "releases: page not cached", slog.String("key", key), slog.String("error", err.Error()))
		return false
	}
	return true
}

func (s *Service) feed(page, perPage int, items []Item, fetched, now time.Time, fromCache bool) *Feed {
	repo := s.source.Repo()
	f := &Feed{
		Feed: Info{
			Title:       repo + " releases",
			Description: "Releases of " + repo + " on GitHub",
			Link:        s.source.ReleasesPage(),
			Updated:     fetched.UTC(),
		},
		Items:      items,
		TotalCount: len(items),
		Page:       page,
		PerPage:    perPage,
		Cached:     fromCache,
	}
	if fromCache {
		f.CacheAge = int64(now.Sub(fetched) / time.Second)
	}
	return f
}

// item maps a GitHub release as API.md says.
func item(r upstream.Release) Item {
	it := Item{
		ID:           r.ID,
		Title:        r.Name,
		Description:  r.Body,
		Link:         r.HTMLURL,
		PubDate:      r.PublishedAt,
		Version:      r.TagName,
		IsPrerelease: r.Prerelease,
		IsDraft:      r.Draft,
		Assets:       make([]Asset, 0, len(r.Assets)),
	}
	if it.Title == "" {
		it.Title = r.TagName
	}
	for _, a := range r.Assets {
		it.Assets = append(it.Assets, Asset{Name: a.Name, Size: a.Size, DownloadCount: a.DownloadCount, DownloadURL: a.BrowserDownloadURL})
	}
	return it
}

func encode(items []Item) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(cached{Items: items}); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decode(value []byte) ([]Item, error) {
	zr, err := gzip.NewReader(bytes.NewReader(value))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var c cached
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	if c.Items == nil {
		c.Items = []Item{}
	}
	return c.Items, nil
}
