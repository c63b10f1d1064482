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
	// CreateToken stores t; Conflict when its id or hash exists. It
	// checks neither the user nor a limit (fixtures and tests use it);
	// the admin service creates through CreateTokenWithin.
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
	// RevokeUserTokens revokes, at the time, every token of the user not
	// revoked yet, and returns those.
	RevokeUserTokens(ctx context.Context, userID string, at time.Time) ([]*Token, error)
}
