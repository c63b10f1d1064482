package accounts

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func ptr[T any](v T) *T { return &v }

// TestCreateToken: a new token never grants more than the calling one,
// and its life is bounded.
func TestCreateToken(t *testing.T) {
	f := newFixture(t)
	f.user(t, "alice", pwAlice, false)
	login := f.caller(t, f.login(t, "alice", pwAlice, ""))
	// A narrower caller: a token of two scopes.
	narrowScopes := []sshdeck.Scope{sshdeck.ScopeHostsRead, sshdeck.ScopeTokens}
	made, err := try(f.svc.CreateToken(t.Context(), login, NewToken{Name: "ci", Scopes: ptr([]string{"tokens", "hosts:read"})}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(made.Scopes, narrowScopes) {
		t.Fatalf("scopes %v, want %v", made.Scopes, narrowScopes)
	}
	narrow := sshdeck.Principal{UserID: login.UserID, TokenID: made.ID, Scopes: made.Scopes}

	cases := []struct {
		name   string
		caller sshdeck.Principal
		req    NewToken
		code   sshdeck.Code
		// mention is what the error's message must name.
		mention string
		scopes  []sshdeck.Scope
	}{
		{name: "scopes left out: the caller's", caller: narrow, req: NewToken{Name: "a"}, scopes: narrowScopes},
		{name: "scopes left out, login token: the user's", caller: login, req: NewToken{Name: "b"}, scopes: sshdeck.UserScopes(false)},
		{name: "a subset", caller: narrow, req: NewToken{Name: "t", Scopes: ptr([]string{"hosts:read", "hosts:read"})}, scopes: []sshdeck.Scope{sshdeck.ScopeHostsRead}},
		{name: "unknown scope", caller: login, req: NewToken{Name: "t", Scopes: ptr([]string{"hosts:read", "hosts:delete"})}, code: sshdeck.Invalid, mention: "hosts:delete"},
		{name: "a scope the caller lacks", caller: narrow, req: NewToken{Name: "t", Scopes: ptr([]string{"hosts:read", "hosts:write"})}, code: sshdeck.Forbidden, mention: "hosts:write"},
		{name: "admin, by a non-admin", caller: login, req: NewToken{Name: "t", Scopes: ptr([]string{"admin"})}, code: sshdeck.Forbidden, mention: "admin"},
		{name: "an empty list", caller: login, req: NewToken{Name: "t", Scopes: ptr([]string{})}, code: sshdeck.Invalid},
		{name: "negative ttl", caller: login, req: NewToken{Name: "t", TTL: ptr(int64(-1))}, code: sshdeck.Invalid},
		{name: "ttl over the bound", caller: login, req: NewToken{Name: "t", TTL: ptr(int64(MaxTokenTTL/time.Second) + 1)}, code: sshdeck.Invalid},
		{name: "a name over the bound", caller: login, req: NewToken{Name: strings.Repeat("n", 129)}, code: sshdeck.Invalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(f.tokens(t, login.UserID))
			got, err := try(f.svc.CreateToken(t.Context(), c.caller, c.req))
			if c.code != "" {
				wantCode(t, c.name, err, c.code)
				if !strings.Contains(sshdeck.ErrorMessage(err), c.mention) {
					t.Fatalf("%q does not name %q", err, c.mention)
				}
				if after := len(f.tokens(t, login.UserID)); after != before {
					t.Fatalf("a refused token was stored: %d tokens, were %d", after, before)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Scopes, c.scopes) || !slices.Equal(f.token(t, login.UserID, got.ID).Scopes, c.scopes) {
				t.Fatalf("scopes %v, want %v", got.Scopes, c.scopes)
			}
		})
	}
}

// tokens returns the user's stored tokens.
func (f *fixture) tokens(tb testing.TB, userID string) []*sshdeck.Token {
	tb.Helper()
	tokens, err := f.store.Tokens(tb.Context(), userID)
	if err != nil {
		tb.Fatal(err)
	}
	return tokens
}

// TestTokenTTL: 30 days when left out, the seconds given, 0 for never, up
// to MaxTokenTTL.
func TestTokenTTL(t *testing.T) {
	f := newFixture(t)
	f.user(t, "alice", pwAlice, false)
	caller := f.caller(t, f.login(t, "alice", pwAlice, ""))
	now := f.clock.Now()
	for _, c := range []struct {
		ttl  *int64
		want time.Time // zero: never
	}{
		{nil, now.Add(DefaultTokenTTL)},
		{ptr(int64(0)), time.Time{}},
		{ptr(int64(90)), now.Add(90 * time.Second)},
		{ptr(int64(MaxTokenTTL / time.Second)), now.Add(MaxTokenTTL)},
	} {
		got, err := try(f.svc.CreateToken(t.Context(), caller, NewToken{Name: "t", TTL: c.ttl}))
		if err != nil {
			t.Fatal(err)
		}
		stored := f.token(t, caller.UserID, got.ID)
		if c.want.IsZero() {
			if got.ExpiresAt != nil || !stored.ExpiresAt.IsZero() {
				t.Fatalf("ttl 0: expires at %v (stored %v), want never", got.ExpiresAt, stored.ExpiresAt)
			}
			continue
		}
		if got.ExpiresAt == nil || !got.ExpiresAt.Equal(c.want) || !stored.ExpiresAt.Equal(c.want) {
			t.Fatalf("ttl %v: expires at %v (stored %v), want %v", *ptrOr(c.ttl, -1), got.ExpiresAt, stored.ExpiresAt, c.want)
		}
	}
}

func ptrOr[T any](p *T, v T) *T {
	if p == nil {
		return &v
	}
	return p
}

// TestTokensAndRevoke: the caller lists their own tokens, with the scopes
// they grant now and never a secret, and revokes their own only.
func TestTokensAndRevoke(t *testing.T) {
	f := newFixture(t)
	root := f.user(t, "root", pwAdmin, true)
	bob := f.user(t, "bob", pwBob, false)
	rootLogin := f.login(t, "root", pwAdmin, "")
	rootCaller := f.caller(t, rootLogin)
	bobCaller := f.caller(t, f.login(t, "bob", pwBob, ""))
	f.clock.Add(time.Second) // the list is by creation time
	made, err := try(f.svc.CreateToken(t.Context(), rootCaller, NewToken{Name: "admin-ci", Scopes: ptr([]string{"admin", "hosts:read"})}))
	if err != nil {
		t.Fatal(err)
	}

	list, err := try(f.svc.Tokens(t.Context(), rootCaller))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != rootLogin.ID || list[1].ID != made.ID || list[1].Name != "admin-ci" {
		t.Fatalf("tokens %+v, want the login's then admin-ci", list)
	}
	js, _ := json.Marshal(list)
	if strings.Contains(string(js), made.Token) || strings.Contains(string(js), rootLogin.Token) || strings.Contains(string(js), auth.HashToken(made.Token)) {
		t.Fatal("the list shows a secret or its hash")
	}
	// Without the admin flag, the token grants what is left.
	if _, err := f.admin.SetAdmin(t.Context(), "root", false); err != nil {
		t.Fatal(err)
	}
	list, err = try(f.svc.Tokens(t.Context(), rootCaller))
	if err != nil {
		t.Fatal(err)
	}
	if want := []sshdeck.Scope{sshdeck.ScopeHostsRead}; !slices.Equal(list[1].Scopes, want) {
		t.Fatalf("effective scopes %v, want %v", list[1].Scopes, want)
	}
	if want := sshdeck.UserScopes(false); !slices.Equal(list[0].Scopes, want) {
		t.Fatalf("effective scopes of the login token %v, want %v", list[0].Scopes, want)
	}

	wantCode(t, "bob revokes root's token", noted(f.svc.RevokeToken(t.Context(), bobCaller, made.ID)), sshdeck.NotFound)
	wantCode(t, "an absent token", noted(f.svc.RevokeToken(t.Context(), bobCaller, "tok_absent")), sshdeck.NotFound)
	if f.token(t, root.ID, made.ID).Revoked {
		t.Fatal("bob revoked root's token")
	}
	if err := noted(f.svc.RevokeToken(t.Context(), rootCaller, made.ID)); err != nil {
		t.Fatal(err)
	}
	if !f.token(t, root.ID, made.ID).Revoked || f.token(t, root.ID, rootLogin.ID).Revoked {
		t.Fatal("revoking one token: want it revoked, and it alone")
	}
	list, _ = try(f.svc.Tokens(t.Context(), rootCaller))
	if !list[1].Revoked || list[0].Revoked {
		t.Fatalf("list after revoking: %+v", list)
	}
	// Logging out: the calling token itself.
	if err := noted(f.svc.RevokeToken(t.Context(), rootCaller, rootLogin.ID)); err != nil {
		t.Fatal(err)
	}
	if !f.token(t, root.ID, rootLogin.ID).Revoked {
		t.Fatal("the calling token is not revoked")
	}
	if toks := f.tokens(t, bob.ID); len(toks) != 1 || toks[0].Revoked {
		t.Fatalf("bob's tokens changed: %+v", toks)
	}
}
