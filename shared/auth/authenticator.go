package auth

import (
	"context"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// CacheTTL bounds how long a verified token is trusted without a store read.
// A revocation, or a change of the user's flags, made through the same
// Authenticator (as the admin commands do against a running server) takes
// effect at once; one made elsewhere in at most CacheTTL.
const CacheTTL = 30 * time.Second

// touchEvery is how stale a token's LastUsedAt may be before a store read
// of the token (at most one per CacheTTL) writes it anew: API.md's "at most
// once a minute".
const touchEvery = time.Minute

// maxCached bounds the cache; past it, the cache starts over.
const maxCached = 10000

// Authenticator turns an Authorization header into a Principal.
type Authenticator struct {
	tokens sshdeck.TokenStore
	users  sshdeck.UserStore
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]cached // by token hash
}

type cached struct {
	principal sshdeck.Principal
	tokenID   string
	until     time.Time
}

// NewAuthenticator returns an Authenticator over the stores; now is the clock
// (time.Now when nil).
func NewAuthenticator(tokens sshdeck.TokenStore, users sshdeck.UserStore, now func() time.Time) *Authenticator {
	if now == nil {
		now = time.Now
	}
	return &Authenticator{tokens: tokens, users: users, now: now, cache: map[string]cached{}}
}

func unauthorized(msg string) error { return sshdeck.Errorf(sshdeck.Unauthorized, "%s", msg) }

// Authenticate returns the caller a header names. Every failure is
// Unauthorized with a sentence that says which, never echoing the token.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (sshdeck.Principal, error) {
	if header == "" {
		return sshdeck.Principal{}, unauthorized("missing bearer token: send Authorization: Bearer <token>")
	}
	token, ok := BearerToken(header)
	if !ok || !WellFormed(token) {
		return sshdeck.Principal{}, unauthorized("malformed bearer token")
	}
	hash := HashToken(token)
	now := a.now()
	if p, ok := a.lookup(hash, now); ok {
		return p, nil
	}
	t, err := a.tokens.TokenByHash(ctx, hash)
	if sshdeck.ErrorCode(err) == sshdeck.NotFound {
		return sshdeck.Principal{}, unauthorized("unknown bearer token")
	} else if err != nil {
		return sshdeck.Principal{}, err
	}
	switch {
	case t.Revoked:
		return sshdeck.Principal{}, unauthorized("bearer token has been revoked")
	case t.Expired(now):
		return sshdeck.Principal{}, unauthorized("bearer token has expired")
	}
	u, err := a.users.User(ctx, t.UserID)
	if sshdeck.ErrorCode(err) == sshdeck.NotFound {
		return sshdeck.Principal{}, unauthorized("bearer token's user no longer exists")
	} else if err != nil {
		return sshdeck.Principal{}, err
	}
	if u.Disabled {
		return sshdeck.Principal{}, unauthorized("bearer token's user is disabled")
	}
	p := sshdeck.Principal{UserID: u.ID, TokenID: t.ID, Scopes: t.EffectiveScopes(u)}
	if now.Sub(t.LastUsedAt) >= touchEvery {
		// Best effort: a token that works is not refused because its
		// lastUsedAt could not be written; the next miss tries again.
		_ = a.tokens.TouchToken(ctx, hash, now.UTC().Truncate(time.Millisecond))
	}
	until := now.Add(CacheTTL)
	if !t.ExpiresAt.IsZero() && t.ExpiresAt.Before(until) {
		until = t.ExpiresAt
	}
	a.remember(hash, cached{principal: p, tokenID: t.ID, until: until})
	return p, nil
}

func (a *Authenticator) lookup(hash string, now time.Time) (sshdeck.Principal, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.cache[hash]
	if !ok || !now.Before(c.until) {
		return sshdeck.Principal{}, false
	}
	return c.principal, true
}

func (a *Authenticator) remember(hash string, c cached) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= maxCached {
		clear(a.cache)
	}
	a.cache[hash] = c
}

// forgetUser drops every cached token of the user.
func (a *Authenticator) forgetUser(userID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for hash, c := range a.cache {
		if c.principal.UserID == userID {
			delete(a.cache, hash)
		}
	}
}

// forget drops the cached token with the id.
func (a *Authenticator) forget(tokenID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for hash, c := range a.cache {
		if c.tokenID == tokenID {
			delete(a.cache, hash)
		}
	}
}
