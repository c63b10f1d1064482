package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/sshdeck/sshdeck/shared/accounts"
)

// Login is POST /auth/login (no token needed): a token with every scope of
// the user. A user with TOTP on must send req.TOTP: without it the answer
// is a 401 that NeedsTOTP recognises.
func (c *Client) Login(ctx context.Context, req accounts.LoginRequest) (*accounts.LoginResult, error) {
	var res accounts.LoginResult
	_, err := c.do(ctx, call{base: c.BaseURL, method: "POST", path: "/auth/login", in: req, out: &res})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// Me is GET /users/me: the caller, with the scopes of the token.
func (c *Client) Me(ctx context.Context) (*accounts.Me, error) {
	var me accounts.Me
	if _, err := c.do(ctx, call{base: c.BaseURL, method: "GET", path: "/users/me", out: &me}); err != nil {
		return nil, err
	}
	return &me, nil
}

// ChangePassword is POST /users/me/password; the server revokes the
// user's other tokens.
func (c *Client) ChangePassword(ctx context.Context, current, next string) error {
	body := struct {
		Current string `json:"current"`
		New     string `json:"new"`
	}{current, next}
	_, err := c.do(ctx, call{base: c.BaseURL, method: "POST", path: "/users/me/password", in: body, out: &Message{}})
	return err
}

// BeginTOTP is POST /users/me/totp: a new secret and its otpauth:// URL,
// not in force until EnableTOTP proves a code of it.
func (c *Client) BeginTOTP(ctx context.Context) (*accounts.TOTPSecret, error) {
	var s accounts.TOTPSecret
	if _, err := c.do(ctx, call{base: c.BaseURL, method: "POST", path: "/users/me/totp", out: &s}); err != nil {
		return nil, err
	}
	return &s, nil
}

// totpBody is the body of enable and disable.
type totpBody struct {
	Code string `json:"code"`
}

// EnableTOTP is POST /users/me/totp/enable: from then on login needs a
// code.
func (c *Client) EnableTOTP(ctx context.Context, code string) error {
	_, err := c.do(ctx, call{base: c.BaseURL, method: "POST", path: "/users/me/totp/enable", in: totpBody{code}, out: &Message{}})
	return err
}

// DisableTOTP is DELETE /users/me/totp, proved by a current code.
func (c *Client) DisableTOTP(ctx context.Context, code string) error {
	_, err := c.do(ctx, call{base: c.BaseURL, method: "DELETE", path: "/users/me/totp", in: totpBody{code}, out: &Message{}})
	return err
}

// ListUsers is GET /users (admin), whole.
func (c *Client) ListUsers(ctx context.Context) ([]accounts.UserView, error) {
	list := []accounts.UserView{}
	_, err := c.do(ctx, call{base: c.BaseURL, method: "GET", path: "/users", out: &list})
	return list, err
}

// Users yields the users (admin) a page at a time.
func (c *Client) Users(ctx context.Context, pageSize int) iter.Seq2[accounts.UserView, error] {
	return pages[accounts.UserView](c, ctx, c.BaseURL, "/users", nil, pageSize)
}

// CreateUser is POST /users (admin).
func (c *Client) CreateUser(ctx context.Context, req accounts.NewUser) (*accounts.UserView, error) {
	var u accounts.UserView
	if _, err := c.do(ctx, call{base: c.BaseURL, method: "POST", path: "/users", in: req, out: &u}); err != nil {
		return nil, err
	}
	return &u, nil
}

// UpdateUser is PATCH /users/{id} (admin): disabling revokes every token
// of the user.
func (c *Client) UpdateUser(ctx context.Context, id string, change accounts.UserChange) (*accounts.UserView, error) {
	var u accounts.UserView
	if _, err := c.do(ctx, call{base: c.BaseURL, method: "PATCH", path: "/users/" + url.PathEscape(id), in: change, out: &u}); err != nil {
		return nil, err
	}
	return &u, nil
}

// ListTokens is GET /tokens, whole: the caller's tokens, never their
// secrets.
func (c *Client) ListTokens(ctx context.Context) ([]accounts.TokenView, error) {
	list := []accounts.TokenView{}
	_, err := c.do(ctx, call{base: c.BaseURL, method: "GET", path: "/tokens", out: &list})
	return list, err
}

// Tokens yields the caller's tokens a page at a time.
func (c *Client) Tokens(ctx context.Context, pageSize int) iter.Seq2[accounts.TokenView, error] {
	return pages[accounts.TokenView](c, ctx, c.BaseURL, "/tokens", nil, pageSize)
}

// CreateToken is POST /tokens: the bearer string is in the answer, once.
func (c *Client) CreateToken(ctx context.Context, req accounts.NewToken) (*accounts.CreatedToken, error) {
	var t accounts.CreatedToken
	if _, err := c.do(ctx, call{base: c.BaseURL, method: "POST", path: "/tokens", in: req, out: &t}); err != nil {
		return nil, err
	}
	return &t, nil
}

// DeleteToken is DELETE /tokens/{id}: the token is revoked.
func (c *Client) DeleteToken(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{base: c.BaseURL, method: "DELETE", path: "/tokens/" + url.PathEscape(id), out: &Message{}})
	return err
}

// NeedsTOTP reports whether a login failed for want of a TOTP code alone:
// the right name and password of a user with TOTP on, sent without one.
// The contract has no code of its own for it (it is a 401, as a wrong
// password is), so the service's sentence tells it:
// "this user logs in with a TOTP code too: send totp".
func NeedsTOTP(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusUnauthorized && strings.Contains(e.Message, "send totp")
}
