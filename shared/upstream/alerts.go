package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

const (
	// DefaultAlertsTimeout bounds a fetch of the alerts list, body
	// included, when NewAlertsList is given none.
	DefaultAlertsTimeout = 5 * time.Second
	// MaxAlertsBody is the largest alerts list read: a list of notices to
	// show every user is small.
	MaxAlertsBody = 1 << 20
)

// AlertsList reads a list of alerts published at a URL, so that operators
// can reach every deployment's users without an admin publishing in each.
// It is safe for concurrent use.
type AlertsList struct {
	url     string
	display string
	timeout time.Duration
	client  *http.Client
}

// NewAlertsList returns a reader of the alerts list at rawURL, an absolute
// http(s) URL. timeout bounds each fetch, DefaultAlertsTimeout when zero or
// negative; client sends the requests, a new client on the default
// transport when nil.
func NewAlertsList(rawURL string, timeout time.Duration, client *http.Client) (*AlertsList, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("SSHDECK_ALERTS_URL must be an absolute http(s) URL, got %q", redactedURL(rawURL, u, err))
	}
	if timeout <= 0 {
		timeout = DefaultAlertsTimeout
	}
	if client == nil {
		// No Client.Timeout: the request's context carries the deadline.
		client = &http.Client{}
	}
	return &AlertsList{url: u.String(), display: displayURL(u), timeout: timeout, client: client}, nil
}

// displayURL is the URL as errors quote it: without a password, and with its
// query elided, since a signed URL (such as a presigned S3 one) carries its
// signature there.
func displayURL(u *url.URL) string {
	d := *u
	d.Fragment, d.RawFragment = "", ""
	q := d.RawQuery != "" || d.ForceQuery
	d.RawQuery, d.ForceQuery = "", false
	s := d.Redacted()
	if q {
		s += "?…"
	}
	return s
}

// remoteAlert is an item of the list as published. ExpiresAt is RFC 3339.
type remoteAlert struct {
	ID         string    `json:"id"`
	Title      string    `json:"title"`
	Message    string    `json:"message"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Priority   string    `json:"priority"`
	Type       string    `json:"type"`
	ActionURL  string    `json:"actionUrl"`
	ActionText string    `json:"actionText"`
}

// Fetch reads the list. An answer that is not a success, not a JSON array,
// or over MaxAlertsBody is an error; items of the array that are not valid
// alerts (see item) are left out and counted in dropped, so that one bad
// entry does not hide the others. Every error starts with
// "remote alerts <url>:".
func (l *AlertsList) Fetch(ctx context.Context) (alerts []sshdeck.Alert, dropped int, err error) {
	reqCtx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, l.url, nil)
	if err != nil {
		return nil, 0, l.errorf("%w", err)
	}
	req.Header.Set("User-Agent", "sshdeck")
	req.Header.Set("Accept", "application/json")

	resp, err := l.client.Do(req)
	if err != nil {
		return nil, 0, l.failed(ctx, reqCtx, err)
	}
	defer closeBody(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, 0, l.errorf("status %s", resp.Status)
	}
	body, err := readAtMost(resp, MaxAlertsBody)
	if err != nil {
		return nil, 0, l.failed(ctx, reqCtx, err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil || items == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, 0, l.errorf("answer is not a JSON array: %w", err)
	}
	alerts = make([]sshdeck.Alert, 0, len(items))
	seen := make(map[string]bool, len(items))
	for _, raw := range items {
		a, ok := item(raw)
		if !ok || seen[a.ID] {
			dropped++
			continue
		}
		seen[a.ID] = true
		alerts = append(alerts, a)
	}
	return alerts, dropped, nil
}

// item decodes one item of the list and reports whether it is a valid
// alert: an id of 1 to sshdeck.MaxAlertID bytes, a title, an expiry, a known
// priority (medium when absent) and type (info when absent), and an action
// URL, when there is one, that is absolute http(s) so that a link in the UI
// cannot run script.
func item(raw json.RawMessage) (sshdeck.Alert, bool) {
	var r remoteAlert
	if err := json.Unmarshal(raw, &r); err != nil {
		return sshdeck.Alert{}, false
	}
	a := sshdeck.Alert{
		ID:         r.ID,
		Title:      r.Title,
		Message:    r.Message,
		ExpiresAt:  r.ExpiresAt,
		Priority:   sshdeck.Priority(r.Priority),
		Type:       sshdeck.AlertType(r.Type),
		ActionURL:  r.ActionURL,
		ActionText: r.ActionText,
	}
	if a.Priority == "" {
		a.Priority = sshdeck.PriorityMedium
	}
	if a.Type == "" {
		a.Type = sshdeck.AlertInfo
	}
	switch {
	case a.ID == "" || len(a.ID) > sshdeck.MaxAlertID,
		strings.TrimSpace(a.Title) == "",
		a.ExpiresAt.IsZero(),
		a.Priority.Rank() == 0,
		!a.Type.Valid(),
		a.ActionURL != "" && !sshdeck.WebURL(a.ActionURL):
		return sshdeck.Alert{}, false
	}
	return a, true
}

// failed wraps an error of sending or reading, saying so when it is this
// list's timeout rather than the caller giving up. The *url.Error of the
// HTTP client is unwrapped: it quotes the whole URL, query included.
func (l *AlertsList) failed(ctx, reqCtx context.Context, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if ctx.Err() == nil && reqCtx.Err() != nil {
		return l.errorf("no answer within %s: %w", l.timeout, err)
	}
	return l.errorf("%w", err)
}

// errorf returns an error that starts with "remote alerts <url>:".
func (l *AlertsList) errorf(format string, args ...any) error {
	return fmt.Errorf("remote alerts %s: "+format, append([]any{l.display}, args...)...)
}
