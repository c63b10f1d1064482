// Package audit is sshdeck's audit trail above the stores (API.md, "Audit
// and events"): the record of each change as the API and its events show
// it, the note a request carries to the store write that is its change
// (Begin, Finish), and the events that leave sshdeck with each record
// (Event: EventBridge in AWS, webhooks locally).
//
// A request's change is recorded once: the route wrappers of both
// services begin a note for every write route (auditroute.Run), the service passes
// sshdeck.AuditCommit(ctx) to the one store write that is the change, and
// the store writes the record in that write's transaction (the stores'
// audit.go). Finish writes the record alone when no store write did: a
// failure (outcome failure, with the error's code), which changed nothing,
// or a change that is no store write. So no change is ever without its
// record, and a failed request leaves one too.
package audit

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Record is an audit record as the API shows it (GET /audit), and the
// detail of its event.
type Record struct {
	ID        string    `json:"id"`
	Time      time.Time `json:"time"`
	Actor     string    `json:"actor"`
	Action    string    `json:"action"`
	Target    string    `json:"target"`
	RequestID string    `json:"requestId"`
	SourceIP  string    `json:"sourceIp"`
	Outcome   string    `json:"outcome"`
	// Code is the error code of a failure.
	Code string `json:"code,omitempty"`
}

// RecordOf is r as the API shows it.
func RecordOf(r *sshdeck.AuditRecord) Record {
	return Record{
		ID: r.ID, Time: r.Time.UTC(), Actor: r.Actor, Action: r.Action, Target: r.Target,
		RequestID: r.RequestID, SourceIP: r.SourceIP, Outcome: string(r.Outcome), Code: string(r.Code),
	}
}

// NewID is a record's id: "aud_", 12 hex digits of t's Unix milliseconds
// (so that ids sort as their times do, to the millisecond) and 20 random.
func NewID(t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	rand.Read(b[6:])
	return "aud_" + hex.EncodeToString(b[:])
}

// Recorder begins and finishes the notes of one service's requests.
type Recorder struct {
	Store sshdeck.AuditStore
	// Retention is how long a record is kept (config.AuditRetention; 0 is
	// the default, 400 days).
	Retention time.Duration
	Log       *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Begin returns ctx carrying a new note of actor's action, in the request
// of requestID from sourceIP.
func (rec *Recorder) Begin(ctx context.Context, actor, action, target, requestID, sourceIP string) (context.Context, *sshdeck.AuditNote) {
	now := time.Now
	if rec.Now != nil {
		now = rec.Now
	}
	t := now().UTC()
	retention := rec.Retention
	if retention <= 0 {
		retention = config.DefaultAuditDays * 24 * time.Hour
	}
	n := &sshdeck.AuditNote{Record: sshdeck.AuditRecord{
		ID: NewID(t), Time: t, Actor: actor, Action: action, Target: target,
		RequestID: requestID, SourceIP: sourceIP, Outcome: sshdeck.AuditSuccess,
		ExpiresAt: t.Add(retention),
	}}
	return sshdeck.WithAudit(ctx, n), n
}

// Finish ends the request's note: when no store write took it, it writes
// it alone, a failure when err is not nil, and marks it written, so that a
// request that finishes early (a forward, recorded once it is open) is
// recorded once. A record that cannot be written is logged (without a
// credential: records hold none) and does not change the request's
// answer: the change, if any, was made.
func (rec *Recorder) Finish(ctx context.Context, n *sshdeck.AuditNote, err error) {
	if n.Written() {
		return
	}
	if err != nil {
		n.Record.Outcome, n.Record.Code = sshdeck.AuditFailure, sshdeck.ErrorCode(err)
	}
	// The request's context may be done (a client that left); the record
	// is written all the same.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	werr := rec.Store.PutAuditRecord(wctx, &n.Record)
	if werr == nil {
		n.MarkWritten()
		return
	}
	if rec.Log != nil {
		rec.Log.Error("audit record not written", "request_id", n.Record.RequestID, "action", n.Record.Action,
			"target", n.Record.Target, "outcome", string(n.Record.Outcome), "error", werr.Error())
	}
}

// SourceIP is the caller's address of r: the peer's host locally, API
// Gateway's sourceIp in a Lambda function (the proxy adapter's
// RemoteAddr), and when behindProxy (the tunnel service behind its load
// balancer) the last address of X-Forwarded-For, the one the load
// balancer appended, which a client cannot forge.
func SourceIP(r *http.Request, behindProxy bool) string {
	if forwarded := r.Header.Values("X-Forwarded-For"); behindProxy && len(forwarded) > 0 {
		list := forwarded[len(forwarded)-1]
		if ip := strings.TrimSpace(list[strings.LastIndex(list, ",")+1:]); ip != "" {
			return ip
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}
