package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/logbuf"
	"github.com/sshdeck/sshdeck/internal/webhooktest"
	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/shared/webhook"
)

const secret = "whsec-deliverer-test"

// fast is the timing of these tests: retries and polls in milliseconds.
// Tests that must not depend on a poll set Poll to an hour instead.
var fast = webhook.Timing{FirstRetry: 5 * time.Millisecond, MaxRetry: 20 * time.Millisecond, Poll: 10 * time.Millisecond, ShutdownGrace: time.Minute}

// runBound is how long a Run may take to return once its context ended
// before a test fails: far beyond a prompt return, far below the waits
// (an hour) it must not sit out.
const runBound = time.Minute

func openStore(t *testing.T, path string) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newStore(t *testing.T) (*embedded.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sshdeck.db")
	s := openStore(t, path)
	t.Cleanup(func() { s.Close() })
	return s, path
}

// write writes n records, as requests would, and returns them.
func write(t *testing.T, s *embedded.Store, n int) []*sshdeck.AuditRecord {
	t.Helper()
	var out []*sshdeck.AuditRecord
	for range n {
		r := webhooktest.NewRecord(fmt.Sprintf("host %d", len(out)+1))
		if err := s.PutAuditRecord(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func ids(rs []*sshdeck.AuditRecord) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// running is a Deliverer's Run in its goroutine.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// start makes a Deliverer of s to url and runs it until stop or the
// test's end.
func start(t *testing.T, s *embedded.Store, url string, opts webhook.Options) *running {
	t.Helper()
	opts.URL, opts.Secret = url, secret
	d, err := webhook.New(t.Context(), s, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{})}
	go func() { d.Run(ctx); close(r.done) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends Run's context and waits for it to return.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(runBound):
		t.Fatalf("Run did not return within %s of its context's end", runBound)
	}
}

func wantCursor(t *testing.T, s *embedded.Store, want uint64) {
	t.Helper()
	if got, ok, err := s.AuditCursor(t.Context()); err != nil || !ok || got != want {
		t.Fatalf("cursor = %d (set %v, %v), want %d", got, ok, err, want)
	}
}

// TestDeliversSignedEventsInCommitOrder: each record is POSTed once, as
// the event of its record, signed (the receiver verifies every
// delivery), in commit order; the store's signal wakes the deliverer
// (its poll is an hour here); the cursor follows the deliveries.
func TestDeliversSignedEventsInCommitOrder(t *testing.T) {
	s, _ := newStore(t)
	recv := webhooktest.Start(t, secret, 0)
	var logs logbuf.Buffer
	slow := fast
	slow.Poll = time.Hour
	run := start(t, s, recv.URL, webhook.Options{Wake: s.AuditWritten(), Timing: slow, Log: slog.New(slog.NewJSONHandler(&logs, nil))})

	records := write(t, s, 5)
	recv.WaitAccepted(t, records[4].ID)
	run.stop(t)
	if got, want := recv.AcceptedIDs(), ids(records); !slices.Equal(got, want) {
		t.Fatalf("accepted %v, want %v", got, want)
	}
	for i, e := range recv.Accepted() {
		got, _ := json.Marshal(e)
		want, _ := json.Marshal(audit.EventOf(audit.RecordOf(records[i])))
		if string(got) != string(want) {
			t.Errorf("event %d:\n got %s\nwant %s", i, got, want)
		}
	}
	wantCursor(t, s, 5)
	if l := logs.String(); !strings.Contains(l, `"msg":"delivering audit events to the webhook","url":"`+recv.URL+`"`) || strings.Contains(l, secret) {
		t.Fatalf("the start line names the URL, never the secret:\n%s", l)
	}
}

// TestPollFindsRecordsWithoutASignal: without the store's signal, the
// poll delivers.
func TestPollFindsRecordsWithoutASignal(t *testing.T) {
	s, _ := newStore(t)
	recv := webhooktest.Start(t, secret, 0)
	start(t, s, recv.URL, webhook.Options{Timing: fast})
	records := write(t, s, 2)
	recv.WaitAccepted(t, records[1].ID)
	if got := recv.AcceptedIDs(); !slices.Equal(got, ids(records)) {
		t.Fatalf("accepted %v", got)
	}
}

// TestRetriesUntilAccepted: a receiver that answers 500 to its first 3
// deliveries gets every event, in order, each accepted once; each failure
// is one log line with the status, the event and the wait, never the
// secret or the body.
func TestRetriesUntilAccepted(t *testing.T) {
	s, _ := newStore(t)
	recv := webhooktest.Start(t, secret, 3)
	var logs logbuf.Buffer
	run := start(t, s, recv.URL, webhook.Options{Wake: s.AuditWritten(), Timing: fast, Log: slog.New(slog.NewJSONHandler(&logs, nil))})

	records := write(t, s, 4)
	recv.WaitAccepted(t, records[3].ID)
	run.stop(t)
	if got, want := recv.AcceptedIDs(), ids(records); !slices.Equal(got, want) {
		t.Fatalf("accepted %v, want each of %v once, in order", got, want)
	}
	if got := recv.Attempts(); got != 7 {
		t.Fatalf("%d deliveries, want 3 refused and 4 accepted", got)
	}
	wantCursor(t, s, 4)

	var failures int
	for line := range strings.Lines(logs.String()) {
		var entry struct {
			Msg, EventID, RetryIn string
			Status, Attempt       int
		}
		json.Unmarshal([]byte(line), &entry)
		if strings.Contains(line, secret) || strings.Contains(line, records[0].RequestID) {
			t.Errorf("a log line holds the secret or a body: %s", line)
		}
		if entry.Msg != "webhook delivery failed" {
			continue
		}
		failures++
		if !strings.Contains(line, `"event_id":"`+records[0].ID+`"`) || !strings.Contains(line, `"status":500`) ||
			!strings.Contains(line, fmt.Sprintf(`"attempt":%d`, failures)) || !strings.Contains(line, `"retry_in":"`) {
			t.Errorf("failure line %d lacks the event, status, attempt or wait: %s", failures, line)
		}
	}
	if failures != 3 || !strings.Contains(logs.String(), `"msg":"webhook delivered after failures","event_id":"`+records[0].ID+`","attempts":4`) {
		t.Fatalf("want 3 failure lines and a recovery line:\n%s", logs.String())
	}
}

// TestReceiverDownAcrossARestart: events written while the receiver is
// down, and while no deliverer runs (the store closed: the process
// gone), all arrive once it is back, after the ones it had, each once, in
// commit order: the restarted deliverer resumes from the stored cursor.
func TestReceiverDownAcrossARestart(t *testing.T) {
	s, path := newStore(t)
	recv := webhooktest.Start(t, secret, 0)
	run := start(t, s, recv.URL, webhook.Options{Wake: s.AuditWritten(), Timing: fast})
	records := write(t, s, 2)
	recv.WaitAccepted(t, records[1].ID)

	recv.Down()
	records = append(records, write(t, s, 3)...)
	run.stop(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, path)
	defer s.Close()
	records = append(records, write(t, s, 2)...)
	run = start(t, s, recv.URL, webhook.Options{Wake: s.AuditWritten(), Timing: fast})
	recv.Up()
	records = append(records, write(t, s, 1)...)
	recv.WaitAccepted(t, records[7].ID)
	run.stop(t)
	if got, want := recv.AcceptedIDs(), ids(records); !slices.Equal(got, want) {
		t.Fatalf("accepted %v, want each of %v once, in order", got, want)
	}
	wantCursor(t, s, 8)
}

// TestFirstConfigurationStartsAtTheEnd: a store that never delivered
// sends the records written from the deliverer's start on, not the ones
// it kept before; the cursor it starts from is stored at once, so a
// restart before any delivery loses none.
func TestFirstConfigurationStartsAtTheEnd(t *testing.T) {
	s, _ := newStore(t)
	write(t, s, 3)
	recv := webhooktest.Start(t, secret, 0)
	recv.Down()
	run := start(t, s, recv.URL, webhook.Options{Timing: fast})
	wantCursor(t, s, 3)
	later := write(t, s, 1)
	run.stop(t)

	start(t, s, recv.URL, webhook.Options{Timing: fast})
	recv.Up()
	recv.WaitAccepted(t, later[0].ID)
	if got := recv.AcceptedIDs(); !slices.Equal(got, ids(later)) {
		t.Fatalf("accepted %v, want only %v", got, ids(later))
	}
}

// TestStatusesAreNotSpecial: a redirect is not followed (it would lose
// the body) and a 410 Gone does not stop the deliveries: both are
// failures, retried at the same URL with the same event.
func TestStatusesAreNotSpecial(t *testing.T) {
	var mu sync.Mutex
	var got []string // path and event id of each delivery
	answers := []int{http.StatusFound, http.StatusGone, http.StatusOK}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get(webhook.HeaderEventID))
		if len(got) == 1 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(answers[min(len(got), len(answers))-1])
	}))
	defer recv.Close()
	s, _ := newStore(t)
	run := start(t, s, recv.URL+"/hook", webhook.Options{Wake: s.AuditWritten(), Timing: fast})
	record := write(t, s, 1)[0]
	waitCursor(t, s, 1)
	run.stop(t)
	mu.Lock()
	defer mu.Unlock()
	want := "POST /hook " + record.ID
	if !slices.Equal(got, []string{want, want, want}) {
		t.Fatalf("deliveries %q, want three of %q", got, want)
	}
}

// waitCursor waits until the stored cursor is want.
func waitCursor(t *testing.T, s *embedded.Store, want uint64) {
	t.Helper()
	deadline := time.Now().Add(runBound)
	for {
		if got, _, err := s.AuditCursor(t.Context()); err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cursor did not reach %d within %s", want, runBound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunReturnsMidBackoff: a shutdown in the middle of an hour's wait
// for a retry returns at once, and the undelivered event stays queued.
func TestRunReturnsMidBackoff(t *testing.T) {
	s, _ := newStore(t)
	recv := webhooktest.Start(t, secret, 1)
	hour := webhook.Timing{FirstRetry: time.Hour, MaxRetry: time.Hour, Poll: time.Hour}
	run := start(t, s, recv.URL, webhook.Options{Wake: s.AuditWritten(), Timing: hour})
	write(t, s, 1)
	recv.WaitAttempts(t, 1)
	run.stop(t)
	wantCursor(t, s, 0)
}

// TestShutdownLetsAnAnswerInFlightArrive: a receiver that answers after
// the shutdown began, within the grace, has its event recorded as
// delivered (a clean restart sends nothing twice); one that does not
// answer within the grace is given up on, and the event stays queued.
func TestShutdownLetsAnAnswerInFlightArrive(t *testing.T) {
	for _, c := range []struct {
		name       string
		grace      time.Duration
		wantCursor uint64
	}{
		{"answered within the grace", time.Hour, 1},
		{"not answered within the grace", time.Millisecond, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			arrived, answer := make(chan struct{}), make(chan struct{})
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(arrived)
				<-answer
				w.WriteHeader(http.StatusNoContent)
			}))
			defer recv.Close()
			defer close(answer)
			s, _ := newStore(t)
			timing := fast
			timing.ShutdownGrace = c.grace
			run := start(t, s, recv.URL, webhook.Options{Wake: s.AuditWritten(), Timing: timing})
			write(t, s, 1)
			<-arrived
			run.cancel()
			if c.wantCursor == 1 {
				answer <- struct{}{}
			}
			run.stop(t)
			wantCursor(t, s, c.wantCursor)
		})
	}
}
