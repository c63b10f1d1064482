package sshdeck

import (
	"context"
	"net/url"
	"time"
)

// MaxAlertID is the longest alert id, in bytes: the id is stored with every
// user's dismissal of the alert.
const MaxAlertID = 128

// WebURL reports whether s is an absolute http or https URL, the only links
// an alert may offer (a javascript: link in a UI would run script).
func WebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Opaque == ""
}

// Alert is a notice shown to every user until it expires or the user
// dismisses it. Alerts are published by an admin (and stored) or come from
// a remote list.
type Alert struct {
	ID         string    `json:"id"`
	Title      string    `json:"title"`
	Message    string    `json:"message"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Priority   Priority  `json:"priority"`
	Type       AlertType `json:"type"`
	ActionURL  string    `json:"actionUrl"`
	ActionText string    `json:"actionText"`
	// CreatedAt is when a stored alert was published; zero for a remote one.
	CreatedAt time.Time `json:"createdAt,omitzero"`
}

// Expired reports whether the alert has expired at now.
func (a *Alert) Expired(now time.Time) bool { return !now.Before(a.ExpiresAt) }

// Priority is how urgent an alert is.
type Priority string

const (
	PriorityLow      Priority = "low"
	PriorityMedium   Priority = "medium"
	PriorityHigh     Priority = "high"
	PriorityCritical Priority = "critical"
)

// Rank orders priorities: the higher, the more urgent; 0 for an unknown one.
func (p Priority) Rank() int {
	switch p {
	case PriorityLow:
		return 1
	case PriorityMedium:
		return 2
	case PriorityHigh:
		return 3
	case PriorityCritical:
		return 4
	}
	return 0
}

// AlertType is how an alert is shown.
type AlertType string

const (
	AlertInfo    AlertType = "info"
	AlertWarning AlertType = "warning"
	AlertError   AlertType = "error"
	AlertSuccess AlertType = "success"
)

// Valid reports whether t is one of the alert types.
func (t AlertType) Valid() bool {
	switch t {
	case AlertInfo, AlertWarning, AlertError, AlertSuccess:
		return true
	}
	return false
}

// Dismissal records that a user hid an alert. It lasts as long as the alert
// (Until is the alert's expiry), after which a store may forget it.
type Dismissal struct {
	UserID  string    `json:"userId"`
	AlertID string    `json:"alertId"`
	At      time.Time `json:"at"`
	Until   time.Time `json:"until"`
}

// AlertStore persists published alerts and users' dismissals.
type AlertStore interface {
	// CreateAlert stores a; Conflict when its id exists.
	CreateAlert(ctx context.Context, a *Alert) error
	// Alerts returns the stored alerts not expired at now, ordered by id.
	Alerts(ctx context.Context, now time.Time) ([]*Alert, error)
	// DeleteAlert removes the alert; NotFound when absent.
	DeleteAlert(ctx context.Context, id string) error
	// DismissAlert stores d, replacing the user's dismissal of that alert.
	DismissAlert(ctx context.Context, d *Dismissal) error
	// Dismissals returns the user's dismissals still in force at now (Until
	// after now), ordered by alert id.
	Dismissals(ctx context.Context, userID string, now time.Time) ([]*Dismissal, error)
}
