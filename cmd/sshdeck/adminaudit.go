package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os/user"
	"time"

	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// auditedAdmin records each admin command that changes something (API.md,
// "Audit and events": the admin CLI and its socket), as the API records
// its requests: one record per command, written with the change, a
// failure alone. The actor is "cli:<os user>" of whoever ran the command,
// the source "local". It wraps the store's admin operations wherever they
// run: in the command's own process, or in serve's, behind the socket.
type auditedAdmin struct {
	admin
	rec *audit.Recorder
	// actor is the command's; "" takes the one its context carries
	// (withActor: the socket's request's).
	actor string
}

// adminSource is the source address of the admin commands' records.
const adminSource = "local"

// audited runs op, the command action on target, recorded as a's.
func audited[T any](a auditedAdmin, ctx context.Context, action, target string, op func(context.Context) (T, error)) (T, error) {
	actor := a.actor
	if actor == "" {
		actor, _ = ctx.Value(actorKey{}).(string)
	}
	if actor == "" {
		actor = "cli:unknown"
	}
	ctx, note := a.rec.Begin(ctx, actor, action, target, cliRequestID(), adminSource)
	v, err := op(ctx)
	a.rec.Finish(ctx, note, err)
	return v, err
}

func (a auditedAdmin) AddUser(ctx context.Context, name string, isAdmin bool) (*sshdeck.User, error) {
	return audited(a, ctx, "user-add", "user named "+name, func(ctx context.Context) (*sshdeck.User, error) {
		return a.admin.AddUser(ctx, name, isAdmin)
	})
}

func (a auditedAdmin) SetDisabled(ctx context.Context, name string, disabled bool) (*sshdeck.User, []*sshdeck.Token, error) {
	action := "user-enable"
	if disabled {
		action = "user-disable"
	}
	var revoked []*sshdeck.Token
	u, err := audited(a, ctx, action, "user named "+name, func(ctx context.Context) (u *sshdeck.User, err error) {
		u, revoked, err = a.admin.SetDisabled(ctx, name, disabled)
		return u, err
	})
	return u, revoked, err
}

func (a auditedAdmin) SetAdmin(ctx context.Context, name string, isAdmin bool) (*sshdeck.User, error) {
	return audited(a, ctx, "user-set-admin", "user named "+name, func(ctx context.Context) (*sshdeck.User, error) {
		return a.admin.SetAdmin(ctx, name, isAdmin)
	})
}

func (a auditedAdmin) SetPassword(ctx context.Context, name, password string) (*sshdeck.User, error) {
	return audited(a, ctx, "user-passwd", "user named "+name, func(ctx context.Context) (*sshdeck.User, error) {
		return a.admin.SetPassword(ctx, name, password)
	})
}

func (a auditedAdmin) CreateScopedToken(ctx context.Context, userName, label string, scopes []sshdeck.Scope, ttl time.Duration) (string, *sshdeck.Token, error) {
	var bearer string
	t, err := audited(a, ctx, "token-create", "a token of user named "+userName, func(ctx context.Context) (t *sshdeck.Token, err error) {
		bearer, t, err = a.admin.CreateScopedToken(ctx, userName, label, scopes, ttl)
		return t, err
	})
	return bearer, t, err
}

func (a auditedAdmin) RevokeToken(ctx context.Context, id string) (*sshdeck.Token, error) {
	return audited(a, ctx, "token-revoke", "token "+id, func(ctx context.Context) (*sshdeck.Token, error) {
		return a.admin.RevokeToken(ctx, id)
	})
}

func (a auditedAdmin) RevokeAll(ctx context.Context, userName string) ([]auth.TokenInfo, error) {
	return audited(a, ctx, "token-revoke-all", "every token of user named "+userName, func(ctx context.Context) ([]auth.TokenInfo, error) {
		return a.admin.RevokeAll(ctx, userName)
	})
}

func (a auditedAdmin) PublishAlert(ctx context.Context, in *alerts.Input) (*sshdeck.Alert, error) {
	return audited(a, ctx, "alert-publish", "a new alert", func(ctx context.Context) (*sshdeck.Alert, error) {
		return a.admin.PublishAlert(ctx, in)
	})
}

func (a auditedAdmin) DeleteAlert(ctx context.Context, id string) error {
	_, err := audited(a, ctx, "alert-delete", "alert "+id, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.admin.DeleteAlert(ctx, id)
	})
	return err
}

type actorKey struct{}

// withActor returns ctx carrying the actor of a command that reached
// serve through the admin socket.
func withActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// cliActor names who runs this command: "cli:" and the OS user.
func cliActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return "cli:" + name
}

// cliRequestID is a command's request id in its record: the admin
// commands have no HTTP request of their own.
func cliRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return "cli-" + hex.EncodeToString(b[:])
}
