package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// The audit trail (API.md, "Audit and events"): GET /audit answers a page
// of records from a time on, in time order; GET /audit/export all of them
// as NDJSON, streamed a page at a time. Both need the tokens scope (the
// route table's): a caller reads their own records, an admin (a token with
// the admin scope as well) everyone's, or one actor's with ?actor=.

// defaultAuditWindow is how far back GET /audit reads without ?since=: the
// last day. An export reads everything kept.
const (
	defaultAuditWindow = 24 * time.Hour
	defaultAuditPage   = 100
	exportAuditPage    = maxPage
)

func (s *Server) auditRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{
		"list-audit":   s.listAudit,
		"export-audit": s.exportAudit,
	}
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	q, err := auditQuery(r.URL.Query(), caller, s.now().Add(-defaultAuditWindow))
	if err != nil {
		return err
	}
	if q.Limit, err = pageLimit(r.URL.Query()); err != nil {
		return err
	}
	if q.Limit == 0 {
		q.Limit = defaultAuditPage
	}
	records, err := s.audit().AuditRecords(r.Context(), q)
	if err != nil {
		return err
	}
	out := make([]audit.Record, len(records))
	for i, rec := range records {
		out[i] = audit.RecordOf(rec)
	}
	if len(records) == q.Limit {
		setNext(w, r, q.Limit, auditCursor(records[len(records)-1]))
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

// exportAudit streams every record of the query, a page at a time: its
// memory is a page's, whatever the trail's length. An error after the
// first line ends the stream short (web.Abort): the answer was 200.
func (s *Server) exportAudit(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	q, err := auditQuery(r.URL.Query(), caller, time.Time{})
	if err != nil {
		return err
	}
	q.Limit = exportAuditPage
	page, err := s.audit().AuditRecords(r.Context(), q)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for {
		for _, rec := range page {
			if err := enc.Encode(audit.RecordOf(rec)); err != nil {
				return nil // the client left
			}
		}
		if len(page) < q.Limit {
			return nil
		}
		q.After = page[len(page)-1]
		if page, err = s.audit().AuditRecords(r.Context(), q); err != nil {
			s.log.Error("audit export cut short", "request_id", web.RequestID(r.Context()), "error", err.Error())
			web.Abort()
		}
	}
}

func (s *Server) audit() sshdeck.AuditStore { return s.cfg.Audit.Store }

func (s *Server) now() time.Time {
	if s.cfg.Audit != nil && s.cfg.Audit.Now != nil {
		return s.cfg.Audit.Now()
	}
	return time.Now()
}

// auditQuery reads since, actor and cursor, and whose records the caller
// may read.
func auditQuery(v url.Values, caller sshdeck.Principal, since time.Time) (sshdeck.AuditQuery, error) {
	q := sshdeck.AuditQuery{Since: since}
	if raw := v.Get("since"); raw != "" {
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			return q, sshdeck.Errorf(sshdeck.Invalid, "since must be an RFC 3339 time, such as 2026-11-21T15:04:05Z")
		}
		q.Since = t
	}
	actor := v.Get("actor")
	switch {
	case caller.Admin():
		q.Actor = actor
	case actor != "" && actor != caller.UserID:
		return q, sshdeck.Errorf(sshdeck.Forbidden, "only an admin reads another user's audit records")
	default:
		q.Actor = caller.UserID
	}
	if raw, ok := v["cursor"]; ok {
		after, err := parseAuditCursor(raw)
		if err != nil {
			return q, err
		}
		q.After = after
	}
	return q, nil
}

// An audit cursor is the (time, id) of the page's last record, opaque:
// URL-safe base64 of its RFC 3339 time, a space, and its id.
func auditCursor(r *sshdeck.AuditRecord) string {
	return base64.RawURLEncoding.EncodeToString([]byte(r.Time.UTC().Format(time.RFC3339Nano) + " " + r.ID))
}

func parseAuditCursor(raw []string) (*sshdeck.AuditRecord, error) {
	bad := sshdeck.Errorf(sshdeck.Invalid, "cursor: not a cursor of this list (take it from the Link header of the page before)")
	if len(raw) != 1 {
		return nil, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(raw[0])
	if err != nil {
		return nil, bad
	}
	at, id, ok := strings.Cut(string(b), " ")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || !strings.HasPrefix(id, "aud_") {
		return nil, bad
	}
	return &sshdeck.AuditRecord{Time: t, ID: id}, nil
}
