// Package webhook delivers sshdeck's audit events to a local receiver
// (API.md, "Audit and events": SSHDECK_WEBHOOK_URL): each audit record, in
// commit order, one at a time, POSTed as the JSON of its event
// (audit.Event, EventBridge's envelope, the record's id as the event's),
// signed with HMAC-SHA256 under SSHDECK_WEBHOOK_SECRET (signature.go), and
// retried with backoff until the receiver answers 2xx. It is `sshdeck
// serve`'s; in AWS the same events go to EventBridge instead.
//
// The queue is the store: the embedded store's audit bucket, which holds
// the records in commit order, each written in the transaction of its
// change, so a request never waits for a delivery and no event is lost to
// a crash; and the cursor, the sequence of the last record delivered,
// kept in the store too and written only after the receiver's 2xx. A
// restart resumes after the cursor. So delivery is at least once: a crash
// between a 2xx and the cursor's write sends that event again, with the
// same id, by which receivers dedupe.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// Store is the queue of deliveries: the embedded store's audit records
// and cursor.
type Store interface {
	AuditStream(ctx context.Context, after uint64, limit int) ([]embedded.AuditEntry, error)
	AuditCursor(ctx context.Context) (seq uint64, ok bool, err error)
	SetAuditCursor(ctx context.Context, seq uint64) error
	AuditEnd(ctx context.Context) (uint64, error)
}

var _ Store = (*embedded.Store)(nil)

// Options configure a Deliverer.
type Options struct {
	// URL receives the events (an http or https URL: config checks
	// SSHDECK_WEBHOOK_URL); Secret signs them. Both are required.
	URL, Secret string
	// Log gets a line when deliveries start and one per failed attempt,
	// never the secret or a body; nil discards.
	Log *slog.Logger
	// Wake signals new records (embedded.Store.AuditWritten), delivered
	// then at once; without it they wait for the next poll.
	Wake <-chan struct{}
	// Client sends the deliveries; nil is NewClient().
	Client *http.Client
	Timing Timing
	// Now is the clock of the timestamps (time.Now when nil).
	Now func() time.Time
}

// deliveryTimeout is how long a receiver has to answer an attempt.
const deliveryTimeout = 10 * time.Second

// batchSize is how many records a read of the queue takes.
const batchSize = 100

// NewClient is the client of deliveries: an answer within 10 s, and
// redirects not followed (Go's client would follow a 301, 302 or 303
// with a GET without the body): a 3xx is a failure, retried, with its
// status in the log, as GitHub's and Stripe's webhooks do.
func NewClient() *http.Client {
	return &http.Client{
		Timeout:       deliveryTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Deliverer sends the audit records of a store to a webhook.
type Deliverer struct {
	store  Store
	url    string
	secret string
	log    *slog.Logger
	wake   <-chan struct{}
	client *http.Client
	timing Timing
	now    func() time.Time
	// cursor is the sequence of the last record delivered: Run's alone.
	cursor uint64
}

// New returns a Deliverer of store's records to opts.URL, from the
// store's cursor on. A store that never had a cursor gets one at its end
// (AuditEnd): webhooks configured for the first time send the records
// committed from now on, not every record the store has kept. Call it
// before the store takes writes, so that a first configuration is exact.
func New(ctx context.Context, store Store, opts Options) (*Deliverer, error) {
	target, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	if opts.Secret == "" {
		return nil, errors.New("webhook: no secret to sign the events with")
	}
	d := &Deliverer{
		store: store, url: opts.URL, secret: opts.Secret, log: opts.Log, wake: opts.Wake,
		client: opts.Client, timing: opts.Timing.withDefaults(), now: opts.Now,
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.client == nil {
		d.client = NewClient()
	}
	if d.now == nil {
		d.now = time.Now
	}
	cursor, ok, err := store.AuditCursor(ctx)
	if err != nil {
		return nil, fmt.Errorf("webhook: read the delivery cursor: %w", err)
	}
	if !ok {
		if cursor, err = store.AuditEnd(ctx); err != nil {
			return nil, fmt.Errorf("webhook: read the end of the audit trail: %w", err)
		}
		if err := store.SetAuditCursor(ctx, cursor); err != nil {
			return nil, fmt.Errorf("webhook: write the first delivery cursor: %w", err)
		}
	}
	d.cursor = cursor
	d.log.Info("delivering audit events to the webhook", "url", target.Redacted(), "after_sequence", cursor, "first_configured", !ok)
	return d, nil
}

// Run delivers records until ctx ends, in commit order, each until the
// receiver answers 2xx, and waits for new ones when all are delivered.
// It returns once ctx ends: at once from a wait, within the shutdown
// grace from an attempt in flight. Run a Deliverer once, and one per
// store: the cursor is its own.
func (d *Deliverer) Run(ctx context.Context) {
	for {
		entries, err := d.store.AuditStream(ctx, d.cursor, batchSize)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			d.log.Error("webhook: cannot read the audit records to deliver", "error", err.Error(), "retry_in", d.timing.Poll.String())
		}
		if len(entries) == 0 {
			if !d.waitForRecords(ctx) {
				return
			}
			continue
		}
		for _, e := range entries {
			if !d.deliver(ctx, e) {
				return
			}
		}
	}
}

// waitForRecords waits for a signal of new records, or the next poll; it
// reports false when ctx ended.
func (d *Deliverer) waitForRecords(ctx context.Context) bool {
	poll := time.NewTimer(d.timing.Poll)
	defer poll.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-d.wake:
	case <-poll.C:
	}
	return true
}

// deliver sends e until the receiver answers 2xx, then moves the cursor
// past it; it reports false when ctx ended first.
func (d *Deliverer) deliver(ctx context.Context, e embedded.AuditEntry) bool {
	id := e.Record.ID
	body, err := json.Marshal(audit.EventOf(audit.RecordOf(e.Record)))
	if err != nil {
		// Strings and a time: only a time past the year 9999 fails, which
		// no retry mends; the event is skipped rather than block the rest.
		d.log.Error("webhook: an audit event cannot be encoded: skipped", "event_id", id, "error", err.Error())
		d.advance(ctx, e.Seq, id)
		return true
	}
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return false
		}
		status, err := d.post(ctx, id, body)
		if err == nil && status >= 200 && status < 300 {
			if attempt > 1 {
				d.log.Info("webhook delivered after failures", "event_id", id, "attempts", attempt)
			}
			d.advance(ctx, e.Seq, id)
			return true
		}
		wait := d.timing.retryWait(attempt)
		failure := []any{"event_id", id, "attempt", attempt, "retry_in", wait.Round(time.Millisecond).String()}
		if err != nil {
			failure = append(failure, "error", reason(err))
		} else {
			failure = append(failure, "status", status)
		}
		d.log.Warn("webhook delivery failed", failure...)
		if !sleep(ctx, wait) {
			return false
		}
	}
}

// post makes one attempt at delivering body, the event id's, and returns
// the receiver's status.
func (d *Deliverer) post(ctx context.Context, id string, body []byte) (int, error) {
	ctx, cancel := withGrace(ctx, d.timing.ShutdownGrace)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	// Each attempt is signed afresh: a retry hours later is as recent as
	// a receiver's tolerance asks.
	timestamp := d.now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sshdeck-webhook")
	req.Header.Set(HeaderEventID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(timestamp, 10))
	req.Header.Set(HeaderSignature, sign(d.secret, timestamp, body))
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Read a little of the answer, which nobody reads, so that the
	// connection is kept for the next delivery.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// advance records that the record of seq, event id, was delivered. The
// write outlives ctx: the receiver has the event, and a cursor left
// behind would send it again at the next start.
func (d *Deliverer) advance(ctx context.Context, seq uint64, id string) {
	d.cursor = seq
	if err := d.store.SetAuditCursor(context.WithoutCancel(ctx), seq); err != nil {
		d.log.Error("webhook: the delivery cursor was not saved: the event will be sent again at the next start",
			"event_id", id, "error", err.Error())
	}
}

// reason is err without the URL that the client's errors repeat (the
// start line names it): the refused connection, the timeout.
func reason(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return err.Error()
}
