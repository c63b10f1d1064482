// Package alerts holds the rules of system alerts above any store: what an
// admin may publish, which alerts a user sees (stored and remote ones, not
// expired, not dismissed by that user, most urgent first) and dismissals.
package alerts

import (
	"cmp"
	"context"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Limits of an alert's fields, in characters.
const (
	MaxTitle      = 200
	MaxMessage    = 4000
	MaxActionURL  = 2048
	MaxActionText = 64
)

// Remote is a remote list of alerts. It never fails: a remote that does not
// answer has no alerts, or the ones it last gave (upstream.RemoteAlerts).
type Remote interface {
	Alerts(ctx context.Context) []sshdeck.Alert
}

// Service applies the alert rules over a store and an optional remote list.
type Service struct {
	store  sshdeck.AlertStore
	remote Remote
	now    func() time.Time
}

// NewService returns a Service; remote may be nil, now is the clock
// (time.Now when nil).
func NewService(store sshdeck.AlertStore, remote Remote, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, remote: remote, now: now}
}

// Input is what an admin publishes. Priority defaults to medium, Type to
// info; ExpiresAt is required: an alert is a passing notice.
type Input struct {
	Title      string            `json:"title"`
	Message    string            `json:"message"`
	ExpiresAt  string            `json:"expiresAt"` // RFC 3339
	Priority   sshdeck.Priority  `json:"priority"`
	Type       sshdeck.AlertType `json:"type"`
	ActionURL  string            `json:"actionUrl"`
	ActionText string            `json:"actionText"`
}

// Publish stores a new alert.
func (s *Service) Publish(ctx context.Context, in *Input) (*sshdeck.Alert, error) {
	now := s.timestamp()
	a := &sshdeck.Alert{
		ID: sshdeck.NewID("alr_"), Title: in.Title, Message: in.Message,
		Priority: cmp.Or(in.Priority, sshdeck.PriorityMedium), Type: cmp.Or(in.Type, sshdeck.AlertInfo),
		ActionURL: in.ActionURL, ActionText: in.ActionText, CreatedAt: now,
	}
	if in.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339, in.ExpiresAt)
		if err != nil {
			return nil, sshdeck.Errorf(sshdeck.Invalid, "expiresAt: must be an RFC 3339 time, e.g. 2026-11-21T18:00:00Z")
		}
		a.ExpiresAt = t.UTC()
	}
	if err := checkAlert(a, now); err != nil {
		return nil, err
	}
	sshdeck.SetAuditTarget(ctx, "alert "+a.ID)
	if err := s.store.CreateAlert(sshdeck.AuditCommit(ctx), a); err != nil {
		return nil, err
	}
	return a, nil
}

// Delete removes a published alert.
func (s *Service) Delete(ctx context.Context, id string) error {
	sshdeck.SetAuditTarget(ctx, "alert "+id)
	return s.store.DeleteAlert(sshdeck.AuditCommit(ctx), id)
}

// Published returns the stored alerts not expired, by id: what an admin
// manages.
func (s *Service) Published(ctx context.Context) ([]*sshdeck.Alert, error) {
	return s.store.Alerts(ctx, s.now())
}

// Visible returns the alerts the user sees, most urgent first.
func (s *Service) Visible(ctx context.Context, userID string) ([]*sshdeck.Alert, error) {
	now := s.now()
	all, err := s.all(ctx, now)
	if err != nil {
		return nil, err
	}
	dismissed, err := s.store.Dismissals(ctx, userID, now)
	if err != nil {
		return nil, err
	}
	hidden := make(map[string]bool, len(dismissed))
	for _, d := range dismissed {
		hidden[d.AlertID] = true
	}
	visible := all[:0]
	for _, a := range all {
		if !hidden[a.ID] {
			visible = append(visible, a)
		}
	}
	return visible, nil
}

// Dismiss hides an alert from the user until it expires. NotFound when no
// alert in force has the id; dismissing twice is no error.
func (s *Service) Dismiss(ctx context.Context, userID, alertID string) error {
	if alertID == "" {
		return sshdeck.Errorf(sshdeck.Invalid, "alertId is required")
	}
	if len(alertID) > sshdeck.MaxAlertID {
		return sshdeck.Errorf(sshdeck.Invalid, "alertId: at most %d bytes", sshdeck.MaxAlertID)
	}
	if err := check.Plain("alertId", alertID, ""); err != nil {
		return err
	}
	sshdeck.SetAuditTarget(ctx, "alert "+alertID)
	now := s.now()
	all, err := s.all(ctx, now)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(all, func(a *sshdeck.Alert) bool { return a.ID == alertID })
	if i < 0 {
		return sshdeck.Errorf(sshdeck.NotFound, "no alert %q in force", alertID)
	}
	return s.store.DismissAlert(sshdeck.AuditCommit(ctx), &sshdeck.Dismissal{
		UserID: userID, AlertID: alertID, At: s.timestamp(), Until: all[i].ExpiresAt,
	})
}

// all returns the alerts in force, stored and remote, most urgent first: by
// priority, then the one expiring soonest, then by id. A stored alert wins
// over a remote one with its id.
func (s *Service) all(ctx context.Context, now time.Time) ([]*sshdeck.Alert, error) {
	all, err := s.store.Alerts(ctx, now)
	if err != nil {
		return nil, err
	}
	if s.remote != nil {
		seen := make(map[string]bool, len(all))
		for _, a := range all {
			seen[a.ID] = true
		}
		for _, a := range s.remote.Alerts(ctx) {
			if !seen[a.ID] && !a.Expired(now) {
				seen[a.ID] = true
				all = append(all, &a)
			}
		}
	}
	slices.SortFunc(all, func(a, b *sshdeck.Alert) int {
		return cmp.Or(
			cmp.Compare(b.Priority.Rank(), a.Priority.Rank()),
			a.ExpiresAt.Compare(b.ExpiresAt),
			cmp.Compare(a.ID, b.ID),
		)
	})
	return all, nil
}

func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// checkAlert reports the first field of a that may not be published at now.
func checkAlert(a *sshdeck.Alert, now time.Time) error {
	switch {
	case a.Title == "":
		return sshdeck.Errorf(sshdeck.Invalid, "title is required")
	case utf8.RuneCountInString(a.Title) > MaxTitle:
		return sshdeck.Errorf(sshdeck.Invalid, "title: at most %d characters", MaxTitle)
	case utf8.RuneCountInString(a.Message) > MaxMessage:
		return sshdeck.Errorf(sshdeck.Invalid, "message: at most %d characters", MaxMessage)
	case a.ExpiresAt.IsZero():
		return sshdeck.Errorf(sshdeck.Invalid, "expiresAt is required (RFC 3339, e.g. 2026-11-21T18:00:00Z)")
	case !a.ExpiresAt.After(now):
		return sshdeck.Errorf(sshdeck.Invalid, "expiresAt: must be in the future")
	case a.Priority.Rank() == 0:
		return sshdeck.Errorf(sshdeck.Invalid, "priority: must be low, medium, high or critical")
	case !a.Type.Valid():
		return sshdeck.Errorf(sshdeck.Invalid, "type: must be info, warning, error or success")
	case len(a.ActionURL) > MaxActionURL:
		return sshdeck.Errorf(sshdeck.Invalid, "actionUrl: at most %d bytes", MaxActionURL)
	case a.ActionURL != "" && !sshdeck.WebURL(a.ActionURL):
		return sshdeck.Errorf(sshdeck.Invalid, "actionUrl: must be an absolute http or https URL")
	case utf8.RuneCountInString(a.ActionText) > MaxActionText:
		return sshdeck.Errorf(sshdeck.Invalid, "actionText: at most %d characters", MaxActionText)
	case a.ActionText != "" && a.ActionURL == "":
		return sshdeck.Errorf(sshdeck.Invalid, "actionText: needs an actionUrl to act on")
	}
	// The message may span lines; the other texts are one line.
	return check.First(
		check.Plain("title", a.Title, ""),
		check.Plain("message", a.Message, "\r\n\t"),
		check.Plain("actionText", a.ActionText, ""),
		check.Plain("actionUrl", a.ActionURL, ""),
	)
}
