package sshdeck

import (
	"context"
	"sync/atomic"
	"time"
)

// AuditRecord is one change made to sshdeck, or one attempt at it that
// failed (API.md, "Audit and events"): who (Actor) did what (Action) to
// what (Target), when, in which request and from where, and how it ended.
// It never holds a credential: targets name records by id, users by id or
// name, hosts by id.
type AuditRecord struct {
	// ID is "aud_" and 32 hex digits: unique, and in the order of Time
	// for records of different milliseconds.
	ID   string
	Time time.Time
	// Actor is the user id of the caller ("usr_…"); for the admin
	// commands "cli:<os user>", for a failed login of a name that is no
	// user's, "" (the Target names what was tried).
	Actor string
	// Action is the route's name (create-host, login, tunnel-connect…),
	// or the admin command's (user-add, token-revoke…).
	Action string
	// Target is what the action was on, as words: "host 12", "token
	// tok_…", "tunnel web", "user usr_…", "login bob".
	Target    string
	RequestID string
	// SourceIP is the caller's address: API Gateway's sourceIp, the
	// connection's peer locally, "local" for the admin commands.
	SourceIP string
	Outcome  AuditOutcome
	// Code is the error code of a failure ("" on success).
	Code Code
	// ExpiresAt is when the store may forget the record: its retention
	// (SSHDECK_AUDIT_DAYS) after Time, kept to the second. It is no part
	// of the API's record.
	ExpiresAt time.Time
}

// AuditOutcome is how an audited action ended.
type AuditOutcome string

const (
	AuditSuccess AuditOutcome = "success"
	AuditFailure AuditOutcome = "failure"
)

// AuditQuery selects audit records: those at or after Since, after the
// record After (a page's last: its Time and ID), of one Actor ("" for
// every actor's), at most Limit, in (Time, ID) order.
type AuditQuery struct {
	Actor string
	Since time.Time
	After *AuditRecord
	Limit int
}

// AuditStore keeps audit records. A change's record is written by the
// store write that makes the change, in the same transaction, when the
// write's context carries it (AuditCommit); PutAuditRecord writes one
// alone: a failure, which changed nothing, or a change that is no store
// write (a forward opened).
type AuditStore interface {
	PutAuditRecord(ctx context.Context, r *AuditRecord) error
	// AuditRecords answers q; records past their retention may be gone.
	AuditRecords(ctx context.Context, q AuditQuery) ([]*AuditRecord, error)
}

// AuditNote is a request's audit record on its way to the store: the
// request's wrapper makes it (WithAudit), the handler and service fill its
// target, the store write that is the change takes it (AuditToWrite) and
// marks it written, and the wrapper writes it alone when no write did.
type AuditNote struct {
	Record  AuditRecord
	written atomic.Bool
}

// MarkWritten records that a store wrote the note, in the transaction of
// the change: the caller calls it once that transaction committed.
func (n *AuditNote) MarkWritten() { n.written.Store(true) }

// Written reports whether a store wrote the note.
func (n *AuditNote) Written() bool { return n.written.Load() }

type auditKey struct{}

type auditCommitKey struct{}

// WithAudit returns a context carrying the request's note.
func WithAudit(ctx context.Context, n *AuditNote) context.Context {
	return context.WithValue(ctx, auditKey{}, n)
}

// AuditOf returns the request's note, nil when the request is not
// audited (a read, a test's call).
func AuditOf(ctx context.Context) *AuditNote {
	n, _ := ctx.Value(auditKey{}).(*AuditNote)
	return n
}

// SetAuditTarget names what the request acts on, once it is known (a new
// host's id); a no-op when the request is not audited.
func SetAuditTarget(ctx context.Context, target string) {
	if n := AuditOf(ctx); n != nil {
		n.Record.Target = target
	}
}

// SetAuditActor names who the request acts as, once it is known (a login's
// user); a no-op when the request is not audited.
func SetAuditActor(ctx context.Context, actor string) {
	if n := AuditOf(ctx); n != nil {
		n.Record.Actor = actor
	}
}

// AuditCommit marks ctx as the context of the store write that is the
// request's change (its commit point): the store writes the request's note
// in that write's transaction. A service passes it to that one write, so
// that the writes before it (an id's sequence) and after it (a host's
// tunnels) do not carry the record.
func AuditCommit(ctx context.Context) context.Context {
	if AuditOf(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, auditCommitKey{}, true)
}

// AuditToWrite returns the note that a store write with ctx must write in
// its transaction: the request's, when ctx is its commit point and no
// write took it yet; else nil. The store calls MarkWritten once its
// transaction committed.
func AuditToWrite(ctx context.Context) *AuditNote {
	if commit, _ := ctx.Value(auditCommitKey{}).(bool); !commit {
		return nil
	}
	if n := AuditOf(ctx); n != nil && !n.Written() {
		return n
	}
	return nil
}
