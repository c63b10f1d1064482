package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	// DefaultGitHubAPI is the API of github.com.
	DefaultGitHubAPI = "https://api.github.com"
	// DefaultGitHubTimeout bounds a request to GitHub, body included, when
	// the configuration does not.
	DefaultGitHubTimeout = 10 * time.Second
	// MaxReleasesBody is the largest page of releases read: a page of 100
	// releases with long notes is well under it.
	MaxReleasesBody = 10 << 20
	// maxErrorBody is how much of an error answer is read for its message.
	maxErrorBody = 64 << 10
	// maxMessage is the longest GitHub message kept in a StatusError.
	maxMessage = 200
)

// validRepo tells whether repo is GitHub's owner/name: an owner (user or
// organisation) is 1 to 39 letters, digits and hyphens; a repository name is
// 1 to 100 letters, digits, dots, hyphens and underscores, and not "." or
// "..". A loop rather than a regular expression: compiling one with these
// counted repetitions took a quarter of a millisecond of every Lambda
// function's cold start (GODEBUG=inittrace=1).
func validRepo(repo string) bool {
	owner, name, ok := strings.Cut(repo, "/")
	return ok && name != "." && name != ".." &&
		repoPart(owner, 39, "-") && repoPart(name, 100, "._-")
}

// repoPart tells whether s has 1 to max bytes, each an ASCII letter or digit
// or one of extra.
func repoPart(s string, max int, extra string) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for _, c := range []byte(s) {
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && strings.IndexByte(extra, c) < 0 {
			return false
		}
	}
	return true
}

// GitHubConfig configures a GitHub releases client. Only Repo is required.
type GitHubConfig struct {
	// BaseURL is the API base, DefaultGitHubAPI when empty. It may have a
	// path, as GitHub Enterprise's https://ghe.example/api/v3 does.
	BaseURL string
	// Repo is the repository whose releases are read, as "owner/name".
	Repo string
	// Token, when set, is sent as "Authorization: Bearer <token>": it lifts
	// the rate limit of anonymous callers (60 an hour per IP) and reads
	// private repositories. It appears in no error.
	Token string
	// UserAgent is sent with every request, "sshdeck" when empty: GitHub
	// refuses requests without one.
	UserAgent string
	// Timeout bounds a whole request, reading the body included;
	// DefaultGitHubTimeout when zero or negative.
	Timeout time.Duration
	// HTTPClient sends the requests; a new client on the default transport
	// when nil. Timeout applies to it too.
	HTTPClient *http.Client
	// Now is the clock that dates rate limits given in seconds; time.Now
	// when nil. Tests set it.
	Now func() time.Time
}

// GitHub reads the releases of one repository from the GitHub REST API.
// It is safe for concurrent use.
type GitHub struct {
	base      *url.URL
	repo      string
	page      string
	token     string
	userAgent string
	timeout   time.Duration
	client    *http.Client
	now       func() time.Time
}

// NewGitHub returns a client for cfg, or an error naming the setting that is
// wrong, so that a misconfigured deployment fails at start and says why.
func NewGitHub(cfg GitHubConfig) (*GitHub, error) {
	if !validRepo(cfg.Repo) {
		return nil, fmt.Errorf("SSHDECK_RELEASES_REPO must be owner/name, got %q", cfg.Repo)
	}
	raw := cfg.BaseURL
	if raw == "" {
		raw = DefaultGitHubAPI
	}
	base, err := url.Parse(raw)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.Opaque != "" {
		return nil, fmt.Errorf("SSHDECK_RELEASES_API_URL must be an absolute http(s) URL, got %q", redactedURL(raw, base, err))
	}
	if base.User != nil || base.RawQuery != "" || base.ForceQuery || base.Fragment != "" {
		// Credentials in the URL would travel into error messages; the
		// token has its own setting.
		return nil, fmt.Errorf("SSHDECK_RELEASES_API_URL must be an http(s) URL without credentials, query or fragment, got %q", redactedURL(raw, base, nil))
	}
	if strings.ContainsFunc(cfg.Token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		// Typically a token file's trailing newline. The token is not
		// quoted: it is a secret.
		return nil, errors.New("the GitHub token must not contain spaces or control characters")
	}
	g := &GitHub{
		base:      base,
		repo:      cfg.Repo,
		token:     cfg.Token,
		userAgent: cfg.UserAgent,
		timeout:   cfg.Timeout,
		client:    cfg.HTTPClient,
		now:       cfg.Now,
	}
	if g.userAgent == "" {
		g.userAgent = "sshdeck"
	}
	if g.timeout <= 0 {
		g.timeout = DefaultGitHubTimeout
	}
	if g.client == nil {
		// No Client.Timeout: the request's context carries the deadline
		// and, unlike Client.Timeout, holds any client to it.
		g.client = &http.Client{}
	}
	if g.now == nil {
		g.now = time.Now
	}
	g.page = releasesPage(base, cfg.Repo)
	return g, nil
}

// redactedURL is a URL as it may be quoted in an error: as given, unless it
// has a password, which is masked (or, when the URL does not parse, all that
// comes before the last "@").
func redactedURL(raw string, u *url.URL, err error) string {
	if err != nil {
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			return "…" + raw[i:]
		}
		return raw
	}
	if _, ok := u.User.Password(); ok {
		return u.Redacted()
	}
	return raw
}

// releasesPage is the web page of the releases for an API base: github.com
// for its API host, the host of a GitHub Enterprise API (.../api/v3), and
// otherwise the base itself (a proxy or a test server).
func releasesPage(base *url.URL, repo string) string {
	if strings.EqualFold(base.Hostname(), "api.github.com") {
		return "https://github.com/" + repo + "/releases"
	}
	web := *base
	web.Path = strings.TrimRight(web.Path, "/")
	web.RawPath = ""
	web.Path = strings.TrimSuffix(web.Path, "/api/v3")
	return web.JoinPath(repo, "releases").String()
}

// Repo returns the repository, "owner/name".
func (g *GitHub) Repo() string { return g.repo }

// ReleasesPage returns the web page of the repository's releases, for a
// link next to the feed.
func (g *GitHub) ReleasesPage() string { return g.page }

// Release is a GitHub release, with the fields sshdeck shows.
type Release struct {
	ID int64 `json:"id"`
	// Name is empty when the release has none (null in GitHub's JSON); the
	// tag then names it.
	Name    string `json:"name"`
	TagName string `json:"tag_name"`
	// Body is the release notes in Markdown; empty when null.
	Body    string `json:"body"`
	HTMLURL string `json:"html_url"`
	// PublishedAt is nil for a draft.
	PublishedAt *time.Time `json:"published_at"`
	Prerelease  bool       `json:"prerelease"`
	Draft       bool       `json:"draft"`
	Assets      []Asset    `json:"assets"`
}

// Asset is a file attached to a release.
type Asset struct {
	Name               string `json:"name"`
	Size               int64  `json:"size"`
	DownloadCount      int64  `json:"download_count"`
	BrowserDownloadURL string `json:"browser_download_url"`
}

// Releases returns one page (from 1) of the repository's releases, newest
// first, perPage (1 to 100) to a page; fewer than perPage means it is the
// last. A rate limit is a *RateLimitError, any other failing status a
// *StatusError; every error starts with "github releases of owner/name:".
func (g *GitHub) Releases(ctx context.Context, page, perPage int) ([]Release, error) {
	if page < 1 {
		return nil, g.errorf("page must be 1 or more, got %d", page)
	}
	if perPage < 1 || perPage > 100 {
		return nil, g.errorf("per page must be 1 to 100, got %d", perPage)
	}
	reqCtx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()

	u := g.base.JoinPath("repos", g.repo, "releases")
	u.RawQuery = url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(perPage)}}.Encode()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, g.errorf("%w", err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", g.userAgent)
	if g.token != "" {
		req.Header.Set("Authorization", "Bearer "+g.token)
	}

	resp, err := g.client.Do(req)
	if err != nil {
		return nil, g.failed(ctx, reqCtx, err)
	}
	defer closeBody(resp)

	if rl := rateLimit(resp, g.now()); rl != nil {
		return nil, g.errorf("%w", rl)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, g.errorf("%w", &StatusError{Status: resp.StatusCode, Message: g.message(resp)})
	}
	body, err := readAtMost(resp, MaxReleasesBody)
	if err != nil {
		return nil, g.failed(ctx, reqCtx, err)
	}
	var releases []Release
	if err := json.Unmarshal(body, &releases); err != nil {
		return nil, g.errorf("malformed answer: %w", err)
	}
	return releases, nil
}

// failed wraps an error of sending or reading, saying so when it is this
// client's timeout rather than the caller giving up.
func (g *GitHub) failed(ctx, reqCtx context.Context, err error) error {
	if ctx.Err() == nil && reqCtx.Err() != nil {
		return g.errorf("no answer within %s: %w", g.timeout, err)
	}
	return g.errorf("%w", err)
}

// message is the explanation of an error answer: GitHub's "message" field,
// cut to maxMessage bytes, or else the status text.
func (g *GitHub) message(resp *http.Response) string {
	body, _ := readAtMost(resp, maxErrorBody)
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && strings.TrimSpace(e.Message) != "" {
		return g.redact(truncate(strings.TrimSpace(e.Message), maxMessage))
	}
	if t := http.StatusText(resp.StatusCode); t != "" {
		return t
	}
	return "status " + strconv.Itoa(resp.StatusCode)
}

// truncate cuts s to at most n bytes, on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// errorf returns an error that starts with "github releases of owner/name:",
// so that the caller's log lines say which upstream failed.
func (g *GitHub) errorf(format string, args ...any) error {
	err := fmt.Errorf("github releases of %s: "+format, append([]any{g.repo}, args...)...)
	if g.token != "" && strings.Contains(err.Error(), g.token) {
		// Only a transport or server that echoes the request gets here.
		// The chain is dropped with the token: an unwrapped cause would
		// still print it.
		return &redactedError{msg: g.redact(err.Error())}
	}
	return err
}

// redact replaces the token in s.
func (g *GitHub) redact(s string) string {
	if g.token == "" {
		return s
	}
	return strings.ReplaceAll(s, g.token, "[redacted]")
}

// redactedError is an error whose text had a secret taken out.
type redactedError struct{ msg string }

func (e *redactedError) Error() string { return e.msg }
