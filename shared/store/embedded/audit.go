package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Audit records (schema 8) are JSON in bucket audit under the sequence
// number their transaction drew (8 bytes, big-endian): bbolt runs one write
// transaction at a time, so key order is commit order, and a reader that
// follows the bucket from a sequence on (AuditStream: the webhooks) never
// misses a record committed behind one it has read. Two index buckets
// answer queries: audit_time, keyed by time (8 bytes of Unix nanoseconds)
// then id, the order of queries and of their cursors (a page ends at a
// record's time and id), holding the sequence and the record's expiry (8
// bytes of Unix nanoseconds, 0 for none), and audit_actor, keyed by
// actor, a zero byte, then the same, holding the sequence. A record past
// its expiry is deleted by the writes of later ones, oldest first
// (purgeAudit), which the time index's values tell without decoding a
// record.

var (
	bucketAudit      = []byte("audit")
	bucketAuditTime  = []byte("audit_time")
	bucketAuditActor = []byte("audit_actor")

	keyAuditCursor = []byte("audit_cursor")
)

// PutAuditRecord writes a record alone: a failure, or a change that is no
// store write.
func (s *Store) PutAuditRecord(ctx context.Context, r *sshdeck.AuditRecord) error {
	err := s.update(ctx, "put audit record", func(tx *bolt.Tx) error { return putAudit(tx, r) })
	if err == nil {
		s.auditWritten.signal()
	}
	return err
}

// putAudit writes r in tx, under the next sequence number, and deletes the
// records that expired by r's time.
func putAudit(tx *bolt.Tx, r *sshdeck.AuditRecord) error {
	b := tx.Bucket(bucketAudit)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	if err := purgeAudit(tx, r.Time); err != nil {
		return err
	}
	if err := putJSON(b, u64(seq), auditRecordOf(r)); err != nil {
		return err
	}
	at := timeKey(r.Time, r.ID)
	if err := tx.Bucket(bucketAuditTime).Put(at, binary.BigEndian.AppendUint64(u64(seq), unixNanos(r.ExpiresAt))); err != nil {
		return err
	}
	return tx.Bucket(bucketAuditActor).Put(actorKey(r.Actor, at), u64(seq))
}

// purgeAudit deletes the records expired at now, oldest first, stopping
// at the first that is not: their retention is one setting, so time order
// is expiry order but for a change of the setting, which delays a
// purge, never loses a record early.
func purgeAudit(tx *bolt.Tx, now time.Time) error {
	records, byTime, byActor := tx.Bucket(bucketAudit), tx.Bucket(bucketAuditTime), tx.Bucket(bucketAuditActor)
	c := byTime.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		seq, expires := v[:8], binary.BigEndian.Uint64(v[8:])
		if expires == 0 || uint64(now.UnixNano()) < expires {
			return nil
		}
		// Its actor names its key in the actor index.
		var r auditRecord
		if _, err := getJSON(records, seq, &r); err != nil {
			return err
		}
		if err := records.Delete(seq); err != nil {
			return err
		}
		if err := byActor.Delete(actorKey(r.Actor, k)); err != nil {
			return err
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// AuditRecords answers q from the time index, or the actor's.
func (s *Store) AuditRecords(ctx context.Context, q sshdeck.AuditQuery) ([]*sshdeck.AuditRecord, error) {
	out := []*sshdeck.AuditRecord{}
	err := s.view(ctx, "audit records", func(tx *bolt.Tx) error {
		index, prefix := tx.Bucket(bucketAuditTime), []byte(nil)
		if q.Actor != "" {
			index, prefix = tx.Bucket(bucketAuditActor), actorKey(q.Actor, nil)
		}
		from := append(bytes.Clone(prefix), timeKey(q.Since, "")...)
		if q.After != nil && !q.After.Time.Before(q.Since) {
			from = append(bytes.Clone(prefix), timeKey(q.After.Time, q.After.ID)...)
		}
		records := tx.Bucket(bucketAudit)
		c := index.Cursor()
		for k, v := c.Seek(from); k != nil && bytes.HasPrefix(k, prefix) && (q.Limit <= 0 || len(out) < q.Limit); k, v = c.Next() {
			var r auditRecord
			// Both indexes' values start with the sequence.
			if ok, err := getJSON(records, v[:8], &r); err != nil || !ok {
				return err
			}
			rec := r.record()
			if q.After != nil && !auditAfter(rec, q.After) {
				continue
			}
			out = append(out, rec)
		}
		return nil
	})
	return out, err
}

// auditAfter reports whether r comes after the record a in (Time, ID)
// order: a page's cursor.
func auditAfter(r, a *sshdeck.AuditRecord) bool {
	if !r.Time.Equal(a.Time) {
		return r.Time.After(a.Time)
	}
	return r.ID > a.ID
}

// AuditEntry is an audit record with its sequence number: the order of
// AuditStream.
type AuditEntry struct {
	Seq    uint64
	Record *sshdeck.AuditRecord
}

// AuditStream returns up to limit records committed after sequence after,
// in commit order: the webhooks' queue, which a restart resumes from the
// cursor (AuditCursor).
func (s *Store) AuditStream(ctx context.Context, after uint64, limit int) ([]AuditEntry, error) {
	var out []AuditEntry
	err := s.view(ctx, "audit stream", func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAudit).Cursor()
		for k, v := c.Seek(u64(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var r auditRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			out = append(out, AuditEntry{Seq: binary.BigEndian.Uint64(k), Record: r.record()})
		}
		return nil
	})
	return out, err
}

// AuditCursor is the sequence number of the last record the webhooks
// delivered; ok is false when the store never had a cursor (webhooks were
// never configured), which the deliverer tells apart from "none delivered
// yet" (0) to start from the end (AuditEnd) rather than the beginning.
func (s *Store) AuditCursor(ctx context.Context) (seq uint64, ok bool, err error) {
	err = s.view(ctx, "audit cursor", func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyAuditCursor); len(v) == 8 {
			seq, ok = binary.BigEndian.Uint64(v), true
		}
		return nil
	})
	return seq, ok, err
}

// SetAuditCursor records that the webhooks delivered every record up to
// seq.
func (s *Store) SetAuditCursor(ctx context.Context, seq uint64) error {
	return s.update(ctx, "set audit cursor", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyAuditCursor, u64(seq))
	})
}

// AuditEnd is the sequence number of the last record committed (0: none
// ever), purged or not: a cursor set to it delivers only the records
// committed from then on.
func (s *Store) AuditEnd(ctx context.Context) (uint64, error) {
	var seq uint64
	err := s.view(ctx, "audit end", func(tx *bolt.Tx) error {
		seq = tx.Bucket(bucketAudit).Sequence()
		return nil
	})
	return seq, err
}

// AuditWritten is signalled after a commit that wrote an audit record,
// so that the webhooks' deliverer, its one reader, sends it at once
// instead of at its next poll. A signal may stand for several commits,
// and a reader that missed one finds the records at its poll: it is a
// hint, never the queue (the audit bucket is).
func (s *Store) AuditWritten() <-chan struct{} { return s.auditWritten.channel() }

// auditSignal is AuditWritten's channel, made at its first use so that a
// Store needs no constructor for it.
type auditSignal struct {
	once sync.Once
	ch   chan struct{}
}

func (a *auditSignal) channel() chan struct{} {
	a.once.Do(func() { a.ch = make(chan struct{}, 1) })
	return a.ch
}

// signal wakes the reader without waiting: a signal already pending
// stands for this one too.
func (a *auditSignal) signal() {
	select {
	case a.channel() <- struct{}{}:
	default:
	}
}

func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// unixNanos is t in Unix nanoseconds, 0 for the zero time and before
// 1970 (no record has one).
func unixNanos(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(max(t.UnixNano(), 0))
}

// timeKey is a record's key in the time index: its time, then its id, so
// that the index's order is the queries' (time, id) whatever the order of
// the commits. Times before 1970 are 0: no record has one.
func timeKey(t time.Time, id string) []byte {
	return append(u64(unixNanos(t)), id...)
}

// actorKey is a key of the actor index: actor, a zero byte (no actor holds
// one: user ids and "cli:" names are text), then the time key.
func actorKey(actor string, at []byte) []byte {
	k := append([]byte(actor), 0)
	return append(k, at...)
}

// auditRecord is an audit record as stored, JSON under the names of
// schema 8.
type auditRecord struct {
	ID        string    `json:"id"`
	Time      time.Time `json:"time"`
	Actor     string    `json:"actor"`
	Action    string    `json:"action"`
	Target    string    `json:"target"`
	RequestID string    `json:"requestId"`
	SourceIP  string    `json:"sourceIp"`
	Outcome   string    `json:"outcome"`
	Code      string    `json:"code,omitempty"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

func (*auditRecord) jsonRecord() {}

func auditRecordOf(r *sshdeck.AuditRecord) *auditRecord {
	return &auditRecord{
		ID: r.ID, Time: r.Time, Actor: r.Actor, Action: r.Action, Target: r.Target,
		RequestID: r.RequestID, SourceIP: r.SourceIP, Outcome: string(r.Outcome), Code: string(r.Code),
		ExpiresAt: r.ExpiresAt,
	}
}

func (r *auditRecord) record() *sshdeck.AuditRecord {
	return &sshdeck.AuditRecord{
		ID: r.ID, Time: r.Time, Actor: r.Actor, Action: r.Action, Target: r.Target,
		RequestID: r.RequestID, SourceIP: r.SourceIP, Outcome: sshdeck.AuditOutcome(r.Outcome), Code: sshdeck.Code(r.Code),
		ExpiresAt: r.ExpiresAt,
	}
}
