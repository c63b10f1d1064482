package upstream

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

const (
	// RemoteAlertsTTL is how long a fetched list is served before it is
	// fetched again: alerts are not urgent to the minute.
	RemoteAlertsTTL = 5 * time.Minute
	// RemoteAlertsRetry is how long after a failed fetch the next one is
	// tried, so that a dead remote does not slow every request by its
	// timeout.
	RemoteAlertsRetry = 30 * time.Second
)

// AlertsFetcher fetches a list of alerts: AlertsList, or a fake in tests.
// Fetch must bound itself in time (AlertsList does), because RemoteAlerts
// runs it without the caller's cancellation.
type AlertsFetcher interface {
	// Fetch returns the valid alerts and how many invalid items it left
	// out, or an error when there is no list.
	Fetch(ctx context.Context) ([]sshdeck.Alert, int, error)
}

// RemoteAlerts keeps the remote alerts list for the requests that show it.
// It fetches at most once per RemoteAlertsTTL, and when the remote fails it
// serves the last good list, so that alerts never make a request fail or
// wait on a dead remote for long. It is safe for concurrent use.
type RemoteAlerts struct {
	fetcher AlertsFetcher
	log     *slog.Logger
	now     func() time.Time

	mu       sync.Mutex
	alerts   []sshdeck.Alert // last good list; nil before the first
	have     bool            // whether there was a good list
	at       time.Time       // when alerts was fetched
	failedAt time.Time       // when the last fetch failed; zero after a success
	inflight chan struct{}   // closed when the fetch under way ends; nil when none

	// waiting, when set (by tests), is called by each caller about to wait
	// on a fetch under way.
	waiting func()
}

// NewRemoteAlerts returns a keeper of f's list. log receives the failures,
// discarded when nil; now is the clock, time.Now when nil.
func NewRemoteAlerts(f AlertsFetcher, log *slog.Logger, now func() time.Time) *RemoteAlerts {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if now == nil {
		now = time.Now
	}
	return &RemoteAlerts{fetcher: f, log: log, now: now}
}

// Alerts returns the remote alerts, a copy the caller may change. It never
// fails: it returns the list fetched less than RemoteAlertsTTL ago, or
// fetches it; when the fetch fails (or failed less than RemoteAlertsRetry
// ago) it returns the last good list, nil when there never was one.
//
// Callers arriving during a fetch share it. The fetch does not stop when
// the caller that started it gives up, so a cancelled request does not
// spoil the list for the others; a caller whose ctx is done returns at once
// with what there was.
func (r *RemoteAlerts) Alerts(ctx context.Context) []sshdeck.Alert {
	r.mu.Lock()
	now := r.now()
	if (r.have && now.Sub(r.at) < RemoteAlertsTTL) || (!r.failedAt.IsZero() && now.Sub(r.failedAt) < RemoteAlertsRetry) {
		defer r.mu.Unlock()
		return slices.Clone(r.alerts)
	}
	done := r.inflight
	if done == nil {
		done = make(chan struct{})
		r.inflight = done
		go r.fetch(context.WithoutCancel(ctx), done)
	}
	waiting := r.waiting
	r.mu.Unlock()

	if waiting != nil {
		waiting()
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.alerts)
}

// fetch fetches the list, keeps it when it came, logs what went wrong, and
// closes done (after logging, so a caller that returns sees the log).
func (r *RemoteAlerts) fetch(ctx context.Context, done chan struct{}) {
	defer close(done)
	alerts, dropped, err := r.fetcher.Fetch(ctx)
	now := r.now()

	r.mu.Lock()
	stale := r.have
	if err == nil {
		// Never nil once fetched: an empty list is a list.
		r.alerts, r.have, r.at, r.failedAt = append([]sshdeck.Alert{}, alerts...), true, now, time.Time{}
	} else {
		r.failedAt = now
	}
	r.inflight = nil
	r.mu.Unlock()

	if err != nil {
		r.log.LogAttrs(ctx, slog.LevelWarn, "remote alerts unavailable",
			slog.String("error", err.Error()), slog.Bool("serving_stale", stale),
			slog.Duration("retry_in", RemoteAlertsRetry))
		return
	}
	if dropped > 0 {
		r.log.LogAttrs(ctx, slog.LevelWarn, "remote alerts: invalid items left out", slog.Int("dropped", dropped))
	}
}
