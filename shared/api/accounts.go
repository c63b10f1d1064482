package api

import (
	"context"
	"net"
	"net/http"

	"github.com/sshdeck/sshdeck/shared/accounts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// accountRoutes binds the routes of login, the caller's account, tokens
// and the admin's users to their handlers.
func (s *Server) accountRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{
		"login":           s.login,
		"get-me":          s.getMe,
		"change-password": s.changePassword,
		"create-totp":     s.createTOTP,
		"enable-totp":     s.totpCode(s.cfg.Accounts.EnableTOTP, "TOTP enabled"),
		"disable-totp":    s.totpCode(s.cfg.Accounts.DisableTOTP, "TOTP disabled"),
		"list-users":      s.listUsers,
		"create-user":     s.createUser,
		"update-user":     s.updateUser,
		"list-tokens":     s.listTokens,
		"create-token":    s.createToken,
		"delete-token":    s.deleteToken,
	}
}

// login answers POST /auth/login, a public route: the lockout counts the
// client's address, which is the connection's locally and API Gateway's
// sourceIp in AWS (the proxy adapter's RemoteAddr). X-Forwarded-For is
// not read: any client can write it.
func (s *Server) login(w http.ResponseWriter, r *http.Request, _ sshdeck.Principal) error {
	var req accounts.LoginRequest
	if err := web.DecodeBody(w, r, &req); err != nil {
		return err
	}
	req.ClientAddr = clientAddr(r)
	res, err := s.cfg.Accounts.Login(r.Context(), req)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	web.WriteJSON(w, http.StatusOK, res)
	return nil
}

// clientAddr is the address of the request's client without its port.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

func (s *Server) getMe(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	me, err := s.cfg.Accounts.Me(r.Context(), caller)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, me)
	return nil
}

type passwordChange struct {
	Current string `json:"current"`
	New     string `json:"new"`
}

func (s *Server) changePassword(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	var req passwordChange
	if err := web.DecodeBody(w, r, &req); err != nil {
		return err
	}
	if err := s.cfg.Accounts.ChangePassword(r.Context(), caller, req.Current, req.New); err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, message{"Password changed"})
	return nil
}

func (s *Server) createTOTP(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	secret, err := s.cfg.Accounts.BeginTOTP(r.Context(), caller)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	web.WriteJSON(w, http.StatusOK, secret)
	return nil
}

type totpCode struct {
	Code string `json:"code"`
}

// totpCode answers the routes that take a code: enable and disable.
func (s *Server) totpCode(apply func(ctx context.Context, caller sshdeck.Principal, code string) error, done string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
		var req totpCode
		if err := web.DecodeBody(w, r, &req); err != nil {
			return err
		}
		if err := apply(r.Context(), caller, req.Code); err != nil {
			return err
		}
		web.WriteJSON(w, http.StatusOK, message{done})
		return nil
	}
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, _ sshdeck.Principal) error {
	users, err := s.cfg.Accounts.Users(r.Context())
	if err != nil {
		return err
	}
	return writePage(w, r, users, func(u accounts.UserView) string { return u.ID })
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, _ sshdeck.Principal) error {
	var req accounts.NewUser
	if err := web.DecodeBody(w, r, &req); err != nil {
		return err
	}
	u, err := s.cfg.Accounts.CreateUser(r.Context(), req)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/users/"+u.ID)
	web.WriteJSON(w, http.StatusCreated, u)
	return nil
}

func (s *Server) updateUser(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	var req accounts.UserChange
	if err := web.DecodeBody(w, r, &req); err != nil {
		return err
	}
	u, err := s.cfg.Accounts.UpdateUser(r.Context(), caller, r.PathValue("id"), req)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, u)
	return nil
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	tokens, err := s.cfg.Accounts.Tokens(r.Context(), caller)
	if err != nil {
		return err
	}
	return writePage(w, r, tokens, func(t accounts.TokenView) string { return t.ID })
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	var req accounts.NewToken
	if err := web.DecodeBody(w, r, &req); err != nil {
		return err
	}
	t, err := s.cfg.Accounts.CreateToken(r.Context(), caller, req)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", "/tokens/"+t.ID)
	web.WriteJSON(w, http.StatusCreated, t)
	return nil
}

func (s *Server) deleteToken(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	if err := s.cfg.Accounts.RevokeToken(r.Context(), caller, r.PathValue("id")); err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, message{"Token revoked"})
	return nil
}
