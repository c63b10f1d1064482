package embedded

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// schemaVersion is the layout this package reads and writes (see the package
// comment). Raise it with a migration in prepare when the layout changes.
const schemaVersion = 8

var (
	bucketMeta        = []byte("meta")
	bucketUsers       = []byte("users")
	bucketUsernames   = []byte("usernames")
	bucketTokens      = []byte("tokens")
	bucketTokenHashes = []byte("token_hashes")
	bucketHosts       = []byte("hosts")
	bucketFiles       = []byte("files")
	bucketAlerts      = []byte("alerts")
	bucketDismissals  = []byte("dismissals")
	bucketCache       = []byte("cache")
	bucketTunnels     = []byte("tunnels")
	bucketKnownHosts  = []byte("known_hosts")
	// Schema 5: accounts.
	bucketLoginSecrets  = []byte("login_secrets")
	bucketLoginFailures = []byte("login_failures")

	keySchema = []byte("schema")
)

// ErrLocked is wrapped by the error of Open when another process (or another
// Open in this one) holds the store's file.
var ErrLocked = errors.New("store is locked")

// Store is the sshdeck.Store over a bbolt file.
type Store struct {
	db    *bolt.DB
	group groupCommit
	// auditWritten wakes the webhooks (AuditWritten).
	auditWritten auditSignal
}

var _ sshdeck.Store = (*Store)(nil)

// Open opens the store at path, creating the file (mode 0600) if needed. It
// waits at most a second for the file lock, then fails with ErrLocked rather
// than hanging behind a running server.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, &lockedError{path: path}
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	if err := db.Update(prepare); err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// prepare creates the buckets of a new file, migrates an older one, and
// refuses a file written by a newer sshdeck, whose layout this one could
// corrupt. Schemas 2, 3 and 5 only added buckets, which creating the
// missing ones adds (schema 5's tokens gained two JSON fields that older
// records lack and read as before); schema 4 stores hosts in binary, which
// migrateHosts rewrites; schema 6 writes hosts in format 2 (jump hosts),
// which an older sshdeck cannot read, and reads format 1 as before, so it
// needs no rewrite: its number keeps an older sshdeck from opening the file;
// schema 7 writes hosts in format 3 (identityFile) on the same terms;
// schema 8 adds the audit buckets (audit.go), which an older sshdeck would
// leave unwritten: its number keeps it from opening the file.
// It all happens in the one transaction of Open: a crash leaves the file
// as it was.
func prepare(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	schema := 0 // a new file
	if v := meta.Get(keySchema); v != nil {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 {
			return fmt.Errorf("unreadable schema %q", v)
		}
		if n > schemaVersion {
			return fmt.Errorf("the file has schema %d, newer than schema %d of this sshdeck; upgrade sshdeck", n, schemaVersion)
		}
		schema = n
	}
	for _, name := range [][]byte{bucketUsers, bucketUsernames, bucketTokens, bucketTokenHashes, bucketHosts, bucketFiles, bucketAlerts, bucketDismissals, bucketCache, bucketTunnels, bucketKnownHosts, bucketLoginSecrets, bucketLoginFailures, bucketAudit, bucketAuditTime, bucketAuditActor} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	if schema == schemaVersion {
		return nil
	}
	if schema > 0 && schema < 4 {
		if err := migrateHosts(tx); err != nil {
			return fmt.Errorf("migrate schema %d to %d: %w", schema, schemaVersion, err)
		}
	}
	return meta.Put(keySchema, []byte(strconv.Itoa(schemaVersion)))
}

// Close releases the file and its lock.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("embedded: close: %w", err)
	}
	return nil
}

// Ping runs a read transaction: it fails once the store is closed.
func (s *Store) Ping(ctx context.Context) error {
	return s.view(ctx, "ping", func(*bolt.Tx) error { return nil })
}

func (s *Store) view(ctx context.Context, op string, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return wrap(op, err)
	}
	return wrap(op, s.db.View(fn))
}

// update runs fn in a write transaction. When ctx is the commit point of
// an audited request (sshdeck.AuditToWrite), the request's audit record is
// written in the same transaction, after fn: both commit, or neither.
func (s *Store) update(ctx context.Context, op string, fn func(*bolt.Tx) error) error {
	// A cancelled request must not write, even though bbolt would not notice.
	if err := ctx.Err(); err != nil {
		return wrap(op, err)
	}
	note := sshdeck.AuditToWrite(ctx)
	if note == nil {
		return wrap(op, s.commit(fn))
	}
	err := s.commit(func(tx *bolt.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return putAudit(tx, &note.Record)
	})
	if err == nil {
		note.MarkWritten()
		s.auditWritten.signal()
	}
	return wrap(op, err)
}

// wrap leaves coded errors alone: their message is meant for the caller.
func wrap(op string, err error) error {
	var coded *sshdeck.Error
	if err == nil || errors.As(err, &coded) {
		return err
	}
	return fmt.Errorf("embedded: %s: %w", op, err)
}

type lockedError struct{ path string }

func (e *lockedError) Error() string {
	return fmt.Sprintf("store %s is in use by another process (a running `sshdeck serve`?)", e.path)
}

func (e *lockedError) Unwrap() error { return ErrLocked }
