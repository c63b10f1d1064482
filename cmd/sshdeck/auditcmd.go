package main

// sshdeck audit: the audit trail through the client, a table or NDJSON.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/sshdeck/sshdeck/client"
)

func auditCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, f := newClientFlags("audit", stderr)
	defer func() { err = f.explain(err) }()
	since := fs.String("since", "24h", "the first records: a duration back from now (24h, 30m) or an RFC 3339 time")
	actor := fs.String("actor", "", "one actor's records (an admin's filter; a user id or cli:<os user>)")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	from, err := parseSince(*since, time.Now())
	if err != nil {
		return fmt.Errorf("%w: --since %v", errUsage, err)
	}
	c, err := clientFor(f.profileFlags)
	if err != nil {
		return err
	}
	records := c.Audit(ctx, client.AuditQuery{Since: from, Actor: *actor}, client.MaxPage)
	if f.json {
		// One record a line, as GET /audit/export writes them.
		enc := json.NewEncoder(stdout)
		for r, err := range records {
			if err != nil {
				return err
			}
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tACTOR\tACTION\tTARGET\tOUTCOME\tSOURCE")
	for r, err := range records {
		if err != nil {
			return err
		}
		outcome := r.Outcome
		if r.Code != "" {
			outcome += " (" + r.Code + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format(time.DateTime), orDash(r.Actor), r.Action, orDash(r.Target), outcome, orDash(r.SourceIP))
	}
	return tw.Flush()
}

// parseSince reads --since: a duration back from now, or a time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (24h) nor an RFC 3339 time", s)
	}
	return t, nil
}
