// Package client is the typed Go client of both sshdeck services: the API
// at {base_url} and the tunnel service at {tunnel_url} (API.md). The
// sshdeck command's client commands (login, host, tunnel, forward) and the
// project's end-to-end tests use it, so that what the tests prove is what
// users run.
//
// Every failed call returns an *Error: the contract's error body with its
// HTTP status and request id. It unwraps to the *sshdeck.Error of the same
// code, so that sshdeck.ErrorCode and sshdeck.RetryAfter read it as they
// read the service's own errors.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Client calls one deployment with one token. Its zero HTTP is
// http.DefaultClient.
type Client struct {
	// BaseURL is {base_url}: http(s)://host[:port][/stage], no trailing
	// slash needed.
	BaseURL string
	// TunnelURL is {tunnel_url}; the tunnel calls and forwards fail
	// without it.
	TunnelURL string
	// Token is the bearer token; empty for Login and the public routes.
	Token string
	HTTP  *http.Client
}

// Error is a failed call: the contract's error body, its status, the
// answer's X-Request-Id and, on a 429, its Retry-After.
type Error struct {
	Status     int
	Code       sshdeck.Code
	Message    string
	RequestID  string
	RetryAfter time.Duration
	// Body is the raw answer (up to maxErrorBody), for the answers that
	// carry more than the error: a refused import's per-item results.
	Body []byte
}

func (e *Error) Error() string { return e.Message }

// Unwrap is the same error as the services' own type.
func (e *Error) Unwrap() error {
	return &sshdeck.Error{Code: e.Code, Message: e.Message, RetryAfter: e.RetryAfter}
}

// ErrNoTunnelURL is the error of a tunnel call on a Client without
// TunnelURL.
var ErrNoTunnelURL = errors.New("no tunnel service URL: log in with --tunnel-url")

// IsUnauthorized reports whether err is a 401: a token missing, expired
// or revoked, which only a new login mends.
func IsUnauthorized(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusUnauthorized
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// AuthHeader is the header every authenticated call sends.
func (c *Client) AuthHeader() http.Header {
	h := http.Header{}
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	return h
}

// endpoint joins a service's base URL, a path and a query.
func endpoint(base, path string, query url.Values) (string, error) {
	if base == "" {
		return "", errors.New("no URL to call")
	}
	u, err := url.Parse(strings.TrimSuffix(base, "/") + path)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL", base)
	}
	if len(query) > 0 {
		u.RawQuery = query.Encode()
	}
	return u.String(), nil
}

// call is one request: to base (BaseURL or TunnelURL) with a JSON body
// (in, unless nil; an io.Reader is sent as it is, with contentType), and
// the JSON answer decoded into out (unless nil). It returns the answer's
// headers, for paging. header adds request headers (If-Match); next, when
// set, is the absolute URL of a list's next page (a Link), which replaces
// path and query.
type call struct {
	base, method, path string
	query              url.Values
	next               string
	header             http.Header
	in                 any
	contentType        string
	out                any
}

// do sends the call and decodes its answer; a non-2xx answer is an *Error.
func (c *Client) do(ctx context.Context, k call) (http.Header, error) {
	resp, err := c.send(ctx, k)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if k.out != nil {
		if err := json.NewDecoder(resp.Body).Decode(k.out); err != nil {
			return nil, fmt.Errorf("%s %s: the answer does not decode: %w", k.method, k.path, err)
		}
	}
	return resp.Header, nil
}

// send sends the call and returns a 2xx answer with its body unread (the
// caller closes it); a non-2xx answer is an *Error.
func (c *Client) send(ctx context.Context, k call) (*http.Response, error) {
	u := k.next
	if u == "" {
		var err error
		if u, err = endpoint(k.base, k.path, k.query); err != nil {
			return nil, err
		}
	}
	var body io.Reader
	contentType := k.contentType
	switch in := k.in.(type) {
	case nil:
	case io.Reader:
		body = in
	default:
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body, contentType = bytes.NewReader(b), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, k.method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header = c.AuthHeader()
	for name, values := range k.header {
		req.Header[name] = values
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, ErrorOf(resp)
	}
	return resp, nil
}

// maxErrorBody bounds the error body read: the API's largest JSON answer
// that is an error (a refused import of 1000 hosts, one result each).
const maxErrorBody = 1 << 20

// decodeJSON decodes a whole JSON body.
func decodeJSON(b []byte, v any) error { return json.Unmarshal(b, v) }

// ErrorOf reads a non-2xx answer's error body into an *Error. An answer
// that is not the contract's body (a proxy's page) keeps its status line as
// the message.
func ErrorOf(resp *http.Response) *Error {
	e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	var b struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e.Body = raw
	if json.Unmarshal(raw, &b) == nil && b.Error != "" {
		e.Message, e.Code = b.Error, sshdeck.Code(b.Code)
	} else {
		e.Message, e.Code = fmt.Sprintf("%s %s: %s", resp.Request.Method, resp.Request.URL.Path, resp.Status), codeOf(resp.StatusCode)
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// codeOf is the contract's code of a status, for answers without a body.
func codeOf(status int) sshdeck.Code {
	switch status {
	case 400:
		return sshdeck.Invalid
	case 401:
		return sshdeck.Unauthorized
	case 403:
		return sshdeck.Forbidden
	case 404:
		return sshdeck.NotFound
	case 409:
		return sshdeck.Conflict
	case 413:
		return sshdeck.TooLarge
	case 429:
		return sshdeck.RateLimited
	case 502:
		return sshdeck.Upstream
	}
	return sshdeck.Internal
}
