package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/app/awschain"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// admin is what the admin commands do: storeAdmin over the store, or the
// client of a running server's admin socket.
type admin interface {
	AddUser(ctx context.Context, name string, isAdmin bool) (*sshdeck.User, error)
	Users(ctx context.Context) ([]*sshdeck.User, error)
	SetDisabled(ctx context.Context, name string, disabled bool) (*sshdeck.User, []*sshdeck.Token, error)
	SetAdmin(ctx context.Context, name string, isAdmin bool) (*sshdeck.User, error)
	SetPassword(ctx context.Context, name, password string) (*sshdeck.User, error)
	CreateScopedToken(ctx context.Context, userName, label string, scopes []sshdeck.Scope, ttl time.Duration) (string, *sshdeck.Token, error)
	Tokens(ctx context.Context, userName string) ([]auth.TokenInfo, error)
	RevokeToken(ctx context.Context, id string) (*sshdeck.Token, error)
	RevokeAll(ctx context.Context, userName string) ([]auth.TokenInfo, error)
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
	audited := auditedAdmin{admin: newStoreAdmin(a.Store, nil, cfg.Limits.Tokens), rec: a.Audit, actor: cliActor()}
	return audited, func() { a.Close() }, nil
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
	scopeList := fs.String("scope", "", "comma-separated scopes (hosts:read,…); default every scope of the user")
	return runAdmin(ctx, fs, &cfg, args, 0, func(a admin, _ []string) error {
		if *user == "" {
			return fmt.Errorf("%w: --user is required", errUsage)
		}
		var scopes []sshdeck.Scope
		if *scopeList != "" {
			var err error
			if scopes, err = sshdeck.ParseScopes(strings.Split(*scopeList, ",")); err != nil {
				return err
			}
		}
		bearer, t, err := a.CreateScopedToken(ctx, *user, *label, scopes, *ttl)
		if err != nil {
			return err
		}
		expires := "never"
		if !t.ExpiresAt.IsZero() {
			expires = t.ExpiresAt.Format(time.RFC3339)
		}
		// The token alone on stdout, so that $(sshdeck token create ...) works.
		fmt.Fprintf(stderr, "token %s for user %s, scopes %s, expires %s\n", t.ID, *user, sshdeck.JoinScopes(t.Scopes, ","), expires)
		fmt.Fprintln(stdout, bearer)
		return nil
	})
}

func tokenRevokeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newAdminFlags("token revoke", &cfg, stderr)
	all := fs.Bool("all", false, "revoke every token of --user instead of one")
	user := fs.String("user", "", "with --all: the user whose tokens to revoke")
	return runAdmin(ctx, fs, &cfg, args, anyCount, func(a admin, rest []string) error {
		switch {
		case *all && (*user == "" || len(rest) > 0):
			return fmt.Errorf("%w: token revoke --all takes --user NAME and no id", errUsage)
		case !*all && (len(rest) != 1 || *user != ""):
			return fmt.Errorf("%w: token revoke takes one token id, or --all --user NAME", errUsage)
		case *all:
			revoked, err := a.RevokeAll(ctx, *user)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "revoked %d token(s) of user %s\n", len(revoked), *user)
			for _, t := range revoked {
				fmt.Fprintf(stdout, "revoked token %s (%s)\n", t.ID, t.Name)
			}
			return nil
		}
		t, err := a.RevokeToken(ctx, rest[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked token %s (revoked at %s)\n", t.ID, t.RevokedAt.Format(time.RFC3339))
		return nil
	})
}

func tokenListCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newAdminFlags("token list", &cfg, stderr)
	user := fs.String("user", "", "list the tokens of this user only")
	return runAdmin(ctx, fs, &cfg, args, 0, func(a admin, _ []string) error {
		list, err := a.Tokens(ctx, *user)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tNAME\tUSER\tSCOPES\tCREATED\tEXPIRES\tREVOKED")
		for _, t := range list {
			expires, revoked := "never", "no"
			if !t.ExpiresAt.IsZero() {
				expires = t.ExpiresAt.UTC().Format(time.RFC3339)
			}
			if t.Revoked {
				revoked = t.RevokedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, orDash(t.Name), t.User, orDash(sshdeck.JoinScopes(t.Scopes, ",")),
				t.CreatedAt.UTC().Format(time.RFC3339), expires, revoked)
		}
		return w.Flush()
	})
}

func userListCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newAdminFlags("user list", &cfg, stderr)
	return runAdmin(ctx, fs, &cfg, args, 0, func(a admin, _ []string) error {
		users, err := a.Users(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tID\tADMIN\tDISABLED\tCREATED")
		for _, u := range users {
			fmt.Fprintf(w, "%s\t%s\t%t\t%t\t%s\n", u.Name, u.ID, u.Admin, u.Disabled, u.CreatedAt.UTC().Format(time.RFC3339))
		}
		return w.Flush()
	})
}

// userDisableCommand is `user disable` (disabled) and `user enable`.
func userDisableCommand(disabled bool) func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	name := map[bool]string{true: "user disable", false: "user enable"}[disabled]
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		var cfg settings
		fs := newAdminFlags(name, &cfg, stderr)
		return runAdmin(ctx, fs, &cfg, args, 1, func(a admin, rest []string) error {
			u, revoked, err := a.SetDisabled(ctx, rest[0], disabled)
			if err != nil {
				return err
			}
			if disabled {
				fmt.Fprintf(stdout, "disabled user %s (%s) and revoked its %d token(s)\n", u.Name, u.ID, len(revoked))
			} else {
				fmt.Fprintf(stdout, "enabled user %s (%s); its revoked tokens stay revoked: make one with sshdeck token create --user %s\n", u.Name, u.ID, u.Name)
			}
			return nil
		})
	}
}

func userSetAdminCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newAdminFlags("user set-admin", &cfg, stderr)
	isAdmin := fs.Bool("admin", true, "whether the user may administer sshdeck (--admin=false withdraws it)")
	return runAdmin(ctx, fs, &cfg, args, 1, func(a admin, rest []string) error {
		u, err := a.SetAdmin(ctx, rest[0], *isAdmin)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "user %s (%s): admin %t\n", u.Name, u.ID, u.Admin)
		return nil
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
