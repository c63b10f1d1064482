package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/client"
	"github.com/sshdeck/sshdeck/shared/accounts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// TestErrors: a failed call is an *Error with the contract's code and the
// answer's request id, which sshdeck.ErrorCode reads through Unwrap; a 401
// is IsUnauthorized; a 429 carries Retry-After.
func TestErrors(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	c := s.client(s.adminToken)

	_, err := c.Host(ctx, 4242)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != sshdeck.NotFound || e.RequestID == "" || e.Message == "" {
		t.Fatalf("a missing host: %#v", err)
	}
	if sshdeck.ErrorCode(err) != sshdeck.NotFound || client.IsUnauthorized(err) {
		t.Errorf("ErrorCode %q, IsUnauthorized %v", sshdeck.ErrorCode(err), client.IsUnauthorized(err))
	}

	for _, token := range []string{"", "sshdeck_" + strings.Repeat("A", 43)} {
		_, err := s.client(token).ListHosts(ctx)
		if !client.IsUnauthorized(err) || sshdeck.ErrorCode(err) != sshdeck.Unauthorized {
			t.Errorf("token %q: %v", token, err)
		}
	}

	// Five wrong passwords lock the name out: the sixth attempt is a 429
	// that says when to try again.
	anon := s.client("")
	for range 5 {
		if _, err := anon.Login(ctx, accounts.LoginRequest{Username: "admin", Password: "wrong"}); !client.IsUnauthorized(err) {
			t.Fatalf("a wrong password: %v", err)
		}
	}
	_, err = anon.Login(ctx, accounts.LoginRequest{Username: "admin", Password: "wrong"})
	if !errors.As(err, &e) || e.Status != 429 || e.Code != sshdeck.RateLimited || e.RetryAfter <= 0 || sshdeck.RetryAfter(err) != e.RetryAfter {
		t.Fatalf("the sixth attempt: %#v", err)
	}

	if err := (&client.Client{BaseURL: s.api.URL}).Disconnect(ctx, "x"); !errors.Is(err, client.ErrNoTunnelURL) {
		t.Errorf("a tunnel call without TunnelURL: %v", err)
	}
	if _, err := (&client.Client{BaseURL: "ftp://example.com"}).ListHosts(ctx); err == nil || !strings.Contains(err.Error(), "not an http(s) URL") {
		t.Errorf("an ftp URL: %v", err)
	}
}

// TestPagingRefusesAForeignLink: a next page on another origin would get
// the token; the iterator stops with an error instead.
func TestPagingRefusesAForeignLink(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the token went to the other server: %s", r.Header.Get("Authorization"))
	}))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "<"+other.URL+"/ssh/db/host?limit=1&cursor=x>; rel=\"next\"")
		w.Write([]byte(`[{"id":1}]`))
	}))
	defer api.Close()
	c := &client.Client{BaseURL: api.URL, Token: "secret"}
	n := 0
	var last error
	for _, err := range c.Hosts(context.Background(), 1) {
		n++
		last = err
	}
	if n != 2 || last == nil || !strings.Contains(last.Error(), "not followed") {
		t.Errorf("%d items, last error %v", n, last)
	}
}
