package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/app/awschain"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// admin is what the admin commands do: storeAdmin over the store, or the
// client of a running server's admin socket.
type admin interface {
	AddUser(ctx context.Context, name string, isAdmin bool) (*sshdeck.User, error)
	CreateToken(ctx context.Context, userName, label string, ttl time.Duration) (string, *sshdeck.Token, error)
	RevokeToken(ctx context.Context, id string) (*sshdeck.Token, error)
	PublishAlert(ctx context.Context, in *alerts.Input) (*sshdeck.Alert, error)
	Alerts(ctx context.Context) ([]*sshdeck.Alert, error)
	DeleteAlert(ctx context.Context, id string) error
}

// openAdmin reaches the store of cfg: a deployment's DynamoDB table (with
// the credentials of the SDK's chain: profiles, SSO, …), or the embedded
// store through the admin socket of a running server, else directly. The
// admin commands handle no credentials: they need no data key.
func openAdmin(ctx context.Context, cfg *settings) (admin, func(), error) {
	if cfg.Table == "" {
		if client, ok := dialAdminSocket(cfg.socketPath()); ok {
			return client, func() {}, nil
		}
	}
	a, err := app.Open(ctx, cfg.Config, app.Options{AWS: awschain.Load, NoDataKey: "the admin commands handle no credentials"})
	if errors.Is(err, embedded.ErrLocked) {
		return nil, nil, fmt.Errorf("%w, and no admin socket answers at %s: stop that process and try again", err, cfg.socketPath())
	}
	if err != nil {
		return nil, nil, err
	}
	return newStoreAdmin(a.Store, nil), func() { a.Close() }, nil
}

// runAdmin parses an admin command's arguments (positional of them), then
// runs fn with the store reached through openAdmin.
func runAdmin(ctx context.Context, fs *flag.FlagSet, cfg *settings, args []string, positional int, fn func(a admin, rest []string) error) error {
	rest, err := parse(fs, args, positional, cfg)
	if err != nil {
		return err
	}
	a, done, err := openAdmin(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	return fn(a, rest)
}

func userAddCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newAdminFlags("user add", &cfg, stderr)
	isAdmin := fs.Bool("admin", false, "the user may administer sshdeck")
	return runAdmin(ctx, fs, &cfg, args, 1, func(a admin, rest []string) error {
		u, err := a.AddUser(ctx, rest[0], *isAdmin)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created user %s (%s, admin: %t)\n", u.Name, u.ID, u.Admin)
		return nil
	})
}

func tokenCreateCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newAdminFlags("token create", &cfg, stderr)
	user := fs.String("user", "", "name of the user the token acts as (required)")
	ttl := fs.Duration("ttl", 720*time.Hour, "how long the token is valid; 0 never expires")
	label := fs.String("name", "", "a label to recognise the token by")
	return runAdmin(ctx, fs, &cfg, args, 0, func(a admin, _ []string) error {
		if *user == "" {
			return fmt.Errorf("%w: --user is required", errUsage)
		}
		bearer, t, err := a.CreateToken(ctx, *user, *label, *ttl)
		if err != nil {
			return err
		}
		expires := "never"
		if !t.ExpiresAt.IsZero() {
			expires = t.ExpiresAt.Format(time.RFC3339)
		}
		// The token alone on stdout, so that $(sshdeck token create ...) works.
		fmt.Fprintf(stderr, "token %s for user %s, expires %s\n", t.ID, *user, expires)
		fmt.Fprintln(stdout, bearer)
		return nil
	})
}

func tokenRevokeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newAdminFlags("token revoke", &cfg, stderr)
	return runAdmin(ctx, fs, &cfg, args, 1, func(a admin, rest []string) error {
		t, err := a.RevokeToken(ctx, rest[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked token %s (revoked at %s)\n", t.ID, t.RevokedAt.Format(time.RFC3339))
		return nil
	})
}
