package accounts

import (
	"context"
	"time"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The life of a token made through POST /tokens: 30 days unless the body
// says otherwise, 0 for never, at most 10 years (a bound that keeps the
// arithmetic of times far from overflowing).
const (
	DefaultTokenTTL = 30 * 24 * time.Hour
	MaxTokenTTL     = 10 * 365 * 24 * time.Hour
)

// maxTokenName bounds a token's name, in characters (auth.Admin.Issue
// bounds it to as many bytes).
const maxTokenName = 128

// TokenView is a token as its owner sees it: never its secret nor hash.
type TokenView struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Scopes     []sshdeck.Scope `json:"scopes"`
	CreatedAt  time.Time       `json:"createdAt"`
	ExpiresAt  *time.Time      `json:"expiresAt"` // null: never expires
	LastUsedAt *time.Time      `json:"lastUsedAt"`
	Revoked    bool            `json:"revoked"`
}

func tokenView(t *sshdeck.Token, u *sshdeck.User) TokenView {
	v := TokenView{ID: t.ID, Name: t.Name, Scopes: t.EffectiveScopes(u), CreatedAt: t.CreatedAt, Revoked: t.Revoked}
	if !t.ExpiresAt.IsZero() {
		v.ExpiresAt = &t.ExpiresAt
	}
	if !t.LastUsedAt.IsZero() {
		v.LastUsedAt = &t.LastUsedAt
	}
	return v
}

// Tokens lists the caller's tokens, oldest first.
func (s *Service) Tokens(ctx context.Context, caller sshdeck.Principal) ([]TokenView, error) {
	u, err := s.store.User(ctx, caller.UserID)
	if err != nil {
		return nil, err
	}
	tokens, err := s.store.Tokens(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	views := make([]TokenView, 0, len(tokens))
	for _, t := range tokens {
		views = append(views, tokenView(t, u))
	}
	return views, nil
}

// NewToken is the body of POST /tokens. Name is required (1 to 128
// characters, no control characters). Scopes nil (absent) asks for every
// scope of the calling token; TTL nil (absent) for DefaultTokenTTL, in
// seconds, 0 for never.
type NewToken struct {
	Name   string    `json:"name"`
	Scopes *[]string `json:"scopes"`
	TTL    *int64    `json:"ttl"`
}

// CreatedToken is the answer of POST /tokens: the bearer string, shown
// once, beside the token as GET /tokens shows it.
type CreatedToken struct {
	TokenView
	Token string `json:"token"`
}

// CreateToken makes a token for the caller that never grants more than the
// caller's own: a scope the calling token lacks is Forbidden, naming it.
// Its life is not bounded by the caller's: a login session may make the
// long-lived token of a CI job, and revoking or a password change ends
// both.
func (s *Service) CreateToken(ctx context.Context, caller sshdeck.Principal, req NewToken) (*CreatedToken, error) {
	if err := check.Text("name", req.Name, 1, maxTokenName, false); err != nil {
		return nil, err
	}
	scopes := caller.Scopes
	if req.Scopes != nil {
		if len(*req.Scopes) == 0 {
			return nil, sshdeck.Errorf(sshdeck.Invalid, "scopes: name at least one, or leave it out for every scope of this token")
		}
		var err error
		if scopes, err = sshdeck.ParseScopes(*req.Scopes); err != nil {
			return nil, err
		}
		for _, sc := range scopes {
			if !caller.Can(sc) {
				return nil, sshdeck.Errorf(sshdeck.Forbidden, "scope %q is more than this token has: a token never grants more than the token that made it", sc)
			}
		}
	}
	ttl := DefaultTokenTTL
	if req.TTL != nil {
		if *req.TTL < 0 || *req.TTL > int64(MaxTokenTTL/time.Second) {
			return nil, sshdeck.Errorf(sshdeck.Invalid, "ttl: must be a whole number of seconds from 0 (never expires) to %d", int64(MaxTokenTTL/time.Second))
		}
		ttl = time.Duration(*req.TTL) * time.Second
	}
	u, err := s.store.User(ctx, caller.UserID)
	if err != nil {
		return nil, err
	}
	bearer, t, err := s.admin.Issue(ctx, u, req.Name, scopes, ttl)
	if err != nil {
		return nil, err
	}
	return &CreatedToken{TokenView: tokenView(t, u), Token: bearer}, nil
}

// RevokeToken revokes one of the caller's tokens (the calling one
// included: that is how a client logs out). Another user's token is
// NotFound, as an absent one is.
func (s *Service) RevokeToken(ctx context.Context, caller sshdeck.Principal, id string) error {
	sshdeck.SetAuditTarget(ctx, "token "+id)
	t, err := s.store.Token(ctx, id)
	if err == nil && t.UserID != caller.UserID {
		err = sshdeck.Errorf(sshdeck.NotFound, "token %q not found", id)
	}
	if err != nil {
		return err
	}
	_, err = s.admin.RevokeToken(ctx, id)
	return err
}
