package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// PutRecentFile stores e and trims the host's recent entries to keep, in
// one transaction with the check that the host exists.
func (s *Store) PutRecentFile(ctx context.Context, e *sshdeck.FileEntry, keep int) error {
	return s.update(ctx, "put recent file", func(tx *bolt.Tx) error {
		b, err := fileBucket(tx, e)
		if err != nil {
			return err
		}
		key := fileKey(e.HostID, e.Kind, e.Path)
		stored := fileRecordOf(e)
		var prev fileRecord
		if found, err := getJSON(b, key, &prev); err != nil {
			return err
		} else if found {
			stored.CreatedAt = prev.CreatedAt
		}
		if err := putJSON(b, key, stored); err != nil {
			return err
		}
		return trimRecent(b, e.HostID, keep)
	})
}

// trimRecent deletes the host's recent entries beyond the newest keep. It
// counts the keys first, and decodes only the entries' times when there is
// something to trim: an add to a full list is the common case of a busy
// host, and decoding every entry of it whole was most of the add's cost.
func trimRecent(b *bolt.Bucket, hostID int64, keep int) error {
	prefix := filePrefix(hostID, sshdeck.RecentFile)
	c := b.Cursor()
	n := 0
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	if n <= keep {
		return nil
	}
	// The path is the key's rest; the time is all the order needs besides.
	entries := make([]*sshdeck.FileEntry, 0, n)
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var stamp fileStamp
		if err := json.Unmarshal(v, &stamp); err != nil {
			return fmt.Errorf("decode value of key %q: %w", k, err)
		}
		entries = append(entries, &sshdeck.FileEntry{HostID: hostID, Kind: sshdeck.RecentFile, Path: string(k[len(prefix):]), LastOpened: stamp.LastOpened})
	}
	sshdeck.SortFiles(entries, sshdeck.RecentFile)
	for _, old := range entries[keep:] {
		if err := b.Delete(fileKey(old.HostID, old.Kind, old.Path)); err != nil {
			return err
		}
	}
	return nil
}

// AddShortcut stores e unless its path is there, in one transaction with
// the checks of the host and of the count.
func (s *Store) AddShortcut(ctx context.Context, e *sshdeck.FileEntry, max int) (bool, error) {
	added := false
	err := s.update(ctx, "add shortcut", func(tx *bolt.Tx) error {
		b, err := fileBucket(tx, e)
		if err != nil {
			return err
		}
		key := fileKey(e.HostID, e.Kind, e.Path)
		if b.Get(key) != nil {
			return nil
		}
		n := 0
		prefix := filePrefix(e.HostID, e.Kind)
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			n++
		}
		if n >= max {
			return sshdeck.ShortcutsExceeded(e.HostID, max)
		}
		added = true
		return putJSON(b, key, fileRecordOf(e))
	})
	return added, err
}

// Files returns the entries of one kind of the owner's host.
func (s *Store) Files(ctx context.Context, owner string, hostID int64, kind sshdeck.FileKind) ([]*sshdeck.FileEntry, error) {
	entries := []*sshdeck.FileEntry{}
	err := s.view(ctx, "files", func(tx *bolt.Tx) error {
		b := ownerFiles(tx, owner)
		if b == nil {
			return nil
		}
		var err error
		entries, err = loadFiles(b, hostID, kind)
		return err
	})
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// DeleteFile removes one entry; NotFound when absent.
func (s *Store) DeleteFile(ctx context.Context, owner string, hostID int64, kind sshdeck.FileKind, path string) error {
	return s.update(ctx, "delete file", func(tx *bolt.Tx) error {
		b := ownerFiles(tx, owner)
		key := fileKey(hostID, kind, path)
		if b == nil || b.Get(key) == nil {
			return sshdeck.Errorf(sshdeck.NotFound, "no %s entry with that path on host %d", kind, hostID)
		}
		return b.Delete(key)
	})
}

// deleteFiles removes every entry of the owner's host, within the
// transaction that deletes the host.
func deleteFiles(tx *bolt.Tx, owner string, hostID int64) error {
	b := ownerFiles(tx, owner)
	if b == nil {
		return nil
	}
	prefix := hostKey(hostID)
	c := b.Cursor()
	// Cursor.Delete moves the cursor on to the next key.
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// fileBucket returns the owner's bucket of entries for a write of e, which
// needs the owner's host e.HostID: NotFound without it.
func fileBucket(tx *bolt.Tx, e *sshdeck.FileEntry) (*bolt.Bucket, error) {
	if e.Owner == "" || e.Path == "" {
		return nil, errors.New("a file entry needs an owner and a path")
	}
	if e.Kind != sshdeck.RecentFile && e.Kind != sshdeck.Shortcut {
		return nil, fmt.Errorf("unknown file kind %q", e.Kind)
	}
	if _, err := loadHost(ownerBucket(tx, e.Owner), e.HostID); err != nil {
		return nil, err
	}
	return tx.Bucket(bucketFiles).CreateBucketIfNotExists([]byte(e.Owner))
}

func ownerFiles(tx *bolt.Tx, owner string) *bolt.Bucket {
	if owner == "" {
		return nil
	}
	return tx.Bucket(bucketFiles).Bucket([]byte(owner))
}

// loadFiles returns the entries of one kind of a host, in the order of
// sshdeck.FileStore.Files.
func loadFiles(b *bolt.Bucket, hostID int64, kind sshdeck.FileKind) ([]*sshdeck.FileEntry, error) {
	entries := []*sshdeck.FileEntry{}
	prefix := filePrefix(hostID, kind)
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var r fileRecord
		if _, err := getJSON(b, k, &r); err != nil {
			return nil, err
		}
		entries = append(entries, r.entry())
	}
	sshdeck.SortFiles(entries, kind)
	return entries, nil
}

// fileKey is the host id (as in hostKey), one byte for the kind, then the
// path: the entries of a host, and of a kind, are one key range each.
func fileKey(hostID int64, kind sshdeck.FileKind, path string) []byte {
	return append(filePrefix(hostID, kind), path...)
}

func filePrefix(hostID int64, kind sshdeck.FileKind) []byte {
	k := byte('s')
	if kind == sshdeck.RecentFile {
		k = 'r'
	}
	return append(hostKey(hostID), k)
}

// fileRecord is a file-manager entry as stored, JSON under the names of
// schema 2. Owner, HostID, Kind and Path are also in the bucket and the key.
type fileRecord struct {
	Owner        string    `json:"owner"`
	HostID       int64     `json:"hostId"`
	Kind         string    `json:"kind"`
	Path         string    `json:"path"`
	Name         string    `json:"name"`
	IsSSH        bool      `json:"isSSH"`
	SSHSessionID string    `json:"sshSessionId"`
	CreatedAt    time.Time `json:"createdAt"`
	LastOpened   time.Time `json:"lastOpened"`
}

// fileStamp is the one field of a fileRecord that trimRecent decodes.
type fileStamp struct {
	LastOpened time.Time `json:"lastOpened"`
}

func (*fileRecord) jsonRecord() {}

func fileRecordOf(e *sshdeck.FileEntry) *fileRecord {
	return &fileRecord{
		Owner:        e.Owner,
		HostID:       e.HostID,
		Kind:         string(e.Kind),
		Path:         e.Path,
		Name:         e.Name,
		IsSSH:        e.IsSSH,
		SSHSessionID: e.SSHSessionID,
		CreatedAt:    e.CreatedAt,
		LastOpened:   e.LastOpened,
	}
}

func (r *fileRecord) entry() *sshdeck.FileEntry {
	return &sshdeck.FileEntry{
		Owner:        r.Owner,
		HostID:       r.HostID,
		Kind:         sshdeck.FileKind(r.Kind),
		Path:         r.Path,
		Name:         r.Name,
		IsSSH:        r.IsSSH,
		SSHSessionID: r.SSHSessionID,
		CreatedAt:    r.CreatedAt,
		LastOpened:   r.LastOpened,
	}
}
