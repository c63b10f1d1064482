package upstream

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeFetcher answers with what it is set to, counting calls. With a gate,
// each Fetch waits until the gate is closed.
type fakeFetcher struct {
	mu      sync.Mutex
	calls   int
	alerts  []sshdeck.Alert
	dropped int
	err     error
	gate    chan struct{}
	ctxErr  error // the fetch context's error once the gate opened
}

func (f *fakeFetcher) Fetch(ctx context.Context) ([]sshdeck.Alert, int, error) {
	f.mu.Lock()
	f.calls++
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctxErr = ctx.Err()
	return append([]sshdeck.Alert(nil), f.alerts...), f.dropped, f.err
}

// gated gives f a gate and returns the function that opens it, also run at
// the end of the test so that a failing test leaves no fetch hanging.
func (f *fakeFetcher) gated(t *testing.T) (open func()) {
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate = gate
	f.mu.Unlock()
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	return open
}

// within returns what Alerts(ctx) answers, failing the test when it takes
// long: a caller must never wait on a hanging fetch past its own ctx.
func within(t *testing.T, r *RemoteAlerts, ctx context.Context) []sshdeck.Alert {
	t.Helper()
	got := make(chan []sshdeck.Alert, 1)
	go func() { got <- r.Alerts(ctx) }()
	select {
	case as := <-got:
		return as
	case <-time.After(time.Minute): // it returns at once; a minute fails only a caller that waits for the fetch, however busy the machine
		t.Fatal("a caller whose ctx is done is still waiting on the fetch")
		return nil
	}
}

func (f *fakeFetcher) set(alerts []sshdeck.Alert, dropped int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.alerts, f.dropped, f.err = alerts, dropped, err
}

func (f *fakeFetcher) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// syncBuffer is a log destination safe for the fetch goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func alertList(ids ...string) []sshdeck.Alert {
	var as []sshdeck.Alert
	for _, id := range ids {
		as = append(as, sshdeck.Alert{ID: id, Title: "Title " + id, ExpiresAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
			Priority: sshdeck.PriorityMedium, Type: sshdeck.AlertInfo})
	}
	return as
}

func ids(as []sshdeck.Alert) []string {
	if as == nil {
		return nil
	}
	out := []string{}
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

func newTestRemote(f *fakeFetcher) (*RemoteAlerts, *clock, *syncBuffer) {
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	logs := &syncBuffer{}
	return NewRemoteAlerts(f, slog.New(slog.NewTextHandler(logs, nil)), c.Now), c, logs
}

// expect checks the ids of what Alerts answers and how many fetches there
// were in all.
func expect(t *testing.T, r *RemoteAlerts, f *fakeFetcher, wantIDs []string, wantCalls int) {
	t.Helper()
	if got := ids(r.Alerts(context.Background())); !reflect.DeepEqual(got, wantIDs) {
		t.Errorf("Alerts() = %q, want %q", got, wantIDs)
	}
	if n := f.count(); n != wantCalls {
		t.Errorf("%d fetches, want %d", n, wantCalls)
	}
}

func TestRemoteAlertsCachedForTTL(t *testing.T) {
	f := &fakeFetcher{alerts: alertList("a", "b")}
	r, c, _ := newTestRemote(f)
	for range 10 {
		expect(t, r, f, []string{"a", "b"}, 1)
	}
	f.set(alertList("c"), 0, nil)
	c.Advance(RemoteAlertsTTL - time.Nanosecond)
	expect(t, r, f, []string{"a", "b"}, 1)
	c.Advance(time.Nanosecond)
	expect(t, r, f, []string{"c"}, 2)
	expect(t, r, f, []string{"c"}, 2)
}

func TestRemoteAlertsEmptyListIsCached(t *testing.T) {
	f := &fakeFetcher{}
	r, _, _ := newTestRemote(f)
	expect(t, r, f, []string{}, 1)
	expect(t, r, f, []string{}, 1)
}

func TestRemoteAlertsStaleOnFailure(t *testing.T) {
	f := &fakeFetcher{alerts: alertList("a")}
	r, c, logs := newTestRemote(f)
	expect(t, r, f, []string{"a"}, 1)

	f.set(nil, 0, errors.New("remote alerts https://alerts.example/list.json: status 503 Service Unavailable"))
	c.Advance(RemoteAlertsTTL)
	expect(t, r, f, []string{"a"}, 2)
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "status 503 Service Unavailable") ||
		!strings.Contains(l, "serving_stale=true") {
		t.Errorf("log %q, want a warning with the error", l)
	}

	// No fetch again before RemoteAlertsRetry: the stale list meanwhile.
	c.Advance(RemoteAlertsRetry - time.Nanosecond)
	expect(t, r, f, []string{"a"}, 2)
	c.Advance(time.Nanosecond)
	expect(t, r, f, []string{"a"}, 3)

	f.set(alertList("b"), 0, nil)
	c.Advance(RemoteAlertsRetry - time.Nanosecond)
	expect(t, r, f, []string{"a"}, 3)
	c.Advance(time.Nanosecond)
	expect(t, r, f, []string{"b"}, 4)
	expect(t, r, f, []string{"b"}, 4)
}

func TestRemoteAlertsNeverSucceeded(t *testing.T) {
	f := &fakeFetcher{err: errors.New("remote alerts https://alerts.example/list.json: no answer within 5s")}
	r, c, logs := newTestRemote(f)
	expect(t, r, f, nil, 1)
	expect(t, r, f, nil, 1)
	c.Advance(RemoteAlertsRetry - time.Nanosecond)
	expect(t, r, f, nil, 1)
	c.Advance(time.Nanosecond)
	expect(t, r, f, nil, 2)
	if n := strings.Count(logs.String(), "remote alerts unavailable"); n != 2 {
		t.Errorf("%d warnings, want one per failed fetch:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "serving_stale=false") {
		t.Errorf("log %q does not say there is nothing to serve", logs)
	}

	f.set(alertList("a"), 0, nil)
	c.Advance(RemoteAlertsRetry)
	expect(t, r, f, []string{"a"}, 3)
}

func TestRemoteAlertsDroppedLogged(t *testing.T) {
	f := &fakeFetcher{alerts: alertList("a"), dropped: 3}
	r, c, logs := newTestRemote(f)
	for range 5 {
		expect(t, r, f, []string{"a"}, 1)
	}
	if n := strings.Count(logs.String(), "dropped=3"); n != 1 || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("log %q, want one warning with the count", logs)
	}
	c.Advance(RemoteAlertsTTL)
	expect(t, r, f, []string{"a"}, 2)
	if n := strings.Count(logs.String(), "dropped=3"); n != 2 {
		t.Errorf("%d warnings after a second fetch, want 2", n)
	}
}

func TestRemoteAlertsReturnsACopy(t *testing.T) {
	f := &fakeFetcher{alerts: alertList("a", "b")}
	r, _, _ := newTestRemote(f)
	got := r.Alerts(context.Background())
	got[0], got[1] = got[1], got[0]
	got[0].Title = "changed"
	expect(t, r, f, []string{"a", "b"}, 1)
	if again := r.Alerts(context.Background()); again[0].Title != "Title a" || again[1].Title != "Title b" {
		t.Errorf("a caller's change reached the cache: %+v", again)
	}
}

func TestRemoteAlertsConcurrentCallersShareOneFetch(t *testing.T) {
	const callers = 50
	f := &fakeFetcher{alerts: alertList("a")}
	open := f.gated(t)
	r, _, _ := newTestRemote(f)
	waiting := make(chan struct{}, callers)
	r.waiting = func() { waiting <- struct{}{} }

	results := make(chan []sshdeck.Alert, callers)
	for range callers {
		go func() { results <- r.Alerts(context.Background()) }()
	}
	for range callers {
		<-waiting // every caller is waiting on the fetch
	}
	open()
	for range callers {
		if got := ids(<-results); !reflect.DeepEqual(got, []string{"a"}) {
			t.Errorf("a caller got %q", got)
		}
	}
	if n := f.count(); n != 1 {
		t.Errorf("%d fetches for %d callers, want 1", n, callers)
	}
}

func TestRemoteAlertsCancelledCallerDoesNotSpoilTheFetch(t *testing.T) {
	f := &fakeFetcher{alerts: alertList("a")}
	open := f.gated(t)
	r, _, _ := newTestRemote(f)
	waiting := make(chan struct{}, 2)
	r.waiting = func() { waiting <- struct{}{} }

	// The first caller starts the fetch and gives up while it hangs.
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan []sshdeck.Alert, 1)
	go func() { first <- r.Alerts(ctx) }()
	<-waiting
	cancel()
	select {
	case got := <-first:
		if got != nil {
			t.Errorf("cancelled caller got %q, want nil: there never was a list", ids(got))
		}
	case <-time.After(time.Minute): // as in within
		t.Fatal("a cancelled caller is still waiting on the fetch")
	}

	// The fetch goes on: the next caller joins it and gets the list.
	second := make(chan []sshdeck.Alert, 1)
	go func() { second <- r.Alerts(context.Background()) }()
	<-waiting
	open()
	if got := ids(<-second); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("next caller got %q, want [a]", got)
	}
	f.mu.Lock()
	ctxErr := f.ctxErr
	f.mu.Unlock()
	if ctxErr != nil {
		t.Errorf("the fetch ran with a done context: %v", ctxErr)
	}
	expect(t, r, f, []string{"a"}, 1)
}

func TestRemoteAlertsCallerAlreadyCancelled(t *testing.T) {
	f := &fakeFetcher{alerts: alertList("a")}
	open := f.gated(t)
	r, _, _ := newTestRemote(f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := within(t, r, ctx); got != nil { // returns although the fetch hangs
		t.Errorf("Alerts() = %q, want nil", ids(got))
	}
	open()
	// The fetch it started fills the cache (this caller joins it or finds
	// its list): one fetch in all.
	expect(t, r, f, []string{"a"}, 1)
}

func TestRemoteAlertsStaleWhileRefetchHangs(t *testing.T) {
	f := &fakeFetcher{alerts: alertList("a")}
	r, c, _ := newTestRemote(f)
	expect(t, r, f, []string{"a"}, 1)

	// The list is due; its refetch hangs; a caller that gives up gets the
	// stale list, and the refetch's list once it comes.
	f.set(alertList("b"), 0, nil)
	open := f.gated(t)
	c.Advance(RemoteAlertsTTL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if got := ids(within(t, r, ctx)); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("Alerts() = %q during the refetch, want the stale [a]", got)
	}
	open()
	expect(t, r, f, []string{"b"}, 2)
}
