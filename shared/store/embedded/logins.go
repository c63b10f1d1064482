package embedded

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// LoginSecrets returns the user's password hash and second factor.
func (s *Store) LoginSecrets(ctx context.Context, userID string) (*sshdeck.LoginSecrets, error) {
	var r loginSecretsRecord
	err := s.view(ctx, "login secrets", func(tx *bolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bucketLoginSecrets), []byte(userID), &r)
		if err == nil && !ok {
			err = sshdeck.Errorf(sshdeck.NotFound, "user %q has no login secrets", userID)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return r.secrets(userID), nil
}

// PutLoginSecrets stores ls if the stored version is ls.Version-1 (none
// stored for 1); the check and the put are one transaction.
func (s *Store) PutLoginSecrets(ctx context.Context, ls *sshdeck.LoginSecrets) error {
	if ls.UserID == "" || ls.Version < 1 {
		return errors.New("embedded: put login secrets: user id and a version from 1 are required")
	}
	return s.update(ctx, "put login secrets", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLoginSecrets)
		var stored loginSecretsRecord
		ok, err := getJSON(b, []byte(ls.UserID), &stored)
		if err != nil {
			return err
		}
		if (!ok && ls.Version != 1) || (ok && stored.Version != ls.Version-1) {
			return sshdeck.Errorf(sshdeck.Conflict, "login secrets of user %q changed meanwhile", ls.UserID)
		}
		return putJSON(b, []byte(ls.UserID), loginSecretsRecordOf(ls))
	})
}

// Failures returns the count of the key's window in force at now.
func (s *Store) Failures(ctx context.Context, key string, now time.Time) (int, time.Time, error) {
	if err := checkFailureKey("login failures", key); err != nil {
		return 0, time.Time{}, err
	}
	var r failureRecord
	err := s.view(ctx, "login failures", func(tx *bolt.Tx) error {
		_, err := getJSON(tx.Bucket(bucketLoginFailures), []byte(key), &r)
		return err
	})
	if err != nil || !now.Before(r.Until) {
		return 0, time.Time{}, err
	}
	return r.N, r.Until, nil
}

// AddFailure adds one to the key's window in force at now, or opens one.
// Transactions are serial, so no add is lost; the windows that ended are
// deleted by the same write, so the bucket holds little more than the
// windows in force.
func (s *Store) AddFailure(ctx context.Context, key string, now time.Time, window time.Duration) (int, time.Time, error) {
	if err := checkFailureKey("add login failure", key); err != nil {
		return 0, time.Time{}, err
	}
	if window <= 0 {
		return 0, time.Time{}, errors.New("embedded: add login failure: a window is required")
	}
	var r failureRecord
	err := s.update(ctx, "add login failure", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLoginFailures)
		r = failureRecord{} // a group commit may run this again
		if _, err := getJSON(b, []byte(key), &r); err != nil {
			return err
		}
		if !now.Before(r.Until) {
			r = failureRecord{Until: now.Add(window).UTC()}
		}
		r.N++
		if err := purge(b, func(old *failureRecord) bool { return !now.Before(old.Until) }); err != nil {
			return err
		}
		return putJSON(b, []byte(key), &r)
	})
	if err != nil {
		return 0, time.Time{}, err
	}
	return r.N, r.Until, nil
}

// checkFailureKey refuses a key the caller did not bound, as the DynamoDB
// store must (its keys are bounded): the same key works in both.
func checkFailureKey(op, key string) error {
	if key == "" || len(key) > sshdeck.MaxFailureKey {
		return fmt.Errorf("embedded: %s: a key of 1 to %d bytes is required, not %d", op, sshdeck.MaxFailureKey, len(key))
	}
	return nil
}

// loginSecretsRecord is a user's LoginSecrets as stored, JSON under the
// names of schema 5, at the user's id. The TOTP secrets are sealed.
type loginSecretsRecord struct {
	PasswordHash string    `json:"passwordHash,omitempty"`
	TOTP         []byte    `json:"totp,omitempty"`
	PendingTOTP  []byte    `json:"pendingTotp,omitempty"`
	TOTPStep     int64     `json:"totpStep,omitempty"`
	Version      int64     `json:"version"`
	UpdatedAt    time.Time `json:"updatedAt,omitzero"`
}

func (*loginSecretsRecord) jsonRecord() {}

func loginSecretsRecordOf(ls *sshdeck.LoginSecrets) *loginSecretsRecord {
	return &loginSecretsRecord{
		PasswordHash: ls.PasswordHash,
		TOTP:         ls.TOTP,
		PendingTOTP:  ls.PendingTOTP,
		TOTPStep:     ls.TOTPStep,
		Version:      ls.Version,
		UpdatedAt:    ls.UpdatedAt,
	}
}

func (r *loginSecretsRecord) secrets(userID string) *sshdeck.LoginSecrets {
	return &sshdeck.LoginSecrets{
		UserID:       userID,
		PasswordHash: r.PasswordHash,
		TOTP:         r.TOTP,
		PendingTOTP:  r.PendingTOTP,
		TOTPStep:     r.TOTPStep,
		Version:      r.Version,
		UpdatedAt:    r.UpdatedAt,
	}
}

// failureRecord is one key's window of failed logins, JSON of schema 5.
type failureRecord struct {
	N     int       `json:"n"`
	Until time.Time `json:"until"`
}

func (*failureRecord) jsonRecord() {}
