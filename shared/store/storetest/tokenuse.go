package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// testTokenScopes: a token's scopes come back as they were made, in their
// order, from every read of a token (TokenByHash, Tokens, the answers of
// RevokeToken and RevokeUserTokens); nil, a token of before scopes, stays
// nil. An empty list that is not nil is refused: stored, it would read back
// as nil, every scope of the user.
func testTokenScopes(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	legacy := newToken("t-1", "u-1", base)
	scoped := newToken("t-2", "u-1", base.Add(time.Second))
	// Not in AllScopes order: the store keeps the order it is given.
	scoped.Scopes = []sshdeck.Scope{sshdeck.ScopeTokens, sshdeck.ScopeFilesRead, sshdeck.ScopeHostsRead}
	scoped.LastUsedAt = base.Add(time.Minute)
	must(t, s.CreateToken(ctx, legacy), "CreateToken without scopes")
	must(t, s.CreateToken(ctx, scoped), "CreateToken with scopes")

	for _, k := range []*sshdeck.Token{legacy, scoped} {
		got, err := s.TokenByHash(ctx, k.Hash)
		must(t, err, "TokenByHash")
		sameToken(t, got, k, "TokenByHash("+k.ID+")")
	}
	if got, _ := s.TokenByHash(ctx, legacy.Hash); got.Scopes != nil || !got.LastUsedAt.IsZero() {
		t.Fatalf("a token made without scopes, never used: got scopes %#v, lastUsedAt %v; want nil and zero", got.Scopes, got.LastUsedAt)
	}
	listed, err := s.Tokens(ctx, "u-1")
	must(t, err, "Tokens")
	if len(listed) != 2 {
		t.Fatalf("Tokens: got %d tokens, want 2", len(listed))
	}
	sameToken(t, listed[0], legacy, "Tokens[t-1]")
	sameToken(t, listed[1], scoped, "Tokens[t-2]")

	revoked, err := s.RevokeToken(ctx, scoped.ID, base.Add(time.Hour))
	must(t, err, "RevokeToken")
	if !slices.Equal(revoked.Scopes, scoped.Scopes) || !ms(revoked.LastUsedAt).Equal(ms(scoped.LastUsedAt)) {
		t.Fatalf("RevokeToken answered scopes %v, lastUsedAt %v; want %v, %v", revoked.Scopes, revoked.LastUsedAt, scoped.Scopes, scoped.LastUsedAt)
	}
	all, err := s.RevokeUserTokens(ctx, "u-1", base.Add(time.Hour), "")
	must(t, err, "RevokeUserTokens")
	if len(all) != 1 || all[0].ID != legacy.ID || all[0].Scopes != nil {
		t.Fatalf("RevokeUserTokens answered %+v, want t-1 alone, without scopes", all)
	}

	empty := newToken("t-3", "u-1", base)
	empty.Scopes = []sshdeck.Scope{}
	wantCode(t, s.CreateToken(ctx, empty), sshdeck.Invalid, "CreateToken with an empty list of scopes")
	must(t, s.CreateUser(ctx, newUser("u-2", "bob", false)), "CreateUser")
	empty.UserID = "u-2"
	wantCode(t, s.CreateTokenWithin(ctx, empty, 10), sshdeck.Invalid, "CreateTokenWithin with an empty list of scopes")
	_, err = s.TokenByHash(ctx, empty.Hash)
	wantCode(t, err, sshdeck.NotFound, "TokenByHash of the refused token")
}

// testTokenTouch: TouchToken moves LastUsedAt forward and never back (an
// earlier or equal time leaves it), changes nothing else of the token, a
// revoked one included, and is NotFound for an unknown hash.
func testTokenTouch(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	k := newToken("t-1", "u-1", base)
	k.ExpiresAt = base.Add(24 * time.Hour)
	k.Scopes = []sshdeck.Scope{sshdeck.ScopeHostsRead}
	must(t, s.CreateToken(ctx, k), "CreateToken")

	touched := func(at time.Time, want time.Time, what string) {
		t.Helper()
		must(t, s.TouchToken(ctx, k.Hash, at), what)
		got, err := s.TokenByHash(ctx, k.Hash)
		must(t, err, "TokenByHash")
		w := *k
		w.LastUsedAt = want
		sameToken(t, got, &w, what)
	}
	first := base.Add(time.Minute)
	touched(first, first, "TouchToken of a token never used")
	touched(first.Add(-time.Millisecond), first, "TouchToken at an earlier time")
	touched(first, first, "TouchToken at the same time")
	later := first.Add(time.Minute + 7*time.Millisecond)
	touched(later, later, "TouchToken at a later time")
	// The same instant in another zone is no later.
	touched(later.UTC(), later, "TouchToken at the same instant in UTC")

	revokedAt := base.Add(time.Hour)
	_, err := s.RevokeToken(ctx, k.ID, revokedAt)
	must(t, err, "RevokeToken")
	k.Revoked, k.RevokedAt = true, revokedAt
	touched(revokedAt.Add(time.Minute), revokedAt.Add(time.Minute), "TouchToken of a revoked token")
	listed, err := s.Tokens(ctx, "u-1")
	must(t, err, "Tokens")
	if len(listed) != 1 || !listed[0].Revoked || !ms(listed[0].LastUsedAt).Equal(ms(revokedAt.Add(time.Minute))) {
		t.Fatalf("Tokens after touching the revoked token: %+v", listed)
	}

	wantCode(t, s.TouchToken(ctx, "hash-none", base), sshdeck.NotFound, "TouchToken of an unknown hash")
	if _, err := s.TokenByHash(ctx, "hash-none"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Fatalf("TouchToken of an unknown hash made a token: %v", err)
	}
}

// testTokenTouchConcurrent: touches racing in any order leave the latest
// time, whichever lands last.
func testTokenTouchConcurrent(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	k := newToken("t-1", "u-1", base)
	must(t, s.CreateToken(ctx, k), "CreateToken")
	const racers = 16
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, n := range rand.Perm(racers) {
		wg.Go(func() {
			<-start
			errs[i] = s.TouchToken(ctx, k.Hash, base.Add(time.Duration(n+1)*time.Second))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		must(t, err, fmt.Sprintf("racing TouchToken %d", i))
	}
	got, err := s.TokenByHash(ctx, k.Hash)
	must(t, err, "TokenByHash")
	if want := base.Add(racers * time.Second); !ms(got.LastUsedAt).Equal(ms(want)) {
		t.Fatalf("LastUsedAt after %d racing touches: got %v, want the latest, %v", racers, got.LastUsedAt, want)
	}
}
