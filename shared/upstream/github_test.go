package upstream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/upstream"
)

// testToken is distinctive so that any error quoting it is caught.
const testToken = "ghp_Zq7TESTtokenNeverInErrors0123456789"

// fixedNow is the clock of the clients under test.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// releasesJSON is a page of releases the way the GitHub REST API answers it
// (docs.github.com/rest/releases/releases#list-releases): a published
// release with assets, a prerelease without, and a draft whose name, body
// and published_at are null, with the many fields the client ignores.
const releasesJSON = `[
  {
    "url": "https://api.github.com/repos/o/r/releases/201",
    "assets_url": "https://api.github.com/repos/o/r/releases/201/assets",
    "upload_url": "https://uploads.github.com/repos/o/r/releases/201/assets{?name,label}",
    "html_url": "https://github.com/o/r/releases/tag/v1.2.0",
    "id": 201,
    "author": {
      "login": "octocat", "id": 1, "node_id": "MDQ6VXNlcjE=",
      "avatar_url": "https://github.com/images/error/octocat_happy.gif", "gravatar_id": "",
      "url": "https://api.github.com/users/octocat", "html_url": "https://github.com/octocat",
      "type": "User", "site_admin": false
    },
    "node_id": "RE_kwDOAbCdEf4AAAABc",
    "tag_name": "v1.2.0",
    "target_commitish": "main",
    "name": "sshdeck 1.2.0",
    "draft": false,
    "immutable": false,
    "prerelease": false,
    "created_at": "2026-02-20T09:59:12Z",
    "updated_at": "2026-02-20T10:01:00Z",
    "published_at": "2026-02-20T10:00:00Z",
    "assets": [
      {
        "url": "https://api.github.com/repos/o/r/releases/assets/9001",
        "id": 9001, "node_id": "RA_kwDOAbCdEf4AAIxp",
        "name": "sshdeck_linux_amd64.tar.gz", "label": "",
        "uploader": {"login": "github-actions[bot]", "id": 41898282, "type": "Bot", "site_admin": false},
        "content_type": "application/gzip", "state": "uploaded",
        "size": 5242880, "digest": "sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "download_count": 1234,
        "created_at": "2026-02-20T10:00:30Z", "updated_at": "2026-02-20T10:00:31Z",
        "browser_download_url": "https://github.com/o/r/releases/download/v1.2.0/sshdeck_linux_amd64.tar.gz"
      },
      {
        "url": "https://api.github.com/repos/o/r/releases/assets/9002",
        "id": 9002, "node_id": "RA_kwDOAbCdEf4AAIxq",
        "name": "checksums.txt", "label": null,
        "uploader": {"login": "github-actions[bot]", "id": 41898282, "type": "Bot", "site_admin": false},
        "content_type": "text/plain", "state": "uploaded",
        "size": 96, "digest": null, "download_count": 0,
        "created_at": "2026-02-20T10:00:32Z", "updated_at": "2026-02-20T10:00:32Z",
        "browser_download_url": "https://github.com/o/r/releases/download/v1.2.0/checksums.txt"
      }
    ],
    "tarball_url": "https://api.github.com/repos/o/r/tarball/v1.2.0",
    "zipball_url": "https://api.github.com/repos/o/r/zipball/v1.2.0",
    "body": "## What's changed\r\n* Faster tunnels by @octocat in https://github.com/o/r/pull/42",
    "reactions": {"url": "https://api.github.com/repos/o/r/releases/201/reactions", "total_count": 3, "+1": 2, "-1": 0, "laugh": 0, "hooray": 1, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0},
    "mentions_count": 1
  },
  {
    "url": "https://api.github.com/repos/o/r/releases/200",
    "html_url": "https://github.com/o/r/releases/tag/v1.2.0-rc.1",
    "id": 200,
    "node_id": "RE_kwDOAbCdEf4AAAABb",
    "tag_name": "v1.2.0-rc.1",
    "target_commitish": "main",
    "name": "",
    "draft": false,
    "prerelease": true,
    "created_at": "2026-02-10T08:00:00Z",
    "published_at": "2026-02-10T08:05:00+01:00",
    "assets": [],
    "tarball_url": "https://api.github.com/repos/o/r/tarball/v1.2.0-rc.1",
    "zipball_url": "https://api.github.com/repos/o/r/zipball/v1.2.0-rc.1",
    "body": "Release candidate."
  },
  {
    "url": "https://api.github.com/repos/o/r/releases/202",
    "html_url": "https://github.com/o/r/releases/tag/untagged-5b9f0e7c1d2a",
    "id": 202,
    "node_id": "RE_kwDOAbCdEf4AAAABd",
    "tag_name": "v1.3.0",
    "target_commitish": "main",
    "name": null,
    "draft": true,
    "prerelease": false,
    "created_at": "2026-02-28T17:00:00Z",
    "published_at": null,
    "assets": [],
    "tarball_url": null,
    "zipball_url": null,
    "body": null
  }
]`

// fakeGitHub is a GitHub API at srv.URL+prefix serving the releases of o/r.
// It checks every request as GitHub would see it and answers with answer.
type fakeGitHub struct {
	srv *httptest.Server

	mu    sync.Mutex
	query []string // "page per_page" of each request
}

func (f *fakeGitHub) queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.query...)
}

func newFakeGitHub(t *testing.T, prefix, token string, answer http.HandlerFunc) *fakeGitHub {
	t.Helper()
	f := &fakeGitHub{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != prefix+"/repos/o/r/releases" {
			t.Errorf("request %s %s, want GET %s/repos/o/r/releases", r.Method, r.URL.Path, prefix)
			w.WriteHeader(http.StatusNotFound)
			return
		}
		q := r.URL.Query()
		for _, k := range []string{"page", "per_page"} {
			if _, err := strconv.Atoi(q.Get(k)); err != nil {
				t.Errorf("query %s = %q, want a number", k, q.Get(k))
			}
		}
		f.mu.Lock()
		f.query = append(f.query, q.Get("page")+" "+q.Get("per_page"))
		f.mu.Unlock()
		want := map[string]string{
			"Accept":               "application/vnd.github+json",
			"X-Github-Api-Version": "2022-11-28",
			"User-Agent":           "sshdeck",
		}
		for k, v := range want {
			if got := r.Header.Get(k); got != v {
				t.Errorf("header %s = %q, want %q", k, got, v)
			}
		}
		auth, hasAuth := r.Header.Get("Authorization"), len(r.Header.Values("Authorization")) > 0
		switch {
		case token == "" && hasAuth:
			t.Errorf("Authorization sent without a token: %q", auth)
		case token != "" && auth != "Bearer "+token:
			t.Errorf("Authorization = %q, want the bearer token", auth)
		}
		answer(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func newGitHub(t *testing.T, base, token string) *upstream.GitHub {
	t.Helper()
	g, err := upstream.NewGitHub(upstream.GitHubConfig{
		BaseURL: base, Repo: "o/r", Token: token, Timeout: 2 * time.Second,
		Now: func() time.Time { return fixedNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// answerJSON answers with status, headers (name, value pairs) and body.
func answerJSON(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

// checkError fails unless err is an error of the client of o/r that does not
// quote the token.
func checkError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if !strings.HasPrefix(err.Error(), "github releases of o/r: ") {
		t.Errorf("error %q does not start with the repository", err)
	}
	if strings.Contains(err.Error(), testToken) {
		t.Errorf("error quotes the token: %q", err)
	}
}

func ptime(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func TestReleasesDecodes(t *testing.T) {
	f := newFakeGitHub(t, "", testToken, answerJSON(200, releasesJSON))
	got, err := newGitHub(t, f.srv.URL, testToken).Releases(context.Background(), 1, 30)
	if err != nil {
		t.Fatal(err)
	}
	want := []upstream.Release{
		{
			ID: 201, Name: "sshdeck 1.2.0", TagName: "v1.2.0",
			Body:        "## What's changed\r\n* Faster tunnels by @octocat in https://github.com/o/r/pull/42",
			HTMLURL:     "https://github.com/o/r/releases/tag/v1.2.0",
			PublishedAt: ptime("2026-02-20T10:00:00Z"),
			Assets: []upstream.Asset{
				{Name: "sshdeck_linux_amd64.tar.gz", Size: 5242880, DownloadCount: 1234,
					BrowserDownloadURL: "https://github.com/o/r/releases/download/v1.2.0/sshdeck_linux_amd64.tar.gz"},
				{Name: "checksums.txt", Size: 96, DownloadCount: 0,
					BrowserDownloadURL: "https://github.com/o/r/releases/download/v1.2.0/checksums.txt"},
			},
		},
		{
			ID: 200, TagName: "v1.2.0-rc.1", Body: "Release candidate.",
			HTMLURL:     "https://github.com/o/r/releases/tag/v1.2.0-rc.1",
			PublishedAt: ptime("2026-02-10T08:05:00+01:00"), Prerelease: true,
			Assets: []upstream.Asset{},
		},
		{
			ID: 202, TagName: "v1.3.0", HTMLURL: "https://github.com/o/r/releases/tag/untagged-5b9f0e7c1d2a",
			Draft: true, Assets: []upstream.Asset{},
		},
	}
	if len(got) != len(want) {
		t.Fatalf("%d releases, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if (g.PublishedAt == nil) != (w.PublishedAt == nil) || (g.PublishedAt != nil && !g.PublishedAt.Equal(*w.PublishedAt)) {
			t.Errorf("release %d: published %v, want %v", w.ID, g.PublishedAt, w.PublishedAt)
		}
		g.PublishedAt, w.PublishedAt = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("release %d:\n got %+v\nwant %+v", w.ID, g, w)
		}
	}
	if q := f.queries(); len(q) != 1 || q[0] != "1 30" {
		t.Errorf("queries %q, want [1 30]", q)
	}
}

func TestReleasesPagination(t *testing.T) {
	f := newFakeGitHub(t, "", testToken, answerJSON(200, `[]`))
	g := newGitHub(t, f.srv.URL, testToken)
	for _, p := range [][2]int{{1, 1}, {3, 50}, {7, 100}} {
		got, err := g.Releases(context.Background(), p[0], p[1])
		if err != nil || len(got) != 0 {
			t.Fatalf("page %v: %v, %v", p, got, err)
		}
	}
	if q, want := f.queries(), []string{"1 1", "3 50", "7 100"}; !reflect.DeepEqual(q, want) {
		t.Errorf("queries %q, want %q", q, want)
	}
	for _, p := range [][2]int{{0, 30}, {-1, 30}, {1, 0}, {1, 101}} {
		_, err := g.Releases(context.Background(), p[0], p[1])
		checkError(t, err)
	}
	if n := len(f.queries()); n != 3 {
		t.Errorf("%d requests, want no more for the bad pages", n)
	}
}

func TestReleasesWithoutToken(t *testing.T) {
	f := newFakeGitHub(t, "", "", answerJSON(200, `[]`))
	if _, err := newGitHub(t, f.srv.URL, "").Releases(context.Background(), 1, 10); err != nil {
		t.Fatal(err)
	}
}

func TestReleasesBaseWithPath(t *testing.T) {
	f := newFakeGitHub(t, "/api/v3", testToken, answerJSON(200, releasesJSON))
	for _, base := range []string{f.srv.URL + "/api/v3", f.srv.URL + "/api/v3/"} {
		got, err := newGitHub(t, base, testToken).Releases(context.Background(), 2, 5)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if len(got) != 3 {
			t.Errorf("%s: %d releases, want 3", base, len(got))
		}
	}
}

func TestReleasesErrors(t *testing.T) {
	huge := func(contentLength bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body := append(append([]byte("["), bytes.Repeat([]byte(" "), upstream.MaxReleasesBody)...), ']')
			if contentLength {
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			}
			w.Write(body)
		}
	}
	rateLimited := func(status int, reset time.Time) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			var rl *upstream.RateLimitError
			if !errors.As(err, &rl) {
				t.Fatalf("%v: not a RateLimitError", err)
			}
			if rl.Status != status || !rl.Reset.Equal(reset) {
				t.Errorf("RateLimitError{%d, %v}, want {%d, %v}", rl.Status, rl.Reset, status, reset)
			}
			var se *upstream.StatusError
			if errors.As(err, &se) {
				t.Errorf("a rate limit is also a StatusError")
			}
		}
	}
	status := func(code int, message string) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			var se *upstream.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("%v: not a StatusError", err)
			}
			if se.Status != code || se.Message != message {
				t.Errorf("StatusError{%d, %q}, want {%d, %q}", se.Status, se.Message, code, message)
			}
			var rl *upstream.RateLimitError
			if errors.As(err, &rl) {
				t.Errorf("a status error is also a RateLimitError")
			}
		}
	}
	says := func(text string) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			if !strings.Contains(err.Error(), text) {
				t.Errorf("error %q does not say %q", err, text)
			}
		}
	}
	long := strings.Repeat("é", 150) // 300 bytes
	tests := []struct {
		name   string
		answer http.HandlerFunc
		check  func(*testing.T, error)
	}{
		{"not found", answerJSON(404, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest/releases/releases#list-releases","status":"404"}`),
			status(404, "Not Found")},
		{"primary rate limit", answerJSON(403,
			`{"message":"API rate limit exceeded for 203.0.113.7. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`,
			"x-ratelimit-limit", "60", "x-ratelimit-remaining", "0", "x-ratelimit-reset", "1772370000",
			"x-ratelimit-used", "60", "x-ratelimit-resource", "core"),
			rateLimited(403, time.Unix(1772370000, 0))},
		{"429 retry-after", answerJSON(429, `{"message":"Too Many Requests"}`, "retry-after", "30"),
			rateLimited(429, fixedNow.Add(30*time.Second))},
		{"secondary rate limit", answerJSON(403,
			`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`,
			"retry-after", "120", "x-ratelimit-remaining", "4321"),
			rateLimited(403, fixedNow.Add(120*time.Second))},
		{"both limits, later wins", answerJSON(403, `{}`,
			"retry-after", "10", "x-ratelimit-remaining", "0", "x-ratelimit-reset", strconv.FormatInt(fixedNow.Add(time.Hour).Unix(), 10)),
			rateLimited(403, fixedNow.Add(time.Hour))},
		{"429 without a time", answerJSON(429, ``), rateLimited(429, fixedNow.Add(60*time.Second))},
		{"403 remaining 0 without reset", answerJSON(403, `{}`, "x-ratelimit-remaining", "0"),
			rateLimited(403, fixedNow.Add(60*time.Second))},
		{"plain 403", answerJSON(403,
			`{"message":"Resource not accessible by personal access token","documentation_url":"https://docs.github.com/rest/releases/releases#list-releases","status":"403"}`,
			"x-ratelimit-remaining", "4999", "x-ratelimit-reset", "1772370000"),
			status(403, "Resource not accessible by personal access token")},
		{"bad credentials", answerJSON(401, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`),
			status(401, "Bad credentials")},
		{"500 without a body", answerJSON(500, ``), status(500, "Internal Server Error")},
		{"502 in HTML", answerJSON(502, `<html><body><h1>502 Bad Gateway</h1></body></html>`), status(502, "Bad Gateway")},
		{"long message", answerJSON(422, `{"message":"`+long+`"}`), status(422, long[:200])},
		{"server echoes the token", answerJSON(401, `{"message":"token `+testToken+` is revoked"}`),
			status(401, "token [redacted] is revoked")},
		{"malformed JSON", answerJSON(200, `[{"id": 1, "name": "x"`), says("malformed answer")},
		{"object instead of array", answerJSON(200, `{"message":"hello"}`), says("malformed answer")},
		{"wrong field type", answerJSON(200, `[{"id": "one"}]`), says("malformed answer")},
		{"over 10 MiB, chunked", huge(false), says("answer over 10 MiB")},
		{"over 10 MiB, with length", huge(true), says("answer over 10 MiB")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t, "", testToken, tt.answer)
			got, err := newGitHub(t, f.srv.URL, testToken).Releases(context.Background(), 1, 30)
			if got != nil {
				t.Errorf("releases %v with the error", got)
			}
			checkError(t, err)
			tt.check(t, err)
		})
	}
}

func TestReleasesTimeout(t *testing.T) {
	unblock := make(chan struct{})
	f := newFakeGitHub(t, "", testToken, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-unblock:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(unblock) }) // before the server closes: cleanups run last first
	g, err := upstream.NewGitHub(upstream.GitHubConfig{BaseURL: f.srv.URL, Repo: "o/r", Token: testToken, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = g.Releases(context.Background(), 1, 30)
	elapsed := time.Since(start)
	checkError(t, err)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 100ms") {
		t.Errorf("error %q, want a timeout", err)
	}
	if elapsed < 100*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("failed after %s, want about 100ms", elapsed)
	}
}

func TestReleasesTimeoutReadingBody(t *testing.T) {
	unblock := make(chan struct{})
	f := newFakeGitHub(t, "", testToken, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`[{"id": 1,`))
		w.(http.Flusher).Flush()
		select {
		case <-unblock:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(unblock) })
	g, err := upstream.NewGitHub(upstream.GitHubConfig{BaseURL: f.srv.URL, Repo: "o/r", Token: testToken, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Releases(context.Background(), 1, 30)
	checkError(t, err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %q, want a timeout", err)
	}
}

func TestReleasesCallerCancels(t *testing.T) {
	f := newFakeGitHub(t, "", testToken, answerJSON(200, `[]`))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newGitHub(t, f.srv.URL, testToken).Releases(ctx, 1, 30)
	checkError(t, err)
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "no answer within") {
		t.Errorf("error %q, want the caller's cancellation", err)
	}
}

// echoTransport fails every request with an error quoting its headers, as a
// careless proxy or middleware might.
type echoTransport struct{}

func (echoTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("refused request with headers %v", r.Header)
}

func TestReleasesTransportErrorsNeverQuoteTheToken(t *testing.T) {
	g, err := upstream.NewGitHub(upstream.GitHubConfig{Repo: "o/r", Token: testToken, HTTPClient: &http.Client{Transport: echoTransport{}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Releases(context.Background(), 1, 30)
	checkError(t, err)
	if !strings.Contains(err.Error(), "Bearer [redacted]") {
		t.Errorf("error %q, want the token redacted", err)
	}

	// A server that is gone: the plain transport error.
	f := newFakeGitHub(t, "", testToken, answerJSON(200, `[]`))
	f.srv.Close()
	_, err = newGitHub(t, f.srv.URL, testToken).Releases(context.Background(), 1, 30)
	checkError(t, err)
}

func TestReleasesPage(t *testing.T) {
	tests := []struct{ base, want string }{
		{"", "https://github.com/o/r/releases"},
		{"https://api.github.com", "https://github.com/o/r/releases"},
		{"https://API.GitHub.com/", "https://github.com/o/r/releases"},
		{"https://ghe.example/api/v3", "https://ghe.example/o/r/releases"},
		{"https://ghe.example/api/v3/", "https://ghe.example/o/r/releases"},
		{"https://ghe.example:8443/git/api/v3", "https://ghe.example:8443/git/o/r/releases"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/o/r/releases"},
		{"https://proxy.example/github/", "https://proxy.example/github/o/r/releases"},
	}
	for _, tt := range tests {
		g, err := upstream.NewGitHub(upstream.GitHubConfig{BaseURL: tt.base, Repo: "o/r"})
		if err != nil {
			t.Fatalf("%q: %v", tt.base, err)
		}
		if got := g.ReleasesPage(); got != tt.want {
			t.Errorf("%q: ReleasesPage() = %q, want %q", tt.base, got, tt.want)
		}
		if g.Repo() != "o/r" {
			t.Errorf("Repo() = %q", g.Repo())
		}
	}
}

func TestNewGitHubValidation(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		repo, base, token string
		err               string // "" when valid
	}{
		{repo: "sshdeck/sshdeck"},
		{repo: "Octo-Cat/hello.world_2-x"},
		{repo: long(39) + "/" + long(100)},
		{repo: "o/.github"},
		{repo: "o/..x"},
		{repo: "", err: `SSHDECK_RELEASES_REPO must be owner/name, got ""`},
		{repo: "sshdeck", err: `SSHDECK_RELEASES_REPO must be owner/name, got "sshdeck"`},
		{repo: "o/r/x", err: `got "o/r/x"`},
		{repo: "/r", err: `got "/r"`},
		{repo: "o/", err: `got "o/"`},
		{repo: "o/.", err: `got "o/."`},
		{repo: "o/..", err: `got "o/.."`},
		{repo: "o_o/r", err: `got "o_o/r"`},
		{repo: "o/r?x=1", err: `got "o/r?x=1"`},
		{repo: " o/r", err: `got " o/r"`},
		{repo: long(40) + "/r", err: "SSHDECK_RELEASES_REPO"},
		{repo: "o/" + long(101), err: "SSHDECK_RELEASES_REPO"},
		{repo: "o/r", base: "https://ghe.example/api/v3"},
		{repo: "o/r", base: "http://localhost:9000"},
		{repo: "o/r", base: "api.github.com", err: `SSHDECK_RELEASES_API_URL must be an absolute http(s) URL, got "api.github.com"`},
		{repo: "o/r", base: "/api/v3", err: `SSHDECK_RELEASES_API_URL must be an absolute http(s) URL, got "/api/v3"`},
		{repo: "o/r", base: "ftp://ghe.example", err: `got "ftp://ghe.example"`},
		{repo: "o/r", base: "https://", err: `got "https://"`},
		{repo: "o/r", base: "https:ghe.example", err: `got "https:ghe.example"`},
		{repo: "o/r", base: "http://[::1", err: `got "http://[::1"`},
		{repo: "o/r", base: "https://user:hunter2@ghe.example/api/v3", err: `without credentials, query or fragment, got "https://user:xxxxx@ghe.example/api/v3"`},
		{repo: "o/r", base: "https://ghe.example/api/v3?x=1", err: "without credentials, query or fragment"},
		{repo: "o/r", token: testToken},
		{repo: "o/r", token: testToken + "\n", err: "the GitHub token must not contain spaces or control characters"},
		{repo: "o/r", token: "Bearer " + testToken, err: "the GitHub token must not contain spaces"},
	}
	for _, tt := range tests {
		_, err := upstream.NewGitHub(upstream.GitHubConfig{Repo: tt.repo, BaseURL: tt.base, Token: tt.token})
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%q %q: %v", tt.repo, tt.base, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q %q: error %v, want %q", tt.repo, tt.base, err, tt.err)
		case err != nil && (strings.Contains(err.Error(), testToken) || strings.Contains(err.Error(), "hunter2")):
			t.Errorf("error quotes a secret: %v", err)
		}
	}
}
