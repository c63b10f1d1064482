package embedded

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// CreateAlert stores a; Conflict when its id exists. Alerts expired by the
// time a was created go in the same transaction: nothing else purges them.
func (s *Store) CreateAlert(ctx context.Context, a *sshdeck.Alert) error {
	return s.update(ctx, "create alert", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAlerts)
		if b.Get([]byte(a.ID)) != nil {
			return sshdeck.Errorf(sshdeck.Conflict, "alert %s exists", a.ID)
		}
		if err := purge(b, func(old *alertRecord) bool { return old.alert().Expired(a.CreatedAt) }); err != nil {
			return err
		}
		return putJSON(b, []byte(a.ID), alertRecordOf(a))
	})
}

// Alerts returns the alerts not expired at now, ordered by id.
func (s *Store) Alerts(ctx context.Context, now time.Time) ([]*sshdeck.Alert, error) {
	alerts := []*sshdeck.Alert{}
	err := s.view(ctx, "alerts", func(tx *bolt.Tx) error {
		return forEachJSON(tx.Bucket(bucketAlerts), func(r *alertRecord) error {
			if a := r.alert(); !a.Expired(now) {
				alerts = append(alerts, a)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return alerts, nil
}

// DeleteAlert removes the alert; NotFound when absent.
func (s *Store) DeleteAlert(ctx context.Context, id string) error {
	return s.update(ctx, "delete alert", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAlerts)
		if b.Get([]byte(id)) == nil {
			return sshdeck.Errorf(sshdeck.NotFound, "alert %s not found", id)
		}
		return b.Delete([]byte(id))
	})
}

// DismissAlert stores d, and forgets the user's dismissals that ran out.
func (s *Store) DismissAlert(ctx context.Context, d *sshdeck.Dismissal) error {
	return s.update(ctx, "dismiss alert", func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketDismissals).CreateBucketIfNotExists([]byte(d.UserID))
		if err != nil {
			return err
		}
		if err := purge(b, func(old *dismissalRecord) bool { return !d.At.Before(old.Until) }); err != nil {
			return err
		}
		return putJSON(b, []byte(d.AlertID), dismissalRecordOf(d))
	})
}

// Dismissals returns the user's dismissals in force at now, by alert id.
func (s *Store) Dismissals(ctx context.Context, userID string, now time.Time) ([]*sshdeck.Dismissal, error) {
	ds := []*sshdeck.Dismissal{}
	err := s.view(ctx, "dismissals", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketDismissals).Bucket([]byte(userID))
		if b == nil {
			return nil
		}
		return forEachJSON(b, func(r *dismissalRecord) error {
			if now.Before(r.Until) {
				ds = append(ds, r.dismissal())
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return ds, nil
}

// alertRecord is a published alert as stored, JSON under the names of
// schema 2; a zero CreatedAt is left out, as it always was.
type alertRecord struct {
	ID         string    `json:"id"`
	Title      string    `json:"title"`
	Message    string    `json:"message"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Priority   string    `json:"priority"`
	Type       string    `json:"type"`
	ActionURL  string    `json:"actionUrl"`
	ActionText string    `json:"actionText"`
	CreatedAt  time.Time `json:"createdAt,omitzero"`
}

func (*alertRecord) jsonRecord() {}

func alertRecordOf(a *sshdeck.Alert) *alertRecord {
	return &alertRecord{
		ID:         a.ID,
		Title:      a.Title,
		Message:    a.Message,
		ExpiresAt:  a.ExpiresAt,
		Priority:   string(a.Priority),
		Type:       string(a.Type),
		ActionURL:  a.ActionURL,
		ActionText: a.ActionText,
		CreatedAt:  a.CreatedAt,
	}
}

func (r *alertRecord) alert() *sshdeck.Alert {
	return &sshdeck.Alert{
		ID:         r.ID,
		Title:      r.Title,
		Message:    r.Message,
		ExpiresAt:  r.ExpiresAt,
		Priority:   sshdeck.Priority(r.Priority),
		Type:       sshdeck.AlertType(r.Type),
		ActionURL:  r.ActionURL,
		ActionText: r.ActionText,
		CreatedAt:  r.CreatedAt,
	}
}

// dismissalRecord is a user's dismissal as stored, JSON under the names of
// schema 2.
type dismissalRecord struct {
	UserID  string    `json:"userId"`
	AlertID string    `json:"alertId"`
	At      time.Time `json:"at"`
	Until   time.Time `json:"until"`
}

func (*dismissalRecord) jsonRecord() {}

func dismissalRecordOf(d *sshdeck.Dismissal) *dismissalRecord {
	return &dismissalRecord{UserID: d.UserID, AlertID: d.AlertID, At: d.At, Until: d.Until}
}

func (r *dismissalRecord) dismissal() *sshdeck.Dismissal {
	return &sshdeck.Dismissal{UserID: r.UserID, AlertID: r.AlertID, At: r.At, Until: r.Until}
}
