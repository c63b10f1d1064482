package auth

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		token, hash := NewToken()
		if !strings.HasPrefix(token, TokenPrefix) || len(token) != len(TokenPrefix)+43 || !WellFormed(token) {
			t.Fatalf("token %q", token)
		}
		if hash != HashToken(token) || len(hash) != 64 || strings.Contains(hash, token) {
			t.Fatalf("hash %q", hash)
		}
		if seen[token] {
			t.Fatal("duplicate token")
		}
		seen[token] = true
	}
	for _, bad := range []string{"", "sshdeck_", "sshdeck_short", "ghp_" + strings.Repeat("a", 43), TokenPrefix + strings.Repeat("+", 43)} {
		if WellFormed(bad) {
			t.Fatalf("%q counted as well formed", bad)
		}
	}
}

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "BEARER abc": "abc"} {
		if got, ok := BearerToken(header); !ok || got != want {
			t.Fatalf("BearerToken(%q) = %q, %t", header, got, ok)
		}
	}
	for _, header := range []string{"", "Bearer", "Bearer ", "Basic abc", "abc"} {
		if _, ok := BearerToken(header); ok {
			t.Fatalf("BearerToken(%q) ok", header)
		}
	}
}

// countingStore counts token reads of a real store.
type countingStore struct {
	*embedded.Store
	reads int
}

func (s *countingStore) TokenByHash(ctx context.Context, hash string) (*sshdeck.Token, error) {
	s.reads++
	return s.Store.TokenByHash(ctx, hash)
}

func setup(t *testing.T) (*countingStore, *Authenticator, *Admin, *time.Time) {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	cs := &countingStore{Store: store}
	authn := NewAuthenticator(cs, cs, clock)
	return cs, authn, NewAdmin(store, authn, clock), &now
}

func TestAuthenticatorCachesAndRevokesAtOnce(t *testing.T) {
	store, authn, admin, now := setup(t)
	ctx := context.Background()
	u, _ := admin.AddUser(ctx, "ops", true)
	bearer, tok, err := admin.CreateToken(ctx, "ops", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		p, err := authn.Authenticate(ctx, "Bearer "+bearer)
		if err != nil || p.UserID != u.ID || !p.Admin {
			t.Fatalf("Authenticate = %+v, %v", p, err)
		}
	}
	if store.reads != 1 {
		t.Fatalf("%d token reads for 5 requests, want 1", store.reads)
	}
	*now = now.Add(CacheTTL)
	authn.Authenticate(ctx, "Bearer "+bearer)
	if store.reads != 2 {
		t.Fatalf("cache outlived CacheTTL: %d reads", store.reads)
	}
	if _, err := admin.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := authn.Authenticate(ctx, "Bearer "+bearer); sshdeck.ErrorCode(err) != sshdeck.Unauthorized || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("revoked token: %v", err)
	}
}

func TestAuthenticatorCacheEndsAtExpiry(t *testing.T) {
	store, authn, admin, now := setup(t)
	ctx := context.Background()
	admin.AddUser(ctx, "ops", false)
	bearer, _, _ := admin.CreateToken(ctx, "ops", "", 10*time.Second)
	if _, err := authn.Authenticate(ctx, "Bearer "+bearer); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(10 * time.Second)
	if _, err := authn.Authenticate(ctx, "Bearer "+bearer); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired token: %v (reads %d)", err, store.reads)
	}
}

func TestMalformedTokensCostNoRead(t *testing.T) {
	store, authn, _, _ := setup(t)
	for _, h := range []string{"", "Bearer x", "Token abc", "Bearer sshdeck_" + strings.Repeat("!", 43)} {
		if _, err := authn.Authenticate(context.Background(), h); sshdeck.ErrorCode(err) != sshdeck.Unauthorized {
			t.Fatalf("%q: %v", h, err)
		}
	}
	if store.reads != 0 {
		t.Fatalf("%d reads for malformed tokens", store.reads)
	}
}

func TestAdmin(t *testing.T) {
	_, _, admin, _ := setup(t)
	ctx := context.Background()
	if bearer, err := admin.Bootstrap(ctx, "admin", time.Hour); err != nil || !WellFormed(bearer) {
		t.Fatalf("Bootstrap on an empty store = %q, %v", bearer, err)
	}
	if bearer, err := admin.Bootstrap(ctx, "admin", time.Hour); err != nil || bearer != "" {
		t.Fatalf("second Bootstrap = %q, %v", bearer, err)
	}
	for name, code := range map[string]sshdeck.Code{"admin": sshdeck.Conflict, "": sshdeck.Invalid, "a b": sshdeck.Invalid, strings.Repeat("x", 65): sshdeck.Invalid} {
		if _, err := admin.AddUser(ctx, name, false); sshdeck.ErrorCode(err) != code {
			t.Fatalf("AddUser(%q): %v, want %s", name, err, code)
		}
	}
	if _, _, err := admin.CreateToken(ctx, "nobody", "", time.Hour); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Fatalf("token for a missing user: %v", err)
	}
	if _, _, err := admin.CreateToken(ctx, "admin", "", -time.Hour); sshdeck.ErrorCode(err) != sshdeck.Invalid {
		t.Fatalf("negative ttl: %v", err)
	}
	if _, err := admin.RevokeToken(ctx, "tok_missing"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Fatalf("revoke missing: %v", err)
	}
}
