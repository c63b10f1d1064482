package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/sshdeck/sshdeck/shared/accounts"
	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// storeAdmin is every admin operation over a store: users and tokens
// (auth.Admin) and published alerts.
type storeAdmin struct {
	*auth.Admin
	alerts   *alerts.Service
	accounts *accounts.Service
}

// newStoreAdmin returns the admin operations over store, whose revocations
// reach authn (nil without a server in this process), allowing each user
// tokenLimit tokens that are neither revoked nor expired.
func newStoreAdmin(store sshdeck.Store, authn *auth.Authenticator, tokenLimit int) *storeAdmin {
	a := auth.NewAdmin(store, authn, nil)
	a.SetTokenLimit(tokenLimit)
	// No sealer: no admin command opens a TOTP secret.
	return &storeAdmin{Admin: a, alerts: alerts.NewService(store, nil, nil), accounts: accounts.NewService(store, a, nil, nil)}
}

func (a *storeAdmin) SetPassword(ctx context.Context, name, password string) (*sshdeck.User, error) {
	return a.accounts.SetPassword(ctx, name, password)
}

func (a *storeAdmin) PublishAlert(ctx context.Context, in *alerts.Input) (*sshdeck.Alert, error) {
	return a.alerts.Publish(ctx, in)
}

func (a *storeAdmin) Alerts(ctx context.Context) ([]*sshdeck.Alert, error) {
	return a.alerts.Published(ctx)
}

func (a *storeAdmin) DeleteAlert(ctx context.Context, id string) error {
	return a.alerts.Delete(ctx, id)
}

func alertPublishCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newAdminFlags("alert publish", &cfg, stderr)
	var in alerts.Input
	fs.StringVar(&in.Title, "title", "", "the alert's title (required)")
	fs.StringVar(&in.Message, "message", "", "the alert's text")
	priority := fs.String("priority", "medium", "low, medium, high or critical")
	typ := fs.String("type", "info", "info, warning, error or success")
	expires := fs.Duration("expires", 24*time.Hour, "how long the alert is shown")
	expiresAt := fs.String("expires-at", "", "when the alert expires (RFC 3339); wins over --expires")
	fs.StringVar(&in.ActionURL, "action-url", "", "an http(s) link the alert offers")
	fs.StringVar(&in.ActionText, "action-text", "", "the label of that link")
	return runAdmin(ctx, fs, &cfg, args, 0, func(a admin, _ []string) error {
		in.Priority, in.Type, in.ExpiresAt = sshdeck.Priority(*priority), sshdeck.AlertType(*typ), *expiresAt
		if in.ExpiresAt == "" {
			in.ExpiresAt = time.Now().Add(*expires).UTC().Format(time.RFC3339)
		}
		alert, err := a.PublishAlert(ctx, &in)
		if err != nil {
			return err
		}
		// The id alone on stdout, so that $(sshdeck alert publish ...) works.
		fmt.Fprintf(stderr, "published alert %s (%s), expires %s\n", alert.ID, alert.Priority, alert.ExpiresAt.Format(time.RFC3339))
		fmt.Fprintln(stdout, alert.ID)
		return nil
	})
}

func alertListCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newAdminFlags("alert list", &cfg, stderr)
	return runAdmin(ctx, fs, &cfg, args, 0, func(a admin, _ []string) error {
		list, err := a.Alerts(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tPRIORITY\tTYPE\tEXPIRES\tTITLE")
		for _, alert := range list {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", alert.ID, alert.Priority, alert.Type, alert.ExpiresAt.Format(time.RFC3339), alert.Title)
		}
		return w.Flush()
	})
}

func alertDeleteCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg settings
	fs := newAdminFlags("alert delete", &cfg, stderr)
	return runAdmin(ctx, fs, &cfg, args, 1, func(a admin, rest []string) error {
		if err := a.DeleteAlert(ctx, rest[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted alert %s\n", rest[0])
		return nil
	})
}
