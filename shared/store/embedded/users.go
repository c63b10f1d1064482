package embedded

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// CreateUser stores u; Conflict when its name is taken or its id exists.
func (s *Store) CreateUser(ctx context.Context, u *sshdeck.User) error {
	if u.ID == "" || u.Name == "" {
		return errors.New("embedded: create user: id and name are required")
	}
	return s.update(ctx, "create user", func(tx *bolt.Tx) error {
		users, names := tx.Bucket(bucketUsers), tx.Bucket(bucketUsernames)
		if names.Get([]byte(u.Name)) != nil {
			return sshdeck.Errorf(sshdeck.Conflict, "user name %q is taken", u.Name)
		}
		if users.Get([]byte(u.ID)) != nil {
			return sshdeck.Errorf(sshdeck.Conflict, "user %q exists", u.ID)
		}
		if err := putJSON(users, []byte(u.ID), userRecordOf(u)); err != nil {
			return err
		}
		return names.Put([]byte(u.Name), []byte(u.ID))
	})
}

// User returns the user with the id; NotFound when absent.
func (s *Store) User(ctx context.Context, id string) (*sshdeck.User, error) {
	var u *sshdeck.User
	err := s.view(ctx, "user", func(tx *bolt.Tx) error {
		var err error
		u, err = loadUser(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// UserByName returns the user with the name; NotFound when absent.
func (s *Store) UserByName(ctx context.Context, name string) (*sshdeck.User, error) {
	var u *sshdeck.User
	err := s.view(ctx, "user by name", func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketUsernames).Get([]byte(name))
		if id == nil {
			return sshdeck.Errorf(sshdeck.NotFound, "user %q not found", name)
		}
		var err error
		u, err = loadUser(tx, string(id))
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// Users returns every user ordered by name: the usernames index is walked, so
// the order is the byte order of the names.
func (s *Store) Users(ctx context.Context) ([]*sshdeck.User, error) {
	users := []*sshdeck.User{}
	err := s.view(ctx, "users", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUsernames).ForEach(func(name, id []byte) error {
			u, err := loadUser(tx, string(id))
			if err != nil {
				return fmt.Errorf("user name %q: %w", name, err)
			}
			users = append(users, u)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return users, nil
}

// UpdateUser applies the change to the user in one transaction. The
// usernames index holds the id only: a change of flags leaves it alone.
func (s *Store) UpdateUser(ctx context.Context, id string, change sshdeck.UserChange) (*sshdeck.User, error) {
	var u *sshdeck.User
	err := s.update(ctx, "update user", func(tx *bolt.Tx) error {
		var err error
		if u, err = loadUser(tx, id); err != nil {
			return err
		}
		if change.Disabled != nil {
			u.Disabled = *change.Disabled
		}
		if change.Admin != nil {
			u.Admin = *change.Admin
		}
		return putJSON(tx.Bucket(bucketUsers), []byte(id), userRecordOf(u))
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

func loadUser(tx *bolt.Tx, id string) (*sshdeck.User, error) {
	var r userRecord
	ok, err := getJSON(tx.Bucket(bucketUsers), []byte(id), &r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "user %q not found", id)
	}
	return r.user(), nil
}

// userRecord is a user as stored, JSON under the names of schema 1, and
// disabled (left out when false, so that an enabled user is the record
// of schema 1 as it was; a file of an older sshdeck reads as enabled).
type userRecord struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Admin     bool      `json:"admin"`
	Disabled  bool      `json:"disabled,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

func (*userRecord) jsonRecord() {}

func userRecordOf(u *sshdeck.User) *userRecord {
	return &userRecord{ID: u.ID, Name: u.Name, Admin: u.Admin, Disabled: u.Disabled, CreatedAt: u.CreatedAt}
}

func (r *userRecord) user() *sshdeck.User {
	return &sshdeck.User{ID: r.ID, Name: r.Name, Admin: r.Admin, Disabled: r.Disabled, CreatedAt: r.CreatedAt}
}
