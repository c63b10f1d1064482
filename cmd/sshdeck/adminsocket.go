package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// The admin socket lets admin commands reach the store while serve holds its
// lock. It is a Unix socket in the data directory (0700) with mode 0600:
// only the user who runs serve (and root) may connect, and that user can
// read the store file anyway. It is created under the umask 077, so there
// is no moment when it is open to others.

func listenAdminSocket(path string) (net.Listener, error) {
	// serve holds the store's lock, so a socket file here is a dead server's.
	os.Remove(path)
	l, err := listenPrivate(path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

type userRequest struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin"`
}

type tokenRequest struct {
	User   string          `json:"user"`
	Name   string          `json:"name"`
	Scopes []sshdeck.Scope `json:"scopes"`
	TTL    time.Duration   `json:"ttl"`
}

type tokenResponse struct {
	Bearer string         `json:"bearer"`
	Token  *sshdeck.Token `json:"token"`
}

type passwordRequest struct {
	Name     string `json:"name"`
	Password string `json:"password"`
}

type revokeRequest struct {
	ID string `json:"id"`
}

type nameRequest struct {
	Name string `json:"name"`
}

type flagRequest struct {
	Name  string `json:"name"`
	Value bool   `json:"value"`
}

type disableResponse struct {
	User    *sshdeck.User    `json:"user"`
	Revoked []*sshdeck.Token `json:"revoked"`
}

type alertIDRequest struct {
	ID string `json:"id"`
}

// actorHeader carries the admin command's actor (cliActor) to serve, which
// records the command: the socket admits only serve's own OS user (and
// root), who could write the store anyway.
const actorHeader = "X-Sshdeck-Actor"

// adminHandler serves the admin operations of store on the socket, each
// change recorded in rec as its command's actor's.
func adminHandler(store *storeAdmin, rec *audit.Recorder) http.Handler {
	a := auditedAdmin{admin: store, rec: rec}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /users", adminOp(func(ctx context.Context, req userRequest) (any, error) {
		return a.AddUser(ctx, req.Name, req.Admin)
	}))
	mux.HandleFunc("POST /users/list", adminOp(func(ctx context.Context, _ struct{}) (any, error) {
		return a.Users(ctx)
	}))
	mux.HandleFunc("POST /users/disabled", adminOp(func(ctx context.Context, req flagRequest) (any, error) {
		u, revoked, err := a.SetDisabled(ctx, req.Name, req.Value)
		return disableResponse{u, revoked}, err
	}))
	mux.HandleFunc("POST /users/admin", adminOp(func(ctx context.Context, req flagRequest) (any, error) {
		return a.SetAdmin(ctx, req.Name, req.Value)
	}))
	mux.HandleFunc("POST /users/password", adminOp(func(ctx context.Context, req passwordRequest) (any, error) {
		return a.SetPassword(ctx, req.Name, req.Password)
	}))
	mux.HandleFunc("POST /tokens/list", adminOp(func(ctx context.Context, req nameRequest) (any, error) {
		return a.Tokens(ctx, req.Name)
	}))
	mux.HandleFunc("POST /tokens/revoke-all", adminOp(func(ctx context.Context, req nameRequest) (any, error) {
		return a.RevokeAll(ctx, req.Name)
	}))
	mux.HandleFunc("POST /tokens", adminOp(func(ctx context.Context, req tokenRequest) (any, error) {
		bearer, t, err := a.CreateScopedToken(ctx, req.User, req.Name, req.Scopes, req.TTL)
		return tokenResponse{bearer, t}, err
	}))
	mux.HandleFunc("POST /tokens/revoke", adminOp(func(ctx context.Context, req revokeRequest) (any, error) {
		return a.RevokeToken(ctx, req.ID)
	}))
	mux.HandleFunc("POST /alerts", adminOp(func(ctx context.Context, req alerts.Input) (any, error) {
		return a.PublishAlert(ctx, &req)
	}))
	mux.HandleFunc("POST /alerts/list", adminOp(func(ctx context.Context, _ struct{}) (any, error) {
		return a.Alerts(ctx)
	}))
	mux.HandleFunc("POST /alerts/delete", adminOp(func(ctx context.Context, req alertIDRequest) (any, error) {
		return struct{}{}, a.DeleteAlert(ctx, req.ID)
	}))
	return mux
}

func adminOp[Req any](op func(context.Context, Req) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		var resp any
		err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req)
		if err != nil {
			err = sshdeck.Errorf(sshdeck.Invalid, "malformed admin request")
		} else {
			resp, err = op(withActor(r.Context(), r.Header.Get(actorHeader)), req)
		}
		status := http.StatusOK
		if err != nil {
			code := sshdeck.ErrorCode(err)
			status, resp = web.Status(code), web.ErrorBody{Error: sshdeck.ErrorMessage(err), Code: code}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(resp)
	}
}

// adminClient calls a running server's admin socket.
type adminClient struct{ http *http.Client }

// dialAdminSocket returns a client when a server answers on the socket.
func dialAdminSocket(path string) (*adminClient, bool) {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil, false
	}
	conn.Close()
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}
	return &adminClient{http: &http.Client{Transport: &http.Transport{DialContext: dial}, Timeout: 30 * time.Second}}, true
}

func (c *adminClient) call(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://sshdeck"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	httpReq.Header.Set(actorHeader, cliActor())
	httpResp, err := c.http.Do(httpReq)
	if err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	defer httpResp.Body.Close()
	if httpResp.StatusCode != http.StatusOK {
		var e web.ErrorBody
		if err := json.NewDecoder(httpResp.Body).Decode(&e); err != nil || e.Code == "" {
			return fmt.Errorf("admin socket: status %d", httpResp.StatusCode)
		}
		return &sshdeck.Error{Code: e.Code, Message: e.Error}
	}
	if err := json.NewDecoder(httpResp.Body).Decode(resp); err != nil {
		return errors.Join(errors.New("admin socket: malformed answer"), err)
	}
	return nil
}

func (c *adminClient) AddUser(ctx context.Context, name string, isAdmin bool) (*sshdeck.User, error) {
	var u sshdeck.User
	return &u, c.call(ctx, "/users", userRequest{name, isAdmin}, &u)
}

func (c *adminClient) Users(ctx context.Context) ([]*sshdeck.User, error) {
	var list []*sshdeck.User
	err := c.call(ctx, "/users/list", struct{}{}, &list)
	return list, err
}

func (c *adminClient) SetDisabled(ctx context.Context, name string, disabled bool) (*sshdeck.User, []*sshdeck.Token, error) {
	var resp disableResponse
	err := c.call(ctx, "/users/disabled", flagRequest{name, disabled}, &resp)
	return resp.User, resp.Revoked, err
}

func (c *adminClient) SetPassword(ctx context.Context, name, password string) (*sshdeck.User, error) {
	var u sshdeck.User
	return &u, c.call(ctx, "/users/password", passwordRequest{name, password}, &u)
}

func (c *adminClient) SetAdmin(ctx context.Context, name string, isAdmin bool) (*sshdeck.User, error) {
	var u sshdeck.User
	return &u, c.call(ctx, "/users/admin", flagRequest{name, isAdmin}, &u)
}

func (c *adminClient) Tokens(ctx context.Context, userName string) ([]auth.TokenInfo, error) {
	var list []auth.TokenInfo
	err := c.call(ctx, "/tokens/list", nameRequest{userName}, &list)
	return list, err
}

func (c *adminClient) RevokeAll(ctx context.Context, userName string) ([]auth.TokenInfo, error) {
	var list []auth.TokenInfo
	err := c.call(ctx, "/tokens/revoke-all", nameRequest{userName}, &list)
	return list, err
}

func (c *adminClient) CreateScopedToken(ctx context.Context, userName, label string, scopes []sshdeck.Scope, ttl time.Duration) (string, *sshdeck.Token, error) {
	var resp tokenResponse
	err := c.call(ctx, "/tokens", tokenRequest{userName, label, scopes, ttl}, &resp)
	return resp.Bearer, resp.Token, err
}

func (c *adminClient) RevokeToken(ctx context.Context, id string) (*sshdeck.Token, error) {
	var t sshdeck.Token
	return &t, c.call(ctx, "/tokens/revoke", revokeRequest{id}, &t)
}

func (c *adminClient) PublishAlert(ctx context.Context, in *alerts.Input) (*sshdeck.Alert, error) {
	var a sshdeck.Alert
	return &a, c.call(ctx, "/alerts", in, &a)
}

func (c *adminClient) Alerts(ctx context.Context) ([]*sshdeck.Alert, error) {
	var list []*sshdeck.Alert
	err := c.call(ctx, "/alerts/list", struct{}{}, &list)
	return list, err
}

func (c *adminClient) DeleteAlert(ctx context.Context, id string) error {
	return c.call(ctx, "/alerts/delete", alertIDRequest{id}, &struct{}{})
}
