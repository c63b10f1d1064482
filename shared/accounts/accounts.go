// Package accounts is what a user does with their own account, and an
// admin with everyone's, through the API (API.md, "Accounts, login and
// tokens"): log in, with a password and a second factor; manage one's
// tokens, password and TOTP; list, create and change users. The rules
// live here, above the store; tokens are made by auth.Admin (Issue) and
// passwords and TOTP codes checked by shared/auth.
package accounts

import (
	"context"
	"time"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Service is the accounts of one deployment.
type Service struct {
	store  sshdeck.Store
	admin  *auth.Admin
	sealer *secret.Sealer
	now    func() time.Time
	// LoginTTL is the life of a login token (config.DefaultLoginTTL).
	LoginTTL time.Duration
}

// NewService returns the accounts over the store. admin makes and revokes
// tokens (and drops them from its authenticator's cache); sealer seals
// TOTP secrets as host credentials are sealed; now is the clock (time.Now
// when nil).
func NewService(store sshdeck.Store, admin *auth.Admin, sealer *secret.Sealer, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, admin: admin, sealer: sealer, now: now, LoginTTL: config.DefaultLoginTTL}
}

func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// UserView is a user as the API shows them: never a secret.
type UserView struct {
	ID        string    `json:"id"`
	Name      string    `json:"username"`
	Admin     bool      `json:"admin"`
	Disabled  bool      `json:"disabled"`
	CreatedAt time.Time `json:"createdAt"`
	// TOTP reports whether login needs a second factor.
	TOTP bool `json:"totp"`
	// HasPassword reports whether the user can log in at all.
	HasPassword bool `json:"hasPassword"`
}

// view shows u with what its login secrets say.
func (s *Service) view(ctx context.Context, u *sshdeck.User) (UserView, error) {
	v := UserView{ID: u.ID, Name: u.Name, Admin: u.Admin, Disabled: u.Disabled, CreatedAt: u.CreatedAt}
	ls, err := s.store.LoginSecrets(ctx, u.ID)
	switch {
	case sshdeck.ErrorCode(err) == sshdeck.NotFound:
	case err != nil:
		return UserView{}, err
	default:
		v.TOTP, v.HasPassword = ls.TOTP != nil, ls.PasswordHash != ""
	}
	return v, nil
}

// secrets returns the user's login secrets, empty ones (version 0) when
// the user has none yet.
func (s *Service) secrets(ctx context.Context, userID string) (*sshdeck.LoginSecrets, error) {
	ls, err := s.store.LoginSecrets(ctx, userID)
	if sshdeck.ErrorCode(err) == sshdeck.NotFound {
		return &sshdeck.LoginSecrets{UserID: userID}, nil
	}
	return ls, err
}

// putSecrets writes ls as the version after the one read.
func (s *Service) putSecrets(ctx context.Context, ls *sshdeck.LoginSecrets) error {
	next := *ls
	next.Version++
	next.UpdatedAt = s.timestamp()
	if err := s.store.PutLoginSecrets(ctx, &next); err != nil {
		return err
	}
	*ls = next
	return nil
}
