// Package webhooktest is a webhook receiver for tests, as a careful user
// writes one: a real HTTP server on loopback that verifies every delivery
// (webhook.Verify, its headers, its event), answers 500 to as many of the
// first as it is told to, keeps the events it accepted, and can go down
// (connections refused) and come back on its address.
package webhooktest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/webhook"
)

// waitBound is how long a wait for deliveries may take before the test
// fails: a bound for a deliverer that never delivers, far beyond what a
// slow machine needs (deliveries are loopback requests).
const waitBound = 2 * time.Minute

// Receiver is a webhook receiver.
type Receiver struct {
	URL    string
	t      testing.TB
	secret string
	addr   string

	mu       sync.Mutex
	server   *http.Server // nil while down
	failures int          // answers still to fail with 500
	attempts int          // deliveries received, verified or not
	accepted []audit.Event
	// changed is closed, and replaced, at every delivery: waiters watch it.
	changed chan struct{}
}

// Start starts a receiver of events signed with secret that answers 500
// to its first fail deliveries, and 204 to the others. It stops at the
// end of the test.
func Start(t testing.TB, secret string, fail int) *Receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{URL: "http://" + l.Addr().String() + "/hooks/sshdeck", t: t, secret: secret, addr: l.Addr().String(),
		failures: fail, changed: make(chan struct{})}
	r.serve(l)
	t.Cleanup(r.Down)
	return r
}

func (r *Receiver) serve(l net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(r.receive)}
	r.mu.Lock()
	r.server = srv
	r.mu.Unlock()
	go srv.Serve(l)
}

// Down stops the receiver: its port refuses connections. It returns once
// the answers in flight were written, so that a delivery it accepted has
// its 2xx on the way and one it has not seen will be refused.
func (r *Receiver) Down() {
	r.mu.Lock()
	srv := r.server
	r.server = nil
	r.mu.Unlock()
	if srv != nil {
		// Shutdown closes the listener at once, then waits for the
		// handlers running, which write their answers without waiting.
		srv.Shutdown(context.Background())
	}
}

// Up serves again on the receiver's address.
func (r *Receiver) Up() {
	r.t.Helper()
	l, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatalf("the receiver cannot listen on %s again: %v", r.addr, err)
	}
	r.serve(l)
}

func (r *Receiver) receive(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return // the deliverer went away
	}
	event, err := r.check(req, body)
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify()
	r.attempts++
	switch {
	case err != nil:
		r.t.Errorf("webhook receiver: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
	case r.failures > 0:
		r.failures--
		http.Error(w, "failing on purpose", http.StatusInternalServerError)
	default:
		r.accepted = append(r.accepted, event)
		w.WriteHeader(http.StatusNoContent)
	}
}

// check verifies a delivery as a receiver must, and returns its event.
func (r *Receiver) check(req *http.Request, body []byte) (audit.Event, error) {
	var event audit.Event
	if err := webhook.Verify(r.secret, req.Header, body, time.Now(), webhook.DefaultTolerance); err != nil {
		return event, err
	}
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" || req.Header.Get("User-Agent") != "sshdeck-webhook" {
		return event, errors.New("not a POST of application/json by sshdeck-webhook: " + req.Method + " " + req.Header.Get("Content-Type") + " " + req.Header.Get("User-Agent"))
	}
	if err := json.Unmarshal(body, &event); err != nil {
		return event, err
	}
	if id := req.Header.Get(webhook.HeaderEventID); id == "" || id != event.ID || id != event.Detail.ID {
		return event, errors.New("event ids differ: header " + id + ", id " + event.ID + ", detail.id " + event.Detail.ID)
	}
	if event.Source != audit.EventSource || event.DetailType != audit.EventDetailType || event.Version != "0" {
		return event, errors.New("not an sshdeck audit event: " + string(body))
	}
	return event, nil
}

// notify wakes the waiters; r.mu is held.
func (r *Receiver) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Accepted returns the events answered 2xx, in their order, a repeated
// one as often as it was accepted.
func (r *Receiver) Accepted() []audit.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]audit.Event(nil), r.accepted...)
}

// AcceptedIDs returns the ids of Accepted.
func (r *Receiver) AcceptedIDs() []string {
	var ids []string
	for _, e := range r.Accepted() {
		ids = append(ids, e.ID)
	}
	return ids
}

// Attempts is how many deliveries the receiver got.
func (r *Receiver) Attempts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts
}

// WaitAttempts waits until the receiver got n deliveries.
func (r *Receiver) WaitAttempts(t testing.TB, n int) {
	t.Helper()
	r.wait(t, func() bool { return r.attempts >= n }, "deliveries to arrive")
}

// WaitAccepted waits until the receiver accepted the event of id.
func (r *Receiver) WaitAccepted(t testing.TB, id string) {
	t.Helper()
	r.wait(t, func() bool {
		for _, e := range r.accepted {
			if e.ID == id {
				return true
			}
		}
		return false
	}, "event "+id+" to be accepted")
}

// wait waits until done, which reads r under r.mu, holds.
func (r *Receiver) wait(t testing.TB, done func() bool, what string) {
	t.Helper()
	bound := time.NewTimer(waitBound)
	defer bound.Stop()
	for {
		r.mu.Lock()
		ok, changed := done(), r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-bound.C:
			t.Fatalf("waited %s for %s; accepted %v", waitBound, what, r.AcceptedIDs())
		}
	}
}

// NewRecord is an audit record of a change to target, made now, as a
// request's would be: a test writes it with the store's PutAuditRecord.
func NewRecord(target string) *sshdeck.AuditRecord {
	now := time.Now().UTC()
	return &sshdeck.AuditRecord{
		ID: audit.NewID(now), Time: now, Actor: "cli:webhooktest", Action: "webhooktest-change", Target: target,
		RequestID: "req-" + target, SourceIP: "203.0.113.9", Outcome: sshdeck.AuditSuccess,
		ExpiresAt: now.Add(24 * time.Hour),
	}
}
