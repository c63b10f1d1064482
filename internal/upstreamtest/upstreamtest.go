// Package upstreamtest serves, on loopback, the upstream services sshdeck
// reads: a GitHub releases API for the repository acme/deck with four
// releases, and a remote alerts list. Tests point SSHDECK_RELEASES_API_URL
// and SSHDECK_ALERTS_URL (or the clients' settings) at them, and make them
// fail as the real services do.
package upstreamtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// GitHub speaks GitHub's releases API for the repository acme/deck:
// GET /repos/acme/deck/releases?page=&per_page= answers the releases of
// that page, or what the test set instead (an error status with GitHub's
// headers and body).
type GitHub struct {
	// URL is the API's base.
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	releases []map[string]any
	calls    []string // the query of each call
	status   int      // when not 0, every answer is this status…
	header   http.Header
	body     string        // …with this body
	gate     chan struct{} // when not nil, answers wait until it is closed
	held     int           // requests waiting at the gate
}

// StartGitHub serves the API until the test ends.
func StartGitHub(t testing.TB) *GitHub {
	g := NewGitHub()
	t.Cleanup(g.Close)
	return g
}

// NewGitHub serves the API until Close (for the benchmarks, which are not
// tests).
func NewGitHub() *GitHub {
	g := &GitHub{}
	for i := 1; i <= 3; i++ {
		g.releases = append(g.releases, map[string]any{
			"id": 1000 + i, "node_id": "RE_x", "tag_name": "v1." + strconv.Itoa(i) + ".0",
			"name": "sshdeck 1." + strconv.Itoa(i), "body": "Notes of 1." + strconv.Itoa(i),
			"html_url":     "https://github.com/acme/deck/releases/tag/v1." + strconv.Itoa(i) + ".0",
			"published_at": "2026-10-0" + strconv.Itoa(i) + "T12:00:00Z",
			"draft":        false, "prerelease": i == 3,
			"author": map[string]any{"login": "octocat"},
			"assets": []map[string]any{{
				"name": "sshdeck_linux_arm64.tar.gz", "size": 4_200_000 + i, "download_count": 10 * i,
				"browser_download_url": "https://github.com/acme/deck/releases/download/v1." + strconv.Itoa(i) + ".0/sshdeck_linux_arm64.tar.gz",
				"content_type":         "application/gzip",
			}},
		})
	}
	// A draft: no name, no notes, not published.
	g.releases = append(g.releases, map[string]any{
		"id": 2000, "tag_name": "v2.0.0-rc.1", "name": nil, "body": nil, "html_url": "https://github.com/acme/deck/releases/tag/untagged-1",
		"published_at": nil, "draft": true, "prerelease": true, "assets": []any{},
	})
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	g.URL = g.srv.URL
	return g
}

func (g *GitHub) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	if gate := g.gate; gate != nil {
		g.held++
		g.mu.Unlock()
		<-gate
		g.mu.Lock()
		g.held--
	}
	defer g.mu.Unlock()
	if r.URL.Path != "/repos/acme/deck/releases" || r.Header.Get("Accept") != "application/vnd.github+json" {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`))
		return
	}
	g.calls = append(g.calls, r.URL.RawQuery)
	if g.status != 0 {
		for k, v := range g.header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(g.status)
		w.Write([]byte(g.body))
		return
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	from := min((page-1)*perPage, len(g.releases))
	to := min(from+perPage, len(g.releases))
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(g.releases[from:to])
}

// Fail makes GitHub answer status with the headers (name, value, …) and
// body; status 0 heals it.
func (g *GitHub) Fail(status int, body string, header ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.status, g.body, g.header = status, body, http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		g.header.Set(header[i], header[i+1])
	}
}

// Hold makes every request wait, unanswered, until release is called:
// Held counts the requests waiting meanwhile.
func (g *GitHub) Hold() (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gate := make(chan struct{})
	g.gate = gate
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.gate = nil
			g.mu.Unlock()
			close(gate)
		})
	}
}

// Held returns how many requests are waiting for Hold's release.
func (g *GitHub) Held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// Calls returns how many requests the releases endpoint had.
func (g *GitHub) Calls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.calls)
}

// LastQuery returns the query string of the last request.
func (g *GitHub) LastQuery() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.calls) == 0 {
		return ""
	}
	return g.calls[len(g.calls)-1]
}

// Close stops answering: GitHub cannot be reached.
func (g *GitHub) Close() { g.srv.Close() }

// Alerts is a remote alerts list: a JSON array ([] at first), or a failure.
type Alerts struct {
	// URL is the list's address.
	URL string
	srv *httptest.Server

	mu     sync.Mutex
	body   string
	status int
	calls  int
}

// StartAlerts serves the list until the test ends.
func StartAlerts(t testing.TB) *Alerts {
	a := NewAlerts()
	t.Cleanup(a.Close)
	return a
}

// NewAlerts serves the list until Close.
func NewAlerts() *Alerts {
	a := &Alerts{body: "[]", status: http.StatusOK}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.calls++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		w.Write([]byte(a.body))
	}))
	a.URL = a.srv.URL
	return a
}

// Set makes the list answer status with body.
func (a *Alerts) Set(status int, body string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status, a.body = status, body
}

// Calls returns how many requests the list had.
func (a *Alerts) Calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// Close stops answering: the list cannot be reached.
func (a *Alerts) Close() { a.srv.Close() }
