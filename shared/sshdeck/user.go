package sshdeck

import (
	"context"
	"time"
)

// User owns hosts and tokens.
type User struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Admin     bool      `json:"admin"`
	CreatedAt time.Time `json:"createdAt"`
}

// Token is a bearer token as stored: only the SHA-256 hash of its secret.
type Token struct {
	ID        string    `json:"id"`
	UserID    string    `json:"userId"`
	Name      string    `json:"name"`
	Hash      string    `json:"hash"` // hex SHA-256 of the bearer string
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
}

// TokenStore persists bearer tokens, found by the hash of their secret.
type TokenStore interface {
	// CreateToken stores t; Conflict when its id or hash exists.
	CreateToken(ctx context.Context, t *Token) error
	// TokenByHash returns the token with the hash; NotFound when absent.
	TokenByHash(ctx context.Context, hash string) (*Token, error)
	// RevokeToken marks the token revoked at the time and returns it;
	// NotFound when absent. Revoking twice keeps the first time.
	RevokeToken(ctx context.Context, id string, at time.Time) (*Token, error)
	// Tokens returns the user's tokens ordered by creation time.
	Tokens(ctx context.Context, userID string) ([]*Token, error)
}
