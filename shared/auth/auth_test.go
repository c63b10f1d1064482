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
	reads, touches int
}

func (s *countingStore) TokenByHash(ctx context.Context, hash string) (*sshdeck.Token, error) {
	s.reads++
	return s.Store.TokenByHash(ctx, hash)
}

func (s *countingStore) TouchToken(ctx context.Context, hash string, at time.Time) error {
	s.touches++
	return s.Store.TouchToken(ctx, hash, at)
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
		if err != nil || p.UserID != u.ID || !p.Admin() {
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

// TestAuthenticatorTouchesOncePerMinute: lastUsedAt is written by a store
// read of the token when the stored time is a minute old or more: never by
// a cache hit, at most once a minute.
func TestAuthenticatorTouchesOncePerMinute(t *testing.T) {
	store, authn, admin, now := setup(t)
	ctx := t.Context()
	admin.AddUser(ctx, "ops", false)
	bearer, tok, _ := admin.CreateToken(ctx, "ops", "", 0)
	lastUsed := func() time.Time {
		got, err := store.Token(ctx, tok.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.LastUsedAt
	}
	if !lastUsed().IsZero() {
		t.Fatal("a new token has a lastUsedAt")
	}
	start := *now
	for range 3 {
		authn.Authenticate(ctx, "Bearer "+bearer)
	}
	if store.touches != 1 || !lastUsed().Equal(start) {
		t.Fatalf("after the first use: %d touches, lastUsedAt %v, want 1 and %v", store.touches, lastUsed(), start)
	}
	*now = now.Add(CacheTTL) // a store read, 30 s after the touch: none
	authn.Authenticate(ctx, "Bearer "+bearer)
	if store.reads != 2 || store.touches != 1 {
		t.Fatalf("30 s later: %d reads, %d touches, want 2 and 1", store.reads, store.touches)
	}
	*now = now.Add(CacheTTL) // a minute after the touch: another
	authn.Authenticate(ctx, "Bearer "+bearer)
	if store.touches != 2 || !lastUsed().Equal(*now) {
		t.Fatalf("a minute later: %d touches, lastUsedAt %v, want 2 and %v", store.touches, lastUsed(), *now)
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
	if bearer, tok, err := admin.Bootstrap(ctx, "admin", time.Hour); err != nil || !WellFormed(bearer) || tok == nil || !strings.HasPrefix(tok.ID, "tok_") || tok.Name != "bootstrap" {
		t.Fatalf("Bootstrap on an empty store = %q, %+v, %v", bearer, tok, err)
	}
	if bearer, tok, err := admin.Bootstrap(ctx, "admin", time.Hour); err != nil || bearer != "" || tok != nil {
		t.Fatalf("second Bootstrap = %q, %+v, %v", bearer, tok, err)
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

// TestDisabledUser: disabling a user refuses its cached tokens at once and
// revokes them; enabling it again gives none back, and a new token works;
// a disabled user gets no token.
func TestDisabledUser(t *testing.T) {
	_, authn, admin, _ := setup(t)
	ctx := context.Background()
	admin.AddUser(ctx, "ops", false)
	admin.AddUser(ctx, "dev", false)
	bearer, _, _ := admin.CreateToken(ctx, "ops", "laptop", 0)
	admin.CreateToken(ctx, "ops", "ci", time.Hour)
	other, _, _ := admin.CreateToken(ctx, "dev", "", 0)
	for _, b := range []string{bearer, other} {
		if _, err := authn.Authenticate(ctx, "Bearer "+b); err != nil {
			t.Fatal(err)
		}
	}
	u, revoked, err := admin.SetDisabled(ctx, "ops", true)
	if err != nil || !u.Disabled || len(revoked) != 2 {
		t.Fatalf("SetDisabled = %+v, %d revoked, %v", u, len(revoked), err)
	}
	if _, err := authn.Authenticate(ctx, "Bearer "+bearer); sshdeck.ErrorCode(err) != sshdeck.Unauthorized {
		t.Fatalf("a disabled user's cached token: %v", err)
	}
	if _, err := authn.Authenticate(ctx, "Bearer "+other); err != nil {
		t.Fatalf("another user's token after the disable: %v", err)
	}
	if _, _, err := admin.CreateToken(ctx, "ops", "", 0); sshdeck.ErrorCode(err) != sshdeck.Conflict || !strings.Contains(err.Error(), "disabled") {
		t.Fatalf("a token for a disabled user: %v", err)
	}
	if u, revoked, err := admin.SetDisabled(ctx, "ops", false); err != nil || u.Disabled || len(revoked) != 0 {
		t.Fatalf("enable = %+v, %v, %v", u, revoked, err)
	}
	if _, err := authn.Authenticate(ctx, "Bearer "+bearer); sshdeck.ErrorCode(err) != sshdeck.Unauthorized || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("a token revoked by the disable, after the enable: %v", err)
	}
	fresh, _, err := admin.CreateToken(ctx, "ops", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authn.Authenticate(ctx, "Bearer "+fresh); err != nil {
		t.Fatalf("a new token after the enable: %v", err)
	}
	if _, _, err := admin.SetDisabled(ctx, "nobody", true); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Fatalf("disabling a missing user: %v", err)
	}
}

// TestDisabledUserInTheStore: a user disabled by another process (the
// store alone, not this Authenticator) is refused once the cache entry
// ends, even with a token that is not revoked.
func TestDisabledUserInTheStore(t *testing.T) {
	store, authn, admin, now := setup(t)
	ctx := context.Background()
	u, _ := admin.AddUser(ctx, "ops", false)
	bearer, _, _ := admin.CreateToken(ctx, "ops", "", 0)
	authn.Authenticate(ctx, "Bearer "+bearer)
	yes := true
	if _, err := store.UpdateUser(ctx, u.ID, sshdeck.UserChange{Disabled: &yes}); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(CacheTTL)
	if _, err := authn.Authenticate(ctx, "Bearer "+bearer); sshdeck.ErrorCode(err) != sshdeck.Unauthorized || !strings.Contains(err.Error(), "disabled") {
		t.Fatalf("a disabled user's token: %v", err)
	}
}

// TestSetAdmin: the admin flag reaches the cached principal at once: a
// token's admin scope counts only while its user is an admin, and a token
// made while the user was none never gains it (its scopes were the user's
// then).
func TestSetAdmin(t *testing.T) {
	_, authn, admin, _ := setup(t)
	ctx := context.Background()
	admin.AddUser(ctx, "ops", true)
	bearer, _, _ := admin.CreateToken(ctx, "ops", "", 0)
	if p, _ := authn.Authenticate(ctx, "Bearer "+bearer); !p.Admin() {
		t.Fatal("an admin's token is not admin")
	}
	if u, err := admin.SetAdmin(ctx, "ops", false); err != nil || u.Admin {
		t.Fatalf("SetAdmin(false) = %+v, %v", u, err)
	}
	if p, _ := authn.Authenticate(ctx, "Bearer "+bearer); p.Admin() {
		t.Fatal("still admin after the flag was withdrawn")
	}
	plain, _, _ := admin.CreateToken(ctx, "ops", "", 0)
	if u, err := admin.SetAdmin(ctx, "ops", true); err != nil || !u.Admin {
		t.Fatalf("SetAdmin = %+v, %v", u, err)
	}
	if p, _ := authn.Authenticate(ctx, "Bearer "+bearer); !p.Admin() {
		t.Fatal("not admin after SetAdmin")
	}
	if p, _ := authn.Authenticate(ctx, "Bearer "+plain); p.Admin() {
		t.Fatal("a token made while the user was no admin became one")
	}
	if users, err := admin.Users(ctx); err != nil || len(users) != 1 || !users[0].Admin {
		t.Fatalf("Users = %+v, %v", users, err)
	}
}

// TestTokenLimitAndList: a user has at most the limit of tokens neither
// revoked nor expired; revoking (one, or all) frees places; the lists show
// every token with its user, never a hash.
func TestTokenLimitAndList(t *testing.T) {
	_, authn, admin, now := setup(t)
	ctx := context.Background()
	admin.SetTokenLimit(2)
	admin.AddUser(ctx, "ops", false)
	admin.AddUser(ctx, "dev", false)
	_, first, _ := admin.CreateToken(ctx, "ops", "a", time.Minute)
	*now = now.Add(time.Second)
	bearer, _, err := admin.CreateToken(ctx, "ops", "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := admin.CreateToken(ctx, "ops", "c", 0); sshdeck.ErrorCode(err) != sshdeck.LimitExceeded || !strings.Contains(err.Error(), "tokens per user") {
		t.Fatalf("a third token under a limit of 2: %v", err)
	}
	*now = now.Add(time.Minute) // the first has expired
	if _, _, err := admin.CreateToken(ctx, "ops", "c", 0); err != nil {
		t.Fatalf("a token after one expired: %v", err)
	}
	admin.CreateToken(ctx, "dev", "d", 0)
	list, err := admin.Tokens(ctx, "")
	if err != nil || len(list) != 4 || list[0].User != "dev" || list[1].ID != first.ID || list[1].User != "ops" {
		t.Fatalf("Tokens of everyone = %+v, %v", list, err)
	}
	if list, err := admin.Tokens(ctx, "ops"); err != nil || len(list) != 3 {
		t.Fatalf("Tokens of ops = %+v, %v", list, err)
	}
	if _, err := admin.Tokens(ctx, "nobody"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Fatalf("Tokens of a missing user: %v", err)
	}
	authn.Authenticate(ctx, "Bearer "+bearer)
	revoked, err := admin.RevokeAll(ctx, "ops")
	if err != nil || len(revoked) != 3 || !revoked[0].Revoked {
		t.Fatalf("RevokeAll = %+v, %v", revoked, err)
	}
	if _, err := authn.Authenticate(ctx, "Bearer "+bearer); sshdeck.ErrorCode(err) != sshdeck.Unauthorized {
		t.Fatalf("a cached token after RevokeAll: %v", err)
	}
	if list, _ := admin.Tokens(ctx, "dev"); len(list) != 1 || list[0].Revoked {
		t.Fatalf("RevokeAll of ops touched dev's: %+v", list)
	}
	for range 2 {
		if _, _, err := admin.CreateToken(ctx, "ops", "", 0); err != nil {
			t.Fatalf("a token after RevokeAll: %v", err)
		}
	}
}
