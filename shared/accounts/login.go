package accounts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The lockout of API.md: after 5 failures for one user name within 15
// minutes, or 20 from one client address, every attempt is refused until
// the window that counted them ends, the right password included.
const (
	FailureWindow   = 15 * time.Minute
	MaxNameFailures = 5
	MaxAddrFailures = 20
)

// LoginRequest is a login attempt: the body of POST /auth/login and the
// address it came from (ClientAddr: the connection's locally, API
// Gateway's sourceIp in AWS; "" when unknown, which counts no address).
type LoginRequest struct {
	Username   string `json:"username"`
	Password   string `json:"password"`
	TOTP       string `json:"totp"`
	ClientAddr string `json:"-"`
}

// LoginResult is the answer of a login: the bearer token, shown once.
type LoginResult struct {
	Token     string          `json:"token"`
	ID        string          `json:"id"`
	ExpiresAt time.Time       `json:"expiresAt"`
	Scopes    []sshdeck.Scope `json:"scopes"`
}

// errWrongLogin is every failure before the second factor: an unknown
// name, a wrong password, a user without one, a disabled user. One answer
// for all, so that none tells whether the name exists.
var errWrongLogin = sshdeck.Errorf(sshdeck.Unauthorized, "wrong user name or password")

// Login checks the attempt and issues a token with every scope of the
// user, for LoginTTL. A failed attempt, and an attempt refused by the
// lockout, counts one failure for the name and one for the address: N
// attempts that do not succeed count N, however they interleave.
//
// The lockout is checked before the password, which spares the work
// while it holds, and again once the password matched: attempts sent
// together all pass the first check before any of them has failed, and
// only the second keeps a burst to 5 verdicts. A failure is answered 401
// only when it is among the first 5 counted (failed); an attempt counted
// after them is refused as the lockout refuses it, whatever it proved.
func (s *Service) Login(ctx context.Context, req LoginRequest) (*LoginResult, error) {
	if req.Username == "" || req.Password == "" {
		return nil, sshdeck.Errorf(sshdeck.Invalid, "username and password are required")
	}
	if err := check.First(plain("username", req.Username), plain("password", req.Password)); err != nil {
		return nil, err
	}
	if req.TOTP != "" {
		if err := checkCodeShape("totp", req.TOTP); err != nil {
			return nil, err
		}
	}
	sshdeck.SetAuditTarget(ctx, fmt.Sprintf("user named %q", req.Username))
	now := s.now()
	keys := failureKeys(req)
	if err := s.lockedOut(ctx, keys, now); err != nil {
		return nil, err
	}
	res, err := s.login(ctx, req, keys, now)
	if sshdeck.ErrorCode(err) == sshdeck.Unauthorized {
		return nil, s.failed(ctx, keys, now, err)
	}
	return res, err
}

// failureKey is one counter of the lockout and its bound.
type failureKey struct {
	key string
	max int
}

// failureKeys are the counters an attempt adds to. A name is counted by
// its hash: the store holds no name that was only ever mistyped.
func failureKeys(req LoginRequest) []failureKey {
	sum := sha256.Sum256([]byte(req.Username))
	keys := []failureKey{{"name:" + hex.EncodeToString(sum[:]), MaxNameFailures}}
	if req.ClientAddr != "" {
		keys = append(keys, failureKey{"addr:" + req.ClientAddr, MaxAddrFailures})
	}
	return keys
}

// lockedOut refuses the attempt, and counts it, while one of its counters
// is at its bound: RateLimited, with the wait until the latest of the
// windows that lock it ends.
func (s *Service) lockedOut(ctx context.Context, keys []failureKey, now time.Time) error {
	var until time.Time
	for _, k := range keys {
		n, end, err := s.store.Failures(ctx, k.key, now)
		if err != nil {
			return err
		}
		if n >= k.max && end.After(until) {
			until = end
		}
	}
	if until.IsZero() {
		return nil
	}
	if _, later, err := s.addFailures(ctx, keys, now); err != nil {
		return err
	} else if later.After(until) {
		until = later
	}
	return rateLimited(until, now)
}

// failed counts the failure of an attempt that passed lockedOut and
// returns its error (Unauthorized), or RateLimited when the count passes
// a bound: other attempts failed while this one was checked, and it is
// one of the further attempts that their failures lock out.
func (s *Service) failed(ctx context.Context, keys []failureKey, now time.Time, err error) error {
	over, until, ferr := s.addFailures(ctx, keys, now)
	if ferr != nil {
		return ferr
	}
	if over {
		return rateLimited(until, now)
	}
	return err
}

func rateLimited(until, now time.Time) error {
	return &sshdeck.Error{
		Code:       sshdeck.RateLimited,
		Message:    "too many failed logins for this user name or from this address: try again when the window ends (Retry-After)",
		RetryAfter: until.Sub(now),
	}
}

// addFailures counts one failure on every key. It reports whether a
// count passed its bound (this failure came after the bound's), and
// returns the end of the latest window among those at their bound.
func (s *Service) addFailures(ctx context.Context, keys []failureKey, now time.Time) (over bool, locked time.Time, err error) {
	for _, k := range keys {
		n, until, err := s.store.AddFailure(ctx, k.key, now, FailureWindow)
		if err != nil {
			return false, time.Time{}, err
		}
		over = over || n > k.max
		if n >= k.max && until.After(locked) {
			locked = until
		}
	}
	return over, locked, nil
}

// login checks the name, password, flag and second factor, in an order
// and with work that are the same whether or not the name exists.
func (s *Service) login(ctx context.Context, req LoginRequest, keys []failureKey, now time.Time) (*LoginResult, error) {
	u, ls, err := s.userAndSecrets(ctx, req.Username)
	if err != nil {
		return nil, err
	}
	if u != nil {
		// The attempt is the user's, right or wrong: their audit trail
		// shows the failed logins of their name.
		sshdeck.SetAuditActor(ctx, u.ID)
		sshdeck.SetAuditTarget(ctx, auth.UserTarget(u))
	}
	if u == nil || ls.PasswordHash == "" {
		// The same argon2id work as a real check, so that an unknown
		// name answers in the time a wrong password does.
		if err := auth.VerifyNoPassword(ctx, req.Password); err != nil {
			return nil, err
		}
		return nil, errWrongLogin
	}
	ok, err := auth.VerifyPassword(ctx, ls.PasswordHash, req.Password)
	if err != nil {
		return nil, err
	}
	if !ok || u.Disabled {
		return nil, errWrongLogin
	}
	// Right, unless failures counted while it was checked lock it out.
	if err := s.lockedOut(ctx, keys, now); err != nil {
		return nil, err
	}
	if ls.TOTP != nil {
		if err := s.spendCode(ctx, ls, req.TOTP, now); err != nil {
			return nil, err
		}
	}
	if auth.NeedsRehash(ls.PasswordHash, auth.DefaultPasswordParams) {
		s.rehash(ctx, ls, req.Password)
	}
	label := "login"
	if req.ClientAddr != "" {
		label += " from " + req.ClientAddr
	}
	scopes := sshdeck.UserScopes(u.Admin)
	bearer, t, err := s.admin.Issue(ctx, u, label, scopes, s.LoginTTL)
	if err != nil {
		return nil, err
	}
	return &LoginResult{Token: bearer, ID: t.ID, ExpiresAt: t.ExpiresAt, Scopes: t.Scopes}, nil
}

// noUserID is an id no user has (NewID writes hex after the prefix): the
// login secrets read for a name no user has.
const noUserID = "usr_nobody"

// userAndSecrets returns the named user and their login secrets: nil and
// nil for a name no user has; empty secrets for a user who has none. It
// makes the same reads either way: for an unknown name it reads the
// secrets of noUserID, so that a store whose reads cost a round trip
// (DynamoDB) does not answer an unknown name one read sooner.
func (s *Service) userAndSecrets(ctx context.Context, name string) (*sshdeck.User, *sshdeck.LoginSecrets, error) {
	u, err := s.store.UserByName(ctx, name)
	if sshdeck.ErrorCode(err) == sshdeck.NotFound {
		if _, err := s.secrets(ctx, noUserID); err != nil {
			return nil, nil, err
		}
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	ls, err := s.secrets(ctx, u.ID)
	if err != nil {
		return nil, nil, err
	}
	return u, ls, nil
}

// rehash stores the password under today's parameters, after a login
// with a hash of older ones. It is best effort: the login succeeded, and
// a concurrent change of the secrets (Conflict) simply wins.
func (s *Service) rehash(ctx context.Context, ls *sshdeck.LoginSecrets, password string) {
	hash, err := auth.HashPassword(ctx, password, auth.DefaultPasswordParams)
	if err != nil {
		return
	}
	next := *ls
	next.PasswordHash = hash
	_ = s.putSecrets(ctx, &next)
}
