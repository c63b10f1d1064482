package client

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestReconnectBackoffDoublesToItsCapWithJitter(t *testing.T) {
	var b reconnectBackoff
	within := func(got, want time.Duration) bool {
		return got >= want*8/10-50*time.Millisecond && got <= want*12/10+50*time.Millisecond
	}
	for _, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
		if got := b.wait(); !within(got, want) {
			t.Errorf("wait %s, want %s ± 20%%", got, want)
		}
	}
	b.reset()
	if got := b.wait(); !within(got, 500*time.Millisecond) {
		t.Errorf("after a reset: wait %s, want 500ms ± 20%%", got)
	}
	b.atLeast(10 * time.Second)
	if got := b.wait(); !within(got, 10*time.Second) {
		t.Errorf("after Retry-After 10s: wait %s", got)
	}
}

func TestEndsForward(t *testing.T) {
	for status, ends := range map[int]bool{
		http.StatusBadRequest: true, http.StatusUnauthorized: true, http.StatusForbidden: true, http.StatusNotFound: true,
		http.StatusRequestTimeout: false, http.StatusTooManyRequests: false, http.StatusBadGateway: false, http.StatusServiceUnavailable: false,
	} {
		err := fmt.Errorf("via host %q: %w", "web", &Error{Status: status})
		if endsForward(err) != ends {
			t.Errorf("a redial answered %d: endsForward %v, want %v", status, !ends, ends)
		}
	}
	if endsForward(fmt.Errorf("cannot reach the tunnel service at x: refused")) {
		t.Error("an unreachable service ends the forward; want retries")
	}
}
