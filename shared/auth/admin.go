package auth

import (
	"context"
	"time"
	"unicode"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Admin creates users and issues and revokes their tokens. Revoking through
// it also drops the token from its Authenticator's cache.
type Admin struct {
	store sshdeck.Store
	auth  *Authenticator
	now   func() time.Time
}

// NewAdmin returns an Admin over the store whose revocations reach auth
// (which may be nil when no server runs in this process).
func NewAdmin(store sshdeck.Store, auth *Authenticator, now func() time.Time) *Admin {
	if now == nil {
		now = time.Now
	}
	return &Admin{store: store, auth: auth, now: now}
}

const maxUserName = 64

// AddUser creates a user; Conflict when the name is taken.
func (a *Admin) AddUser(ctx context.Context, name string, admin bool) (*sshdeck.User, error) {
	if err := checkUserName(name); err != nil {
		return nil, err
	}
	u := &sshdeck.User{ID: sshdeck.NewID("usr_"), Name: name, Admin: admin, CreatedAt: a.timestamp()}
	if err := a.store.CreateUser(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// CreateToken issues a token for the named user. ttl 0 means it never
// expires. The returned bearer string is shown once and never stored.
func (a *Admin) CreateToken(ctx context.Context, userName, label string, ttl time.Duration) (string, *sshdeck.Token, error) {
	if ttl < 0 {
		return "", nil, sshdeck.Errorf(sshdeck.Invalid, "ttl must not be negative")
	}
	if len(label) > 128 {
		return "", nil, sshdeck.Errorf(sshdeck.Invalid, "token name is longer than 128 bytes")
	}
	u, err := a.store.UserByName(ctx, userName)
	if err != nil {
		return "", nil, err
	}
	bearer, hash := NewToken()
	now := a.timestamp()
	t := &sshdeck.Token{ID: sshdeck.NewID("tok_"), UserID: u.ID, Name: label, Hash: hash, CreatedAt: now}
	if ttl > 0 {
		t.ExpiresAt = now.Add(ttl)
	}
	if err := a.store.CreateToken(ctx, t); err != nil {
		return "", nil, err
	}
	return bearer, t, nil
}

// RevokeToken revokes the token with the id.
func (a *Admin) RevokeToken(ctx context.Context, id string) (*sshdeck.Token, error) {
	t, err := a.store.RevokeToken(ctx, id, a.timestamp())
	if err != nil {
		return nil, err
	}
	if a.auth != nil {
		a.auth.forget(id)
	}
	return t, nil
}

// Bootstrap creates the admin user named name and a token for it when the
// store has no user yet; it returns "" when there were users already.
func (a *Admin) Bootstrap(ctx context.Context, name string, ttl time.Duration) (string, error) {
	users, err := a.store.Users(ctx)
	if err != nil || len(users) > 0 {
		return "", err
	}
	if _, err := a.AddUser(ctx, name, true); err != nil {
		return "", err
	}
	bearer, _, err := a.CreateToken(ctx, name, "bootstrap", ttl)
	return bearer, err
}

func (a *Admin) timestamp() time.Time { return a.now().UTC().Truncate(time.Millisecond) }

func checkUserName(name string) error {
	if name == "" || len(name) > maxUserName {
		return sshdeck.Errorf(sshdeck.Invalid, "user name must be 1 to %d characters", maxUserName)
	}
	for _, r := range name {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.' || r == '@') {
			return sshdeck.Errorf(sshdeck.Invalid, "user name may hold letters, digits and - _ . @ only")
		}
	}
	return nil
}
