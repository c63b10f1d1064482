package sshdeck

import (
	"context"
	"time"
)

// User owns hosts and tokens.
type User struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Admin bool   `json:"admin"`
	// Disabled users are refused whatever token they bring; disabling
	// one revokes every token of theirs.
	Disabled  bool      `json:"disabled"`
	CreatedAt time.Time `json:"createdAt"`
}

// UserChange is a change of a user's flags: nil leaves a flag as it is.
type UserChange struct {
	Disabled *bool
	Admin    *bool
}

// Token is a bearer token as stored: only the SHA-256 hash of its secret.
type Token struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
	Name   string `json:"name"`
	// Hash is the hex SHA-256 of the bearer string: never shown, not even
	// in JSON.
	Hash      string    `json:"-"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"` // zero: never expires
	Revoked   bool      `json:"revoked"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
	// Scopes are what the token may do, within its user's. nil is a
	// token made before scopes were (they keep every scope of their
	// user); a token made since has at least one.
	Scopes []Scope `json:"scopes"`
	// LastUsedAt is when the token was last seen by an authenticator,
	// to the minute (TouchToken): zero when never.
	LastUsedAt time.Time `json:"lastUsedAt,omitzero"`
}

// EffectiveScopes are what the token lets its user do: its scopes within
// the user's, every one of the user's for a token made before scopes.
func (t *Token) EffectiveScopes(u *User) []Scope {
	if t.Scopes == nil {
		return UserScopes(u.Admin)
	}
	return Within(t.Scopes, UserScopes(u.Admin))
}

// Expired reports whether the token has expired at now.
func (t *Token) Expired(now time.Time) bool {
	return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt)
}

// UserStore persists users. Names are unique.
type UserStore interface {
	// CreateUser stores u; Conflict when the name is taken.
	CreateUser(ctx context.Context, u *User) error
	// User returns the user with the id; NotFound when absent.
	User(ctx context.Context, id string) (*User, error)
	// UserByName returns the user with the name; NotFound when absent.
	UserByName(ctx context.Context, name string) (*User, error)
	// Users returns every user ordered by name.
	Users(ctx context.Context) ([]*User, error)
	// UpdateUser applies the change to the user with the id and returns
	// the user as changed; NotFound when absent.
	UpdateUser(ctx context.Context, id string, change UserChange) (*User, error)
}

// TokenStore persists bearer tokens, found by the hash of their secret.
type TokenStore interface {
	// CreateToken stores t; Conflict when its id or hash exists, Invalid
	// when its Scopes are an empty list rather than nil (which would read
	// back as nil, every scope of the user). It checks neither the user
	// nor a limit (fixtures and tests use it); the admin service creates
	// through CreateTokenWithin.
	CreateToken(ctx context.Context, t *Token) error
	// CreateTokenWithin stores t as CreateToken does, unless its user is
	// absent (NotFound), disabled (Conflict) or already has limit tokens
	// that are neither revoked nor expired at t.CreatedAt
	// (LimitExceeded). Concurrent creates for one user cannot pass the
	// limit together.
	CreateTokenWithin(ctx context.Context, t *Token, limit int) error
	// TokenByHash returns the token with the hash; NotFound when absent.
	TokenByHash(ctx context.Context, hash string) (*Token, error)
	// RevokeToken marks the token revoked at the time and returns it;
	// NotFound when absent. Revoking twice keeps the first time.
	RevokeToken(ctx context.Context, id string, at time.Time) (*Token, error)
	// Tokens returns the user's tokens ordered by creation time.
	Tokens(ctx context.Context, userID string) ([]*Token, error)
	// Token returns the token with the id; NotFound when absent. It reads
	// the token itself, not a list: a token made a moment ago is there.
	Token(ctx context.Context, id string) (*Token, error)
	// RevokeUserTokens revokes, at the time, every token of the user not
	// revoked yet but the one with the id keep ("" keeps none), and
	// returns those.
	RevokeUserTokens(ctx context.Context, userID string, at time.Time, keep string) ([]*Token, error)
	// TouchToken sets LastUsedAt of the token with the hash to at, unless
	// it is at or after at already; NotFound when absent. Authenticators
	// call it at most once a minute per token.
	TouchToken(ctx context.Context, hash string, at time.Time) error
}

// LoginSecrets are a user's password hash and second factor, kept apart
// from the User record (which every token check reads) and never shown.
type LoginSecrets struct {
	UserID string
	// PasswordHash is the argon2id hash in PHC form
	// ($argon2id$v=19$m=…,t=…,p=…$salt$hash); "" when the user has no
	// password and cannot log in.
	PasswordHash string
	// TOTP is the sealed secret of the user's second factor: nil when off.
	TOTP []byte
	// PendingTOTP is a sealed secret handed out and not yet confirmed by
	// a code: it becomes TOTP when one is.
	PendingTOTP []byte
	// TOTPStep is the time step (Unix seconds / 30) of the last code
	// accepted: a code of that step or before is refused, so that no
	// code is accepted twice.
	TOTPStep int64
	// Version counts the writes: PutLoginSecrets replaces version-1.
	Version   int64
	UpdatedAt time.Time
}

// LoginSecretStore persists LoginSecrets, one per user.
type LoginSecretStore interface {
	// LoginSecrets returns the user's; NotFound when the user has none.
	LoginSecrets(ctx context.Context, userID string) (*LoginSecrets, error)
	// PutLoginSecrets stores s if the stored version is s.Version-1, where
	// 0 means none is stored; Conflict otherwise. Concurrent writers of
	// one version (two logins spending one TOTP code) thus cannot both win.
	PutLoginSecrets(ctx context.Context, s *LoginSecrets) error
}

// FailureStore counts failed logins per key (a user name, a client
// address) in fixed windows: the first failure opens a window of the
// given length, every failure in it counts, and the count is forgotten
// when the window ends. A key is 1 to MaxFailureKey bytes; another is the
// caller's bug, an error (not a coded one).
type FailureStore interface {
	// Failures returns the count of the key's window in force at now and
	// the window's end: 0 and the zero time when none is.
	Failures(ctx context.Context, key string, now time.Time) (n int, until time.Time, err error)
	// AddFailure adds one to the key's window in force at now, opening one
	// that ends at now+window when none is, and returns the count after it
	// and the window's end. Concurrent adds are never lost: N of them on a
	// new key end at N.
	AddFailure(ctx context.Context, key string, now time.Time, window time.Duration) (n int, until time.Time, err error)
}

// MaxFailureKey bounds a FailureStore key: "name:" and a hex SHA-256, or
// "addr:" and an IP address, are far shorter; a key the caller did not
// bound could outgrow a store's key (DynamoDB's partition key holds 2048
// bytes).
const MaxFailureKey = 512
