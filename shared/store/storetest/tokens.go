package storetest

import (
	"fmt"
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
		k.LastUsedAt = ms(k.LastUsedAt)
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

func testTokenWithinLimit(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	must(t, s.CreateUser(ctx, newUser("u-1", "alice", false)), "CreateUser")
	must(t, s.CreateUser(ctx, newUser("u-2", "bob", false)), "CreateUser")
	// Three live tokens at base: one expires an hour later, one is
	// revoked (not counted), one is bob's (not counted).
	expiring := newToken("t-1", "u-1", base)
	expiring.ExpiresAt = base.Add(time.Hour)
	must(t, s.CreateTokenWithin(ctx, expiring, 3), "CreateTokenWithin 1")
	must(t, s.CreateTokenWithin(ctx, newToken("t-2", "u-1", base), 3), "CreateTokenWithin 2")
	must(t, s.CreateTokenWithin(ctx, newToken("t-r", "u-1", base), 3), "CreateTokenWithin 3")
	_, err := s.RevokeToken(ctx, "t-r", base)
	must(t, err, "RevokeToken")
	must(t, s.CreateTokenWithin(ctx, newToken("t-b", "u-2", base), 1), "CreateTokenWithin of another user")
	must(t, s.CreateTokenWithin(ctx, newToken("t-3", "u-1", base), 3), "CreateTokenWithin after a revocation")
	wantCode(t, s.CreateTokenWithin(ctx, newToken("t-4", "u-1", base), 3), sshdeck.LimitExceeded, "CreateTokenWithin past the limit")
	if _, err := s.TokenByHash(ctx, "hash-t-4"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Fatalf("the refused token was stored: %v", err)
	}
	// An hour later the expiring one no longer counts.
	must(t, s.CreateTokenWithin(ctx, newToken("t-5", "u-1", base.Add(time.Hour)), 3), "CreateTokenWithin after an expiry")
	wantCode(t, s.CreateTokenWithin(ctx, newToken("t-6", "u-1", base.Add(time.Hour)), 3), sshdeck.LimitExceeded, "CreateTokenWithin past the limit again")
	must(t, s.CreateTokenWithin(ctx, newToken("t-7", "u-1", base.Add(time.Hour)), 4), "CreateTokenWithin under a higher limit")

	wantCode(t, s.CreateTokenWithin(ctx, newToken("t-8", "u-none", base), 3), sshdeck.NotFound, "CreateTokenWithin for an absent user")
	yes := true
	_, err = s.UpdateUser(ctx, "u-2", sshdeck.UserChange{Disabled: &yes})
	must(t, err, "UpdateUser")
	wantCode(t, s.CreateTokenWithin(ctx, newToken("t-9", "u-2", base), 3), sshdeck.Conflict, "CreateTokenWithin for a disabled user")
	k := newToken("t-1", "u-1", base.Add(time.Hour))
	k.Hash = "hash-other"
	wantCode(t, s.CreateTokenWithin(ctx, k, 10), sshdeck.Conflict, "CreateTokenWithin with an existing id")
}

// testTokenWithinConcurrent: creates racing for the last places of one
// user never pass the limit together. A create may lose every race and
// give up (Conflict, try again); the places left are then filled one by
// one, to exactly the limit.
func testTokenWithinConcurrent(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	must(t, s.CreateUser(ctx, newUser("u-1", "alice", false)), "CreateUser")
	const limit, racers = 3, 8
	errs := make(chan error, racers)
	for i := range racers {
		go func() { errs <- s.CreateTokenWithin(ctx, newToken(fmt.Sprintf("t-%d", i), "u-1", base), limit) }()
	}
	created := 0
	for range racers {
		switch err := <-errs; sshdeck.ErrorCode(err) {
		case "":
			created++
		case sshdeck.LimitExceeded, sshdeck.Conflict:
		default:
			t.Fatalf("a racing create: %v", err)
		}
	}
	if created > limit {
		t.Fatalf("%d racing creates succeeded, past the limit of %d", created, limit)
	}
	for i := 0; ; i++ {
		err := s.CreateTokenWithin(ctx, newToken(fmt.Sprintf("t-late-%d", i), "u-1", base), limit)
		if sshdeck.ErrorCode(err) == sshdeck.LimitExceeded {
			break
		}
		must(t, err, "a later create")
		created++
	}
	if created != limit {
		t.Fatalf("%d tokens created in all, want the limit, %d", created, limit)
	}
}

func testTokenRevokeUser(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	must(t, s.CreateUser(ctx, newUser("u-1", "alice", false)), "CreateUser")
	must(t, s.CreateTokenWithin(ctx, newToken("t-1", "u-1", base), 10), "CreateTokenWithin")
	must(t, s.CreateToken(ctx, newToken("t-2", "u-1", base.Add(time.Second))), "CreateToken")
	must(t, s.CreateTokenWithin(ctx, newToken("t-3", "u-1", base.Add(2*time.Second)), 10), "CreateTokenWithin")
	must(t, s.CreateToken(ctx, newToken("t-9", "u-2", base)), "CreateToken of another user")
	early := base.Add(time.Minute)
	_, err := s.RevokeToken(ctx, "t-3", early)
	must(t, err, "RevokeToken")

	at := base.Add(time.Hour)
	revoked, err := s.RevokeUserTokens(ctx, "u-1", at, "")
	must(t, err, "RevokeUserTokens")
	if len(revoked) != 2 || revoked[0].ID != "t-1" || revoked[1].ID != "t-2" {
		t.Fatalf("RevokeUserTokens revoked %+v, want t-1 and t-2", revoked)
	}
	for _, k := range revoked {
		if !k.Revoked || !ms(k.RevokedAt).Equal(ms(at)) {
			t.Fatalf("RevokeUserTokens answered %+v, want it revoked at %v", k, at)
		}
	}
	for id, when := range map[string]time.Time{"t-1": at, "t-2": at, "t-3": early} {
		got, err := s.TokenByHash(ctx, "hash-"+id)
		must(t, err, "TokenByHash")
		if !got.Revoked || !ms(got.RevokedAt).Equal(ms(when)) {
			t.Fatalf("token %s after RevokeUserTokens: %+v, want revoked at %v", id, got, when)
		}
	}
	other, err := s.TokenByHash(ctx, "hash-t-9")
	must(t, err, "TokenByHash")
	if other.Revoked {
		t.Fatal("RevokeUserTokens revoked another user's token")
	}
	again, err := s.RevokeUserTokens(ctx, "u-1", at.Add(time.Hour), "")
	must(t, err, "RevokeUserTokens again")
	if len(again) != 0 {
		t.Fatalf("RevokeUserTokens again revoked %d tokens", len(again))
	}
	// Every place is free again.
	must(t, s.CreateTokenWithin(ctx, newToken("t-4", "u-1", at), 1), "CreateTokenWithin after RevokeUserTokens")
}

// testTokenRevokeUserKeep: RevokeUserTokens spares the token it is told to
// keep (the caller's, when a password change revokes the others).
func testTokenRevokeUserKeep(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	must(t, s.CreateUser(ctx, newUser("u-1", "alice", false)), "CreateUser")
	must(t, s.CreateTokenWithin(ctx, newToken("t-1", "u-1", base), 10), "CreateTokenWithin")
	must(t, s.CreateTokenWithin(ctx, newToken("t-2", "u-1", base.Add(time.Second)), 10), "CreateTokenWithin")
	must(t, s.CreateToken(ctx, newToken("t-3", "u-1", base.Add(2*time.Second))), "CreateToken")
	revoked, err := s.RevokeUserTokens(ctx, "u-1", base.Add(time.Hour), "t-2")
	must(t, err, "RevokeUserTokens")
	if len(revoked) != 2 || revoked[0].ID != "t-1" || revoked[1].ID != "t-3" {
		t.Fatalf("RevokeUserTokens keeping t-2 revoked %+v, want t-1 and t-3", revoked)
	}
	kept, err := s.Token(ctx, "t-2")
	must(t, err, "Token")
	if kept.Revoked {
		t.Fatal("the kept token was revoked")
	}
}

// testTokenByID: Token reads a token by its id at once (no index lag), and
// answers NotFound for an unknown id.
func testTokenByID(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	must(t, s.CreateUser(ctx, newUser("u-1", "alice", false)), "CreateUser")
	want := newToken("t-1", "u-1", base)
	want.Scopes = []sshdeck.Scope{sshdeck.ScopeHostsRead}
	must(t, s.CreateTokenWithin(ctx, want, 10), "CreateTokenWithin")
	got, err := s.Token(ctx, "t-1")
	must(t, err, "Token")
	if got.ID != "t-1" || got.UserID != "u-1" || got.Hash != want.Hash || len(got.Scopes) != 1 || got.Scopes[0] != sshdeck.ScopeHostsRead {
		t.Fatalf("Token = %+v, want %+v", got, want)
	}
	if _, err := s.Token(ctx, "t-missing"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Fatalf("Token of an unknown id: %v, want NotFound", err)
	}
}
