package accounts

import (
	"context"
	"time"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Issuer names the deployment in authenticator apps.
const Issuer = "sshdeck"

// TOTPSecret is the answer of POST /users/me/totp: the new secret, shown
// once, and the otpauth:// URL an authenticator app reads from a QR code.
type TOTPSecret struct {
	Secret string `json:"secret"`
	URL    string `json:"url"`
}

// errWrongCode is a TOTP code that is not the current one, or was used.
var errWrongCode = sshdeck.Errorf(sshdeck.Unauthorized, "wrong or already used TOTP code")

// totpAD binds a sealed TOTP secret to its user; the pending secret and
// the active one share it, so that enabling moves the envelope as it is.
func totpAD(userID string) string { return secret.AD("users", userID, "totp") }

// BeginTOTP makes a new secret for the caller, sealed as pending until a
// code of it turns it on (EnableTOTP). Conflict while TOTP is on: turn it
// off first, with a code of the current secret.
func (s *Service) BeginTOTP(ctx context.Context, caller sshdeck.Principal) (*TOTPSecret, error) {
	u, err := s.store.User(ctx, caller.UserID)
	if err != nil {
		return nil, err
	}
	sshdeck.SetAuditTarget(ctx, auth.UserTarget(u))
	ls, err := s.secrets(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	if ls.TOTP != nil {
		return nil, sshdeck.Errorf(sshdeck.Conflict, "TOTP is on already: turn it off first (DELETE /users/me/totp with a code)")
	}
	key := auth.NewTOTPSecret()
	sealed, err := s.sealer.Seal(ctx, key, totpAD(u.ID))
	if err != nil {
		return nil, err
	}
	ls.PendingTOTP = sealed
	if err := s.putSecrets(sshdeck.AuditCommit(ctx), ls); err != nil {
		return nil, err
	}
	return &TOTPSecret{Secret: auth.EncodeTOTPSecret(key), URL: auth.TOTPURL(key, Issuer, u.Name)}, nil
}

// EnableTOTP turns TOTP on with a code of the pending secret; from then
// on login needs a code. Conflict when no secret is pending.
func (s *Service) EnableTOTP(ctx context.Context, caller sshdeck.Principal, code string) error {
	if err := checkCodeShape("code", code); err != nil {
		return err
	}
	var step int64
	return s.proving(ctx, caller, func(ls *sshdeck.LoginSecrets) (err error) {
		if ls.PendingTOTP == nil {
			return sshdeck.Errorf(sshdeck.Conflict, "no TOTP secret is waiting: ask for one first (POST /users/me/totp)")
		}
		step, err = s.checkCode(ctx, ls.UserID, ls.PendingTOTP, code, s.now(), ls.TOTPStep)
		return err
	}, func(ls *sshdeck.LoginSecrets) error {
		ls.TOTP, ls.PendingTOTP, ls.TOTPStep = ls.PendingTOTP, nil, step
		return s.putSecretsOr(sshdeck.AuditCommit(ctx), ls, errWrongCode)
	})
}

// DisableTOTP turns TOTP off with a current code. Conflict when it is off.
// Spending the code and turning TOTP off are one write: of a login and a
// disabling that bring one code at once, one loses.
func (s *Service) DisableTOTP(ctx context.Context, caller sshdeck.Principal, code string) error {
	if err := checkCodeShape("code", code); err != nil {
		return err
	}
	var step int64
	return s.proving(ctx, caller, func(ls *sshdeck.LoginSecrets) (err error) {
		if ls.TOTP == nil {
			return sshdeck.Errorf(sshdeck.Conflict, "TOTP is off")
		}
		step, err = s.checkCode(ctx, ls.UserID, ls.TOTP, code, s.now(), ls.TOTPStep)
		return err
	}, func(ls *sshdeck.LoginSecrets) error {
		ls.TOTP, ls.PendingTOTP, ls.TOTPStep = nil, nil, step
		return s.putSecretsOr(sshdeck.AuditCommit(ctx), ls, errWrongCode)
	})
}

// proving runs a change of the caller's login secrets that the caller
// proves with a password or a code, under the lockout of their user name
// as Login is: a token alone cannot try codes or passwords faster than a
// login can. prove checks the proof against the secrets read, apply
// changes and writes them; between the two the lockout is checked again,
// for the failures counted while the proof was checked (see Login). A
// wrong proof (Unauthorized, from either) counts one failure and is
// Forbidden: the token is good, so 401 would tell the client to drop it.
func (s *Service) proving(ctx context.Context, caller sshdeck.Principal, prove, apply func(ls *sshdeck.LoginSecrets) error) error {
	u, err := s.store.User(ctx, caller.UserID)
	if err != nil {
		return err
	}
	sshdeck.SetAuditTarget(ctx, auth.UserTarget(u))
	now := s.now()
	keys := failureKeys(LoginRequest{Username: u.Name})
	if err := s.lockedOut(ctx, keys, now); err != nil {
		return err
	}
	ls, err := s.secrets(ctx, u.ID)
	if err != nil {
		return err
	}
	if err = prove(ls); err == nil {
		if err := s.lockedOut(ctx, keys, now); err != nil {
			return err
		}
		err = apply(ls)
	}
	if sshdeck.ErrorCode(err) != sshdeck.Unauthorized {
		return err
	}
	if err = s.failed(ctx, keys, now, err); sshdeck.ErrorCode(err) != sshdeck.Unauthorized {
		return err
	}
	return sshdeck.Errorf(sshdeck.Forbidden, "%s", sshdeck.ErrorMessage(err))
}

// spendCode checks a code of the user's active secret and records its
// step, so that it is never accepted again: of two logins with one code,
// the one whose write of the step loses (Conflict) is refused.
func (s *Service) spendCode(ctx context.Context, ls *sshdeck.LoginSecrets, code string, now time.Time) error {
	if code == "" {
		return sshdeck.Errorf(sshdeck.Unauthorized, "this user logs in with a TOTP code too: send totp")
	}
	step, err := s.checkCode(ctx, ls.UserID, ls.TOTP, code, now, ls.TOTPStep)
	if err != nil {
		return err
	}
	ls.TOTPStep = step
	return s.putSecretsOr(ctx, ls, errWrongCode)
}

// checkCode opens the sealed secret and checks the code against it, after
// lastStep; errWrongCode when it does not match.
func (s *Service) checkCode(ctx context.Context, userID string, sealed []byte, code string, now time.Time, lastStep int64) (int64, error) {
	key, err := s.sealer.Open(ctx, sealed, totpAD(userID))
	if err != nil {
		return 0, err
	}
	step, ok := auth.VerifyTOTP(key, code, now, lastStep)
	clear(key)
	if !ok {
		return 0, errWrongCode
	}
	return step, nil
}

// putSecretsOr writes ls, answering lost when another write of the
// secrets came first (Conflict).
func (s *Service) putSecretsOr(ctx context.Context, ls *sshdeck.LoginSecrets, lost error) error {
	err := s.putSecrets(ctx, ls)
	if sshdeck.ErrorCode(err) == sshdeck.Conflict {
		return lost
	}
	return err
}
