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
		if err := purge(b, func(old *sshdeck.Alert) bool { return old.Expired(a.CreatedAt) }); err != nil {
			return err
		}
		return putJSON(b, []byte(a.ID), a)
	})
}

// Alerts returns the alerts not expired at now, ordered by id.
func (s *Store) Alerts(ctx context.Context, now time.Time) ([]*sshdeck.Alert, error) {
	alerts := []*sshdeck.Alert{}
	err := s.view(ctx, "alerts", func(tx *bolt.Tx) error {
		return forEachJSON(tx.Bucket(bucketAlerts), func(a *sshdeck.Alert) error {
			if !a.Expired(now) {
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
		if err := purge(b, func(old *sshdeck.Dismissal) bool { return !d.At.Before(old.Until) }); err != nil {
			return err
		}
		return putJSON(b, []byte(d.AlertID), d)
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
		return forEachJSON(b, func(d *sshdeck.Dismissal) error {
			if now.Before(d.Until) {
				ds = append(ds, d)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return ds, nil
}
