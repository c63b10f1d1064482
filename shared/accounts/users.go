package accounts

import (
	"context"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Me is the caller as GET /users/me shows them, with the scopes of the
// token they called with.
type Me struct {
	UserView
	Scopes []sshdeck.Scope `json:"scopes"`
}

// Me returns the caller's account.
func (s *Service) Me(ctx context.Context, caller sshdeck.Principal) (*Me, error) {
	u, err := s.store.User(ctx, caller.UserID)
	if err != nil {
		return nil, err
	}
	v, err := s.view(ctx, u)
	if err != nil {
		return nil, err
	}
	return &Me{UserView: v, Scopes: caller.Scopes}, nil
}

// ChangePassword sets the caller's password after checking the current
// one (which may be "" only while the user has none), under the lockout
// of their name, and revokes every other token of theirs: whoever held
// the old password loses what they made with it. The caller's own token
// keeps working.
func (s *Service) ChangePassword(ctx context.Context, caller sshdeck.Principal, current, next string) error {
	if err := plain("current", current); err != nil {
		return err
	}
	hash, err := hashNewPassword(ctx, "new", next)
	if err != nil {
		return err
	}
	err = s.proving(ctx, caller, func(ls *sshdeck.LoginSecrets) error {
		if ls.PasswordHash == "" {
			if current != "" {
				return sshdeck.Errorf(sshdeck.Unauthorized, "the current password is wrong: this user has none yet, send it empty")
			}
		} else if ok, err := auth.VerifyPassword(ctx, ls.PasswordHash, current); err != nil {
			return named("current", err)
		} else if !ok {
			return sshdeck.Errorf(sshdeck.Unauthorized, "the current password is wrong")
		}
		return nil
	}, func(ls *sshdeck.LoginSecrets) error {
		ls.PasswordHash = hash
		return s.putSecrets(sshdeck.AuditCommit(ctx), ls)
	})
	if err != nil {
		return err
	}
	return s.revokeOthers(ctx, caller)
}

// revokeOthers revokes every live token of the caller but the one they
// called with.
func (s *Service) revokeOthers(ctx context.Context, caller sshdeck.Principal) error {
	_, err := s.admin.RevokeOthers(ctx, caller.UserID, caller.TokenID)
	return err
}

// SetPassword gives the named user a password, whatever they had: the
// admin command `sshdeck user passwd`, run by whoever holds the store.
// The user's tokens stay.
func (s *Service) SetPassword(ctx context.Context, name, password string) (*sshdeck.User, error) {
	hash, err := hashNewPassword(ctx, "password", password)
	if err != nil {
		return nil, err
	}
	u, err := s.store.UserByName(ctx, name)
	if err != nil {
		return nil, err
	}
	sshdeck.SetAuditTarget(ctx, auth.UserTarget(u))
	// A concurrent change of the secrets (a login spending a TOTP code)
	// moves the version on: read again and retry, a few times.
	for range 3 {
		var ls *sshdeck.LoginSecrets
		if ls, err = s.secrets(ctx, u.ID); err != nil {
			return nil, err
		}
		ls.PasswordHash = hash
		if err = s.putSecrets(sshdeck.AuditCommit(ctx), ls); sshdeck.ErrorCode(err) != sshdeck.Conflict {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return u, nil
}

// Users lists every user, for an admin.
func (s *Service) Users(ctx context.Context) ([]UserView, error) {
	users, err := s.store.Users(ctx)
	if err != nil {
		return nil, err
	}
	views := make([]UserView, 0, len(users))
	for _, u := range users {
		v, err := s.view(ctx, u)
		if err != nil {
			return nil, err
		}
		views = append(views, v)
	}
	return views, nil
}

// NewUser is the body of POST /users.
type NewUser struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Admin    bool   `json:"admin"`
}

// CreateUser makes a user who can log in with the password. The password
// is checked before the user exists, so a bad one leaves no user behind.
func (s *Service) CreateUser(ctx context.Context, req NewUser) (UserView, error) {
	if req.Username == "" {
		return UserView{}, sshdeck.Errorf(sshdeck.Invalid, "username is required")
	}
	if err := plain("username", req.Username); err != nil {
		return UserView{}, err
	}
	hash, err := hashNewPassword(ctx, "password", req.Password)
	if err != nil {
		return UserView{}, err
	}
	u, err := s.admin.AddUser(ctx, req.Username, req.Admin)
	if err != nil {
		return UserView{}, named("username", err)
	}
	if err := s.putSecrets(ctx, &sshdeck.LoginSecrets{UserID: u.ID, PasswordHash: hash}); err != nil {
		return UserView{}, err
	}
	return UserView{ID: u.ID, Name: u.Name, Admin: u.Admin, CreatedAt: u.CreatedAt, HasPassword: true}, nil
}

// UserChange is the body of PATCH /users/{id}: nil leaves a flag; one of
// them at least must be given.
type UserChange struct {
	Disabled *bool `json:"disabled"`
	Admin    *bool `json:"admin"`
}

// UpdateUser changes a user's flags; disabling revokes every token of the
// user. An admin may not disable themselves or withdraw their own admin
// flag (Conflict): a deployment whose last admin did so would have none,
// and the admin commands would be the only way back.
func (s *Service) UpdateUser(ctx context.Context, caller sshdeck.Principal, id string, change UserChange) (UserView, error) {
	if change.Disabled == nil && change.Admin == nil {
		return UserView{}, sshdeck.Errorf(sshdeck.Invalid, "nothing to change: send disabled, admin or both")
	}
	sshdeck.SetAuditTarget(ctx, "user "+id)
	u, err := s.store.User(ctx, id)
	if err != nil {
		return UserView{}, err
	}
	if id == caller.UserID && ((change.Disabled != nil && *change.Disabled) || (change.Admin != nil && !*change.Admin)) {
		return UserView{}, sshdeck.Errorf(sshdeck.Conflict, "you cannot disable yourself or withdraw your own admin flag: ask another admin")
	}
	if change.Admin != nil {
		if u, err = s.admin.SetAdmin(ctx, u.Name, *change.Admin); err != nil {
			return UserView{}, err
		}
	}
	if change.Disabled != nil {
		if u, _, err = s.admin.SetDisabled(ctx, u.Name, *change.Disabled); err != nil {
			return UserView{}, err
		}
	}
	return s.view(ctx, u)
}
