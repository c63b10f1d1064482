// Package eventstest is a fake Amazon EventBridge for tests: an HTTP server
// speaking the service's JSON 1.1 protocol (internal/awsjson) for
// PutEvents, so the real SDK client (or a Lambda function told only a URL
// and a bus) talks to it exactly as to EventBridge. It keeps every event
// it accepted, checks what EventBridge checks of a request (1 to 10
// entries, under 256 KB by EventBridge's count, each with a source, a
// detail type and a detail that is a JSON object), and can be told to
// refuse entries, as EventBridge does one entry at a time (an ErrorCode in
// place of the entry's EventId), or whole requests.
//
// Like EventBridge, it takes events for any bus name: EventBridge answers
// an event for a bus that does not exist with an EventId, and drops it
// (aws/aws-sdk issue 186). Tests check the bus each event names (Event.Bus).
package eventstest

import (
	"maps"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
)

// region is the region of the fake's client; clients may name any.
const region = "eu-west-1"

// Server is a running fake EventBridge.
type Server struct {
	URL string // endpoint, e.g. for eventbridge.Options.BaseEndpoint or AWS_ENDPOINT_URL_EVENTBRIDGE

	srv      *httptest.Server
	mu       sync.Mutex
	events   []Event
	calls    map[string]int
	refuse   func(Event) *Refusal
	failures []string // error types for the next requests, one each
}

// Event is an event the server accepted, as its PutEvents entry said it.
type Event struct {
	ID string // the EventId the server answered
	// Bus is the entry's EventBusName as sent (a name or an ARN); "" means
	// the default bus.
	Bus        string
	Source     string
	DetailType string
	Detail     string
	Resources  []string
	// Time is the entry's Time (to the millisecond, as the SDK sends it),
	// or when the server took it when the entry had none.
	Time time.Time
}

// Refusal is an entry's error, as EventBridge answers it in place of an
// EventId: ErrorCode and ErrorMessage.
type Refusal struct{ Code, Message string }

// Start runs a fake EventBridge until the test ends.
func Start(t testing.TB) *Server {
	s := New()
	t.Cleanup(s.Close)
	return s
}

// New runs a fake EventBridge until Close (for the benchmarks, which are
// not tests).
func New() *Server {
	s := &Server{calls: map[string]int{}}
	s.srv = httptest.NewServer(s.handler())
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Client returns an SDK client for the server, with static credentials (the
// fake does not check signatures).
func (s *Server) Client() *eventbridge.Client {
	return eventbridge.New(eventbridge.Options{
		BaseEndpoint: aws.String(s.URL),
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEVENTSTEST", "eventstest", ""),
	})
}

// Events returns the events the server accepted, in the order it took them.
func (s *Server) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Refuse makes the server refuse, from now on, each entry for which refuse
// returns a Refusal (the others are accepted); nil accepts every entry.
// refuse runs with the server's lock held: it must not call the server.
func (s *Server) Refuse(refuse func(Event) *Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = refuse
}

// FailRequests makes the next len(errorTypes) requests fail as a whole,
// one error type each, answered 400 ("AccessDeniedException"; the SDK
// retries a "ThrottlingException", after its backoff); a request whose
// type is "" is served.
func (s *Server) FailRequests(errorTypes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, errorTypes...)
}

// Calls returns the number of requests of each operation ("PutEvents")
// since Start or the last Reset, failed and unknown ones included: a test
// can tell that code made no other call.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// Reset forgets the events accepted and the calls counted, and refuses
// nothing again.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events, s.refuse, s.failures = nil, nil, nil
	clear(s.calls)
}
