package auth

import (
	"context"
	"slices"
	"time"
	"unicode"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Admin creates, lists and changes users, and issues, lists and revokes
// their tokens. Revoking or changing a user through it also drops the
// tokens from its Authenticator's cache.
type Admin struct {
	store sshdeck.Store
	auth  *Authenticator
	now   func() time.Time
	// tokenLimit is the most tokens, neither revoked nor expired, a user
	// may have (config.Limits.Tokens).
	tokenLimit int
}

// DefaultTokenLimit is the tokens per user of an Admin that was given no
// limit: API.md's default.
const DefaultTokenLimit = 100

// NewAdmin returns an Admin over the store whose revocations reach auth
// (which may be nil when no server runs in this process).
func NewAdmin(store sshdeck.Store, auth *Authenticator, now func() time.Time) *Admin {
	if now == nil {
		now = time.Now
	}
	return &Admin{store: store, auth: auth, now: now, tokenLimit: DefaultTokenLimit}
}

// SetTokenLimit sets the most tokens, neither revoked nor expired, that one
// user may have; creating past it is LimitExceeded.
func (a *Admin) SetTokenLimit(n int) { a.tokenLimit = n }

const maxUserName = 64

// AddUser creates a user; Conflict when the name is taken.
func (a *Admin) AddUser(ctx context.Context, name string, admin bool) (*sshdeck.User, error) {
	if err := checkUserName(name); err != nil {
		return nil, err
	}
	u := &sshdeck.User{ID: sshdeck.NewID("usr_"), Name: name, Admin: admin, CreatedAt: a.timestamp()}
	sshdeck.SetAuditTarget(ctx, UserTarget(u))
	if err := a.store.CreateUser(sshdeck.AuditCommit(ctx), u); err != nil {
		return nil, err
	}
	return u, nil
}

// CreateToken issues a token for the named user with every scope of the
// user (the admin commands' tokens). ttl 0 means it never expires. The
// returned bearer string is shown once and never stored.
func (a *Admin) CreateToken(ctx context.Context, userName, label string, ttl time.Duration) (string, *sshdeck.Token, error) {
	return a.CreateScopedToken(ctx, userName, label, nil, ttl)
}

// CreateScopedToken is CreateToken with the given scopes; nil means every
// scope of the user.
func (a *Admin) CreateScopedToken(ctx context.Context, userName, label string, scopes []sshdeck.Scope, ttl time.Duration) (string, *sshdeck.Token, error) {
	u, err := a.store.UserByName(ctx, userName)
	if err != nil {
		return "", nil, err
	}
	if scopes == nil {
		scopes = sshdeck.UserScopes(u.Admin)
	}
	return a.Issue(ctx, u, label, scopes, ttl)
}

// maxTokenName bounds a token's label.
const maxTokenName = 128

// Issue makes a token for u with the scopes (which the caller has checked
// against whoever asks) and stores it. ttl 0 means it never expires. A
// disabled user gets none (Conflict), nor one past the token limit
// (LimitExceeded): the store checks both with the write. Every token is
// made here.
func (a *Admin) Issue(ctx context.Context, u *sshdeck.User, label string, scopes []sshdeck.Scope, ttl time.Duration) (string, *sshdeck.Token, error) {
	if ttl < 0 {
		return "", nil, sshdeck.Errorf(sshdeck.Invalid, "ttl must not be negative")
	}
	if len(label) > maxTokenName {
		return "", nil, sshdeck.Errorf(sshdeck.Invalid, "token name is longer than %d bytes", maxTokenName)
	}
	if len(scopes) == 0 {
		return "", nil, sshdeck.Errorf(sshdeck.Invalid, "a token needs at least one scope")
	}
	bearer, hash := NewToken()
	now := a.timestamp()
	t := &sshdeck.Token{ID: sshdeck.NewID("tok_"), UserID: u.ID, Name: label, Hash: hash, CreatedAt: now, Scopes: sshdeck.SortScopes(slices.Clone(scopes))}
	if ttl > 0 {
		t.ExpiresAt = now.Add(ttl)
	}
	sshdeck.SetAuditTarget(ctx, "token "+t.ID+" of "+UserTarget(u))
	if err := a.store.CreateTokenWithin(sshdeck.AuditCommit(ctx), t, a.tokenLimit); err != nil {
		return "", nil, err
	}
	return bearer, t, nil
}

// Users returns every user ordered by name.
func (a *Admin) Users(ctx context.Context) ([]*sshdeck.User, error) {
	return a.store.Users(ctx)
}

// SetDisabled disables or enables the named user. Disabling revokes every
// token of the user (returned): enabling again gives none back.
func (a *Admin) SetDisabled(ctx context.Context, name string, disabled bool) (*sshdeck.User, []*sshdeck.Token, error) {
	u, err := a.change(ctx, name, sshdeck.UserChange{Disabled: &disabled})
	if err != nil || !disabled {
		return u, nil, err
	}
	revoked, err := a.revokeAll(ctx, u)
	if err != nil {
		return nil, nil, err
	}
	return u, revoked, nil
}

// SetAdmin grants or withdraws the admin flag of the named user.
func (a *Admin) SetAdmin(ctx context.Context, name string, admin bool) (*sshdeck.User, error) {
	return a.change(ctx, name, sshdeck.UserChange{Admin: &admin})
}

func (a *Admin) change(ctx context.Context, name string, change sshdeck.UserChange) (*sshdeck.User, error) {
	u, err := a.store.UserByName(ctx, name)
	if err != nil {
		return nil, err
	}
	sshdeck.SetAuditTarget(ctx, UserTarget(u))
	if u, err = a.store.UpdateUser(sshdeck.AuditCommit(ctx), u.ID, change); err != nil {
		return nil, err
	}
	if a.auth != nil {
		a.auth.forgetUser(u.ID)
	}
	return u, nil
}

// TokenInfo is a token as the admin tooling shows it: never its secret nor
// its hash.
type TokenInfo struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	User      string    `json:"user"`
	UserID    string    `json:"userId"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	Revoked   bool      `json:"revoked"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
	// Scopes are what the token may do now: its own within its user's.
	Scopes     []sshdeck.Scope `json:"scopes"`
	LastUsedAt time.Time       `json:"lastUsedAt,omitzero"`
}

func tokenInfo(t *sshdeck.Token, u *sshdeck.User) TokenInfo {
	return TokenInfo{ID: t.ID, Name: t.Name, User: u.Name, UserID: t.UserID, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt,
		Revoked: t.Revoked, RevokedAt: t.RevokedAt, Scopes: t.EffectiveScopes(u), LastUsedAt: t.LastUsedAt}
}

// Tokens lists the tokens of the named user, or of every user when name is
// "": by user name, then creation time.
func (a *Admin) Tokens(ctx context.Context, name string) ([]TokenInfo, error) {
	var users []*sshdeck.User
	if name != "" {
		u, err := a.store.UserByName(ctx, name)
		if err != nil {
			return nil, err
		}
		users = []*sshdeck.User{u}
	} else {
		var err error
		if users, err = a.store.Users(ctx); err != nil {
			return nil, err
		}
	}
	list := []TokenInfo{}
	for _, u := range users {
		tokens, err := a.store.Tokens(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		for _, t := range tokens {
			list = append(list, tokenInfo(t, u))
		}
	}
	return list, nil
}

// RevokeAll revokes every token of the named user and returns those it
// revoked.
func (a *Admin) RevokeAll(ctx context.Context, name string) ([]TokenInfo, error) {
	u, err := a.store.UserByName(ctx, name)
	if err != nil {
		return nil, err
	}
	sshdeck.SetAuditTarget(ctx, "every token of "+UserTarget(u))
	revoked, err := a.revokeAll(ctx, u)
	if err != nil {
		return nil, err
	}
	list := make([]TokenInfo, 0, len(revoked))
	for _, t := range revoked {
		list = append(list, tokenInfo(t, u))
	}
	return list, nil
}

func (a *Admin) revokeAll(ctx context.Context, u *sshdeck.User) ([]*sshdeck.Token, error) {
	return a.RevokeOthers(ctx, u.ID, "")
}

// RevokeOthers revokes every token of the user but the one with the id
// keep ("" keeps none), and returns those it revoked.
func (a *Admin) RevokeOthers(ctx context.Context, userID, keep string) ([]*sshdeck.Token, error) {
	revoked, err := a.store.RevokeUserTokens(sshdeck.AuditCommit(ctx), userID, a.timestamp(), keep)
	if a.auth != nil {
		a.auth.forgetUser(userID)
	}
	return revoked, err
}

// RevokeToken revokes the token with the id.
func (a *Admin) RevokeToken(ctx context.Context, id string) (*sshdeck.Token, error) {
	sshdeck.SetAuditTarget(ctx, "token "+id)
	t, err := a.store.RevokeToken(sshdeck.AuditCommit(ctx), id, a.timestamp())
	if err != nil {
		return nil, err
	}
	if a.auth != nil {
		a.auth.forget(id)
	}
	return t, nil
}

// Bootstrap creates the admin user named name and a token for it when the
// store has no user yet, and returns the token and its bearer string; ""
// and nil when there were users already.
func (a *Admin) Bootstrap(ctx context.Context, name string, ttl time.Duration) (string, *sshdeck.Token, error) {
	users, err := a.store.Users(ctx)
	if err != nil || len(users) > 0 {
		return "", nil, err
	}
	if _, err := a.AddUser(ctx, name, true); err != nil {
		return "", nil, err
	}
	return a.CreateToken(ctx, name, "bootstrap", ttl)
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

// UserTarget names a user in audit records: by id, with the name for
// people.
func UserTarget(u *sshdeck.User) string { return "user " + u.ID + " (" + u.Name + ")" }
