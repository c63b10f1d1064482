package api_test

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/releases"
)

type feed struct {
	Feed struct {
		Title, Description, Link string
		Updated                  time.Time
	} `json:"feed"`
	Items []struct {
		ID           int64      `json:"id"`
		Title        string     `json:"title"`
		Description  string     `json:"description"`
		Link         string     `json:"link"`
		PubDate      *time.Time `json:"pubDate"`
		Version      string     `json:"version"`
		IsPrerelease bool       `json:"isPrerelease"`
		IsDraft      bool       `json:"isDraft"`
		Assets       []struct {
			Name          string `json:"name"`
			Size          int64  `json:"size"`
			DownloadCount int64  `json:"download_count"`
			DownloadURL   string `json:"download_url"`
		} `json:"assets"`
	} `json:"items"`
	TotalCount int   `json:"total_count"`
	Page       int   `json:"page"`
	PerPage    int   `json:"per_page"`
	Cached     bool  `json:"cached"`
	CacheAge   int64 `json:"cache_age"`
}

func (e *env) feed(query string) feed {
	e.t.Helper()
	resp := e.get(e.alice, "/releases/rss"+query)
	if resp.Status != http.StatusOK {
		e.t.Fatalf("GET /releases/rss%s: %d %s", query, resp.Status, resp.Body)
	}
	var f feed
	resp.json(e.t, &f)
	return f
}

func TestReleasesFeed(t *testing.T) {
	e := newEnv(t)
	fetched := e.clock().UTC().Truncate(time.Second)
	f := e.feed("")
	if f.Cached || f.CacheAge != 0 || f.TotalCount != 4 || len(f.Items) != 4 || f.Page != 1 || f.PerPage != 20 {
		t.Fatalf("first answer: cached %t age %d count %d items %d page %d/%d", f.Cached, f.CacheAge, f.TotalCount, len(f.Items), f.Page, f.PerPage)
	}
	if f.Feed.Title != "acme/deck releases" || f.Feed.Link != e.github.URL+"/acme/deck/releases" || f.Feed.Updated.Before(fetched) {
		t.Fatalf("feed: %+v", f.Feed)
	}
	first := f.Items[0]
	if first.ID != 1001 || first.Title != "sshdeck 1.1" || first.Description != "Notes of 1.1" || first.Version != "v1.1.0" ||
		first.Link != "https://github.com/acme/deck/releases/tag/v1.1.0" || first.PubDate == nil ||
		!first.PubDate.Equal(time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)) || first.IsPrerelease || first.IsDraft {
		t.Fatalf("item 0: %+v", first)
	}
	if a := first.Assets; len(a) != 1 || a[0].Name != "sshdeck_linux_arm64.tar.gz" || a[0].Size != 4_200_001 || a[0].DownloadCount != 10 ||
		a[0].DownloadURL != "https://github.com/acme/deck/releases/download/v1.1.0/sshdeck_linux_arm64.tar.gz" {
		t.Fatalf("assets of item 0: %+v", a)
	}
	if !f.Items[2].IsPrerelease {
		t.Fatal("item 2 is a prerelease on GitHub")
	}
	// A draft has no name (the tag is the title), no notes, no date.
	draft := f.Items[3]
	if !draft.IsDraft || draft.Title != "v2.0.0-rc.1" || draft.Description != "" || draft.PubDate != nil || draft.Assets == nil {
		t.Fatalf("draft: %+v", draft)
	}

	// Within 30 minutes the cache answers, with its age in seconds.
	e.advance(90 * time.Second)
	f = e.feed("?page=1&per_page=20")
	if !f.Cached || f.CacheAge != 90 || e.github.Calls() != 1 {
		t.Fatalf("second answer: cached %t age %d, GitHub called %d times", f.Cached, f.CacheAge, e.github.Calls())
	}
	// Past 30 minutes GitHub is asked again.
	e.advance(30 * time.Minute)
	if f = e.feed(""); f.Cached || f.CacheAge != 0 || e.github.Calls() != 2 {
		t.Fatalf("after 30 minutes: cached %t age %d, GitHub called %d times", f.Cached, f.CacheAge, e.github.Calls())
	}
}

// TestReleasesPaging: bad values of page and per_page are the defaults,
// per_page over 100 is 100. Each pair is its own page.
func TestReleasesPaging(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		query, asked  string
		page, perPage int
		items         int
	}{
		{"", "page=1&per_page=20", 1, 20, 4},
		{"?page=2&per_page=3", "page=2&per_page=3", 2, 3, 1},
		{"?per_page=500", "page=1&per_page=100", 1, 100, 4},
		{"?page=0&per_page=-4", "page=1&per_page=20", 1, 20, 4},
		{"?page=abc&per_page=1.5", "page=1&per_page=20", 1, 20, 4},
		{"?page=3&per_page=1", "page=3&per_page=1", 3, 1, 1},
		{"?page=100&per_page=1", "page=100&per_page=1", 100, 1, 0},
	} {
		before := e.github.Calls()
		f := e.feed(tc.query)
		if f.Page != tc.page || f.PerPage != tc.perPage || len(f.Items) != tc.items || f.TotalCount != tc.items {
			t.Errorf("%q: page %d per_page %d with %d items (total_count %d), want %d %d %d", tc.query, f.Page, f.PerPage, len(f.Items), f.TotalCount, tc.page, tc.perPage, tc.items)
		}
		if fetched := e.github.Calls() > before; fetched != !f.Cached {
			t.Errorf("%q: cached %t but GitHub fetched %t", tc.query, f.Cached, fetched)
		}
		if fetched := e.github.Calls() > before; fetched && !sameQuery(e.github.LastQuery(), tc.asked) {
			t.Errorf("%q: GitHub was asked %q, want %q", tc.query, e.github.LastQuery(), tc.asked)
		}
	}
}

// TestReleasesPageOver100: a page past 100 is 400 naming it, and asks
// GitHub nothing.
func TestReleasesPageOver100(t *testing.T) {
	e := newEnv(t)
	for _, page := range []string{"101", "%2B101", "1000", "99999999999999999999"} {
		resp := e.get(e.alice, "/releases/rss?page="+page)
		if resp.Status != http.StatusBadRequest || resp.errorCode(t) != "invalid" || !strings.Contains(string(resp.Body), "page: must be from 1 to 100") {
			t.Errorf("page=%s: %d %s", page, resp.Status, resp.Body)
		}
	}
	if e.github.Calls() != 0 {
		t.Fatalf("GitHub asked %d times for pages past 100", e.github.Calls())
	}
}

// TestReleasesCallBudget: past 30 calls to GitHub in a minute, a page
// that is not cached is 429 with Retry-After (the seconds left in the
// minute); a cached one is served, stale or not; the next minute calls
// again.
func TestReleasesCallBudget(t *testing.T) {
	e := newEnv(t)
	e.feed("?page=1&per_page=1")
	e.advance(31 * time.Minute)
	// The harness's clock is at some second of a minute: spend the
	// budget within it.
	for page := 2; page <= releases.CallsPerMinute+1; page++ {
		if f := e.feed("?per_page=1&page=" + strconv.Itoa(page)); f.Cached {
			t.Fatalf("page %d: cached", page)
		}
	}
	calls := e.github.Calls()
	resp := e.get(e.alice, "/releases/rss?per_page=1&page=40")
	left := time.Minute - e.clock().Sub(e.clock().Truncate(time.Minute))
	if resp.Status != http.StatusTooManyRequests || resp.errorCode(t) != "rate_limited" || resp.Header.Get("Retry-After") != strconv.Itoa(int(math.Ceil(left.Seconds()))) {
		t.Fatalf("a page past the budget: %d %s (Retry-After %q)", resp.Status, resp.Body, resp.Header.Get("Retry-After"))
	}
	if f := e.feed("?page=1&per_page=1"); !f.Cached || f.CacheAge != 31*60 {
		t.Fatalf("a stale page past the budget: cached %t age %d", f.Cached, f.CacheAge)
	}
	if e.github.Calls() != calls {
		t.Fatalf("GitHub asked %d more times past the budget", e.github.Calls()-calls)
	}
	e.advance(left)
	if f := e.feed("?per_page=1&page=40"); f.Cached || e.github.Calls() != calls+1 {
		t.Fatalf("the next minute: cached %t, %d more calls", f.Cached, e.github.Calls()-calls)
	}
}

func sameQuery(got, want string) bool {
	g, w := strings.Split(got, "&"), strings.Split(want, "&")
	if len(g) != len(w) {
		return false
	}
	for _, p := range w {
		if !strings.Contains("&"+got+"&", "&"+p+"&") {
			return false
		}
	}
	return true
}

// TestReleasesUpstreamFails: stale-if-error with a cached page, 502 without.
func TestReleasesUpstreamFails(t *testing.T) {
	e := newEnv(t)
	e.feed("")
	e.github.Fail(500, `{"message":"Server Error"}`)
	e.advance(2 * time.Hour)
	f := e.feed("")
	if !f.Cached || f.CacheAge != 7200 || len(f.Items) != 4 {
		t.Fatalf("stale answer: cached %t age %d items %d", f.Cached, f.CacheAge, len(f.Items))
	}
	resp := e.get(e.alice, "/releases/rss?page=2")
	if resp.Status != http.StatusBadGateway || resp.errorCode(t) != "upstream" || !strings.Contains(string(resp.Body), "GitHub answered 500") {
		t.Fatalf("uncached page while GitHub fails: %d %s", resp.Status, resp.Body)
	}
	// A page kept for 7 days is gone after them.
	e.advance(7 * 24 * time.Hour)
	if resp := e.get(e.alice, "/releases/rss"); resp.Status != http.StatusBadGateway {
		t.Fatalf("a week later: %d %s", resp.Status, resp.Body)
	}
	// GitHub that does not answer at all.
	e.github.Close()
	if resp := e.get(e.alice, "/releases/rss?page=3"); resp.Status != http.StatusBadGateway || !strings.Contains(string(resp.Body), "GitHub could not be reached") {
		t.Fatalf("GitHub unreachable: %d %s", resp.Status, resp.Body)
	}
}

// TestReleasesRateLimited: GitHub's rate-limit answers (403 with
// X-RateLimit-Remaining: 0, 429 with Retry-After) serve the stale page, and
// GitHub is left alone until the limit lifts.
func TestReleasesRateLimited(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header func(now time.Time) []string
	}{
		{"primary", 403, func(now time.Time) []string {
			return []string{"X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Add(10*time.Minute).Unix(), 10)}
		}},
		{"secondary", 429, func(time.Time) []string { return []string{"Retry-After", "600"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.feed("")
			e.advance(31 * time.Minute)
			e.github.Fail(tc.status, `{"message":"API rate limit exceeded for 127.0.0.1.","documentation_url":"https://docs.github.com/rest/rate-limit"}`, tc.header(e.clock())...)
			if f := e.feed(""); !f.Cached || f.CacheAge != 31*60 {
				t.Fatalf("rate limited: cached %t age %d", f.Cached, f.CacheAge)
			}
			calls := e.github.Calls()
			e.advance(5 * time.Minute)
			if f := e.feed(""); !f.Cached || e.github.Calls() != calls {
				t.Fatalf("within the limit's window: cached %t, GitHub called %d more times", f.Cached, e.github.Calls()-calls)
			}
			resp := e.get(e.alice, "/releases/rss?page=2")
			if resp.Status != http.StatusBadGateway || !strings.Contains(string(resp.Body), "rate limit") || e.github.Calls() != calls {
				t.Fatalf("uncached page within the window: %d %s", resp.Status, resp.Body)
			}
			e.github.Fail(0, "")
			e.advance(6 * time.Minute)
			if f := e.feed(""); f.Cached || e.github.Calls() != calls+1 {
				t.Fatalf("after the limit lifted: cached %t, GitHub called %d more times", f.Cached, e.github.Calls()-calls)
			}
		})
	}
}

// TestReleasesCacheShared: the cache is in the store, so a second server
// (another function instance) answers from it without asking GitHub.
func TestReleasesCacheShared(t *testing.T) {
	e := newEnv(t)
	e.feed("")
	e.handler = e.server().Router()
	if f := e.feed(""); !f.Cached || e.github.Calls() != 1 {
		t.Fatalf("another instance: cached %t, GitHub called %d times", f.Cached, e.github.Calls())
	}
}

func TestReleasesNotConfigured(t *testing.T) {
	e := newEnv(t)
	e.handler = api.New(api.Config{Authenticator: e.authn}).Router()
	resp := e.get(e.alice, "/releases/rss")
	if resp.Status != http.StatusNotFound || !strings.Contains(string(resp.Body), "SSHDECK_RELEASES_REPO") {
		t.Fatalf("no repository: %d %s", resp.Status, resp.Body)
	}
	if resp := e.get("", "/releases/rss"); resp.Status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", resp.Status)
	}
}
