package storetest

import (
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func newToken(id, userID string, created time.Time) *sshdeck.Token {
	return &sshdeck.Token{ID: id, UserID: userID, Name: "laptop " + id, Hash: "hash-" + id, CreatedAt: created}
}

func sameToken(t *testing.T, got, want *sshdeck.Token, what string) {
	t.Helper()
	same(t, got, want, func(k *sshdeck.Token) {
		k.CreatedAt, k.ExpiresAt, k.RevokedAt = ms(k.CreatedAt), ms(k.ExpiresAt), ms(k.RevokedAt)
	}, what)
}

func testTokenCreateAndFind(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	expiring := newToken("t-1", "u-1", base)
	expiring.ExpiresAt = base.Add(30 * 24 * time.Hour)
	forever := newToken("t-2", "u-1", base.Add(time.Second))
	for _, k := range []*sshdeck.Token{expiring, forever} {
		must(t, s.CreateToken(ctx, k), "CreateToken")
	}
	for _, k := range []*sshdeck.Token{expiring, forever} {
		got, err := s.TokenByHash(ctx, k.Hash)
		must(t, err, "TokenByHash")
		sameToken(t, got, k, "TokenByHash("+k.Hash+")")
		if got.Revoked || !got.RevokedAt.IsZero() {
			t.Fatalf("new token %s is revoked: %+v", k.ID, got)
		}
	}
}

func testTokenConflict(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	k := newToken("t-1", "u-1", base)
	must(t, s.CreateToken(ctx, k), "CreateToken")

	sameID := newToken("t-1", "u-1", base)
	sameID.Hash = "hash-other"
	wantCode(t, s.CreateToken(ctx, sameID), sshdeck.Conflict, "CreateToken with an existing id")
	_, err := s.TokenByHash(ctx, "hash-other")
	wantCode(t, err, sshdeck.NotFound, "TokenByHash of the refused token")

	sameHash := newToken("t-2", "u-1", base)
	sameHash.Hash = k.Hash
	wantCode(t, s.CreateToken(ctx, sameHash), sshdeck.Conflict, "CreateToken with an existing hash")

	got, err := s.TokenByHash(ctx, k.Hash)
	must(t, err, "TokenByHash")
	sameToken(t, got, k, "TokenByHash after the refused creates")
	tokens, err := s.Tokens(ctx, "u-1")
	must(t, err, "Tokens")
	if len(tokens) != 1 {
		t.Fatalf("Tokens: got %d tokens, want 1", len(tokens))
	}
}

func testTokenRevoke(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	k := newToken("t-1", "u-1", base)
	must(t, s.CreateToken(ctx, k), "CreateToken")

	first := base.Add(time.Hour)
	got, err := s.RevokeToken(ctx, k.ID, first)
	must(t, err, "RevokeToken")
	want := *k
	want.Revoked, want.RevokedAt = true, first
	sameToken(t, got, &want, "RevokeToken")

	got, err = s.RevokeToken(ctx, k.ID, first.Add(time.Hour))
	must(t, err, "RevokeToken again")
	sameToken(t, got, &want, "RevokeToken again (the first time is kept)")

	got, err = s.TokenByHash(ctx, k.Hash)
	must(t, err, "TokenByHash")
	sameToken(t, got, &want, "TokenByHash of the revoked token")
}

func testTokensOrderedByCreation(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	// Ids in the opposite order to creation, so ordering by id is caught.
	want := []*sshdeck.Token{
		newToken("t-3", "u-1", base),
		newToken("t-2", "u-1", base.Add(time.Millisecond)),
		newToken("t-1", "u-1", base.Add(time.Hour)),
	}
	for _, i := range []int{1, 2, 0} {
		must(t, s.CreateToken(ctx, want[i]), "CreateToken")
	}
	must(t, s.CreateToken(ctx, newToken("t-9", "u-2", base)), "CreateToken of another user")

	got, err := s.Tokens(ctx, "u-1")
	must(t, err, "Tokens")
	if len(got) != len(want) {
		t.Fatalf("Tokens: got %d tokens, want %d", len(got), len(want))
	}
	for i := range want {
		sameToken(t, got[i], want[i], "Tokens["+want[i].ID+"]")
	}
	none, err := s.Tokens(ctx, "u-none")
	must(t, err, "Tokens of a user without tokens")
	if len(none) != 0 {
		t.Fatalf("Tokens of a user without tokens: got %d", len(none))
	}
}

func testTokenNotFound(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	_, err := s.TokenByHash(ctx, "hash-none")
	wantCode(t, err, sshdeck.NotFound, "TokenByHash")
	_, err = s.RevokeToken(ctx, "t-none", base)
	wantCode(t, err, sshdeck.NotFound, "RevokeToken")
}
