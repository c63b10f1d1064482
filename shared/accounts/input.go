package accounts

import (
	"context"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The checks of the accounts' request fields: each refuses what can never
// be right with a 400 (Invalid) that names the JSON field, as the contract
// asks, before any user is read and before any attempt is counted. None of
// them depends on a user, so none tells a client anything about one.
//
// Passwords hold no control characters (API.md: text fields refuse them):
// a new one is refused here whichever way it is set (POST /users, POST
// /users/me/password, `sshdeck user passwd`), so that no stored password
// holds one and a proof that does (a login's password, a change's current
// one) is refused as malformed rather than checked.

// plain refuses a field with a control character.
func plain(field, s string) error { return check.Plain(field, s, "") }

// hashNewPassword checks a new password (control characters here, its
// length in auth.HashPassword) and hashes it, an error naming field.
func hashNewPassword(ctx context.Context, field, password string) (string, error) {
	if err := plain(field, password); err != nil {
		return "", err
	}
	hash, err := auth.HashPassword(ctx, password, auth.DefaultPasswordParams)
	return hash, named(field, err)
}

// named prefixes the sentence of an Invalid error with the field it is
// about, where the check that made it (shared/auth's) does not know the
// request's field names.
func named(field string, err error) error {
	if sshdeck.ErrorCode(err) != sshdeck.Invalid {
		return err
	}
	return sshdeck.Errorf(sshdeck.Invalid, "%s: %s", field, sshdeck.ErrorMessage(err))
}

// checkCodeShape refuses a TOTP code that is not 6 digits, naming field.
func checkCodeShape(field, code string) error {
	if auth.CheckTOTPShape(code) != nil {
		return sshdeck.Errorf(sshdeck.Invalid, "%s must be 6 digits", field)
	}
	return nil
}
