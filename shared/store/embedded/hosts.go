package embedded

import (
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// NextHostID allocates the next host id of the owner from the sequence of the
// owner's bucket, which only grows and is stored with the bucket.
func (s *Store) NextHostID(ctx context.Context, owner string) (int64, error) {
	if owner == "" {
		return 0, fmt.Errorf("embedded: next host id: owner is required")
	}
	var id uint64
	err := s.update(ctx, "next host id", func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketHosts).CreateBucketIfNotExists([]byte(owner))
		if err != nil {
			return err
		}
		id, err = b.NextSequence()
		return err
	})
	if err != nil {
		return 0, err
	}
	return int64(id), nil
}

// CreateHost stores h, a new host of version 1; Conflict when its id exists.
func (s *Store) CreateHost(ctx context.Context, h *sshdeck.Host) error {
	if err := h.CheckNew(); err != nil {
		return fmt.Errorf("embedded: create host: %w", err)
	}
	return s.update(ctx, "create host", func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketHosts).CreateBucketIfNotExists([]byte(h.Owner))
		if err != nil {
			return err
		}
		key := hostKey(h.ID)
		if b.Get(key) != nil {
			return sshdeck.Errorf(sshdeck.Conflict, "host %d exists", h.ID)
		}
		// An id that did not come from NextHostID must not be handed out later.
		if uint64(h.ID) > b.Sequence() {
			if err := b.SetSequence(uint64(h.ID)); err != nil {
				return err
			}
		}
		return putJSON(b, key, h)
	})
}

// Host returns the owner's host; NotFound when absent.
func (s *Store) Host(ctx context.Context, owner string, id int64) (*sshdeck.Host, error) {
	var h *sshdeck.Host
	err := s.view(ctx, "host", func(tx *bolt.Tx) error {
		var err error
		h, err = loadHost(ownerBucket(tx, owner), id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Hosts returns the owner's hosts with an id above after, ordered by id
// (the order of their keys), at most limit of them (0: all).
func (s *Store) Hosts(ctx context.Context, owner string, after int64, limit int) ([]*sshdeck.Host, error) {
	hosts := []*sshdeck.Host{}
	err := s.view(ctx, "hosts", func(tx *bolt.Tx) error {
		b := ownerBucket(tx, owner)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.Seek(hostKey(max(after, 0) + 1)); k != nil && (limit <= 0 || len(hosts) < limit); k, _ = c.Next() {
			var h sshdeck.Host
			if _, err := getJSON(b, k, &h); err != nil {
				return err
			}
			hosts = append(hosts, &h)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return hosts, nil
}

// UpdateHost replaces the stored host with h if the stored version is
// h.Version-1; Conflict when it is not, NotFound when absent.
func (s *Store) UpdateHost(ctx context.Context, h *sshdeck.Host) error {
	return s.update(ctx, "update host", func(tx *bolt.Tx) error {
		b := ownerBucket(tx, h.Owner)
		stored, err := loadHost(b, h.ID)
		if err != nil {
			return err
		}
		if stored.Version != h.Version-1 {
			return sshdeck.Errorf(sshdeck.Conflict, "host %d changed since version %d", h.ID, h.Version-1)
		}
		return putJSON(b, hostKey(h.ID), h)
	})
}

// DeleteHost removes the owner's host and its file-manager entries, in one
// transaction; with version > 0 only at that version.
func (s *Store) DeleteHost(ctx context.Context, owner string, id int64, version int64) error {
	return s.update(ctx, "delete host", func(tx *bolt.Tx) error {
		b := ownerBucket(tx, owner)
		stored, err := loadHost(b, id)
		if err != nil {
			return err
		}
		if version > 0 && stored.Version != version {
			return sshdeck.Errorf(sshdeck.Conflict, "host %d changed since version %d", id, version)
		}
		if err := deleteFiles(tx, owner, id); err != nil {
			return err
		}
		return b.Delete(hostKey(id))
	})
}

// ownerBucket returns nil for an owner who never had a host id.
func ownerBucket(tx *bolt.Tx, owner string) *bolt.Bucket {
	if owner == "" {
		return nil
	}
	return tx.Bucket(bucketHosts).Bucket([]byte(owner))
}

func loadHost(b *bolt.Bucket, id int64) (*sshdeck.Host, error) {
	var h sshdeck.Host
	found := false
	if b != nil && id > 0 {
		var err error
		if found, err = getJSON(b, hostKey(id), &h); err != nil {
			return nil, err
		}
	}
	if !found {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "host %d not found", id)
	}
	return &h, nil
}

func hostKey(id int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(id))
}
