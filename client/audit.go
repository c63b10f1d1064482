package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/url"
	"time"

	"github.com/sshdeck/sshdeck/shared/audit"
)

// AuditQuery selects audit records: from Since (zero: the service's
// default, the last day for Audit, everything kept for ExportAudit), of
// one Actor (an admin's filter; "" for the caller's own, or an admin's
// everyone's).
type AuditQuery struct {
	Since time.Time
	Actor string
}

func (q AuditQuery) values() url.Values {
	v := url.Values{}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if q.Actor != "" {
		v.Set("actor", q.Actor)
	}
	return v
}

// Audit yields the audit records of q, oldest first, a page at a time
// (GET /audit).
func (c *Client) Audit(ctx context.Context, q AuditQuery, pageSize int) iter.Seq2[audit.Record, error] {
	return pages[audit.Record](c, ctx, c.BaseURL, "/audit", q.values(), pageSize)
}

// ExportAudit yields the records of q from GET /audit/export, one NDJSON
// line at a time, as the service streams them.
func (c *Client) ExportAudit(ctx context.Context, q AuditQuery) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		resp, err := c.send(ctx, call{base: c.BaseURL, method: "GET", path: "/audit/export", query: q.values()})
		if err != nil {
			yield(audit.Record{}, err)
			return
		}
		defer resp.Body.Close()
		lines := bufio.NewScanner(resp.Body)
		lines.Buffer(make([]byte, 64<<10), 1<<20)
		for lines.Scan() {
			var r audit.Record
			if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
				yield(audit.Record{}, fmt.Errorf("audit export: a line that is no record: %w", err))
				return
			}
			if !yield(r, nil) {
				return
			}
		}
		if err := lines.Err(); err != nil {
			yield(audit.Record{}, fmt.Errorf("audit export cut short: %w", err))
		}
	}
}
