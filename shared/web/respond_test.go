package web_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// TestRetryAfter: an error that asks its caller to wait writes the wait in
// whole seconds, rounded up (a client that waits that long is past it),
// as Retry-After; an error that does not writes none.
func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		wait time.Duration
		want string
	}{
		{1200 * time.Millisecond, "2"},
		{time.Second, "1"},
		{time.Nanosecond, "1"},
		{839 * time.Second, "839"},
		{0, ""},
		{-time.Second, ""},
	} {
		t.Run(fmt.Sprint(tc.wait), func(t *testing.T) {
			err := &sshdeck.Error{Code: sshdeck.RateLimited, Message: "too many", RetryAfter: tc.wait}
			rec := httptest.NewRecorder()
			web.WriteError(rec, httptest.NewRequest("POST", "/auth/login", nil), slog.New(slog.DiscardHandler), fmt.Errorf("wrapped: %w", err))
			if rec.Code != 429 {
				t.Errorf("status %d, want 429", rec.Code)
			}
			if got := rec.Header().Get("Retry-After"); got != tc.want {
				t.Errorf("Retry-After %q, want %q", got, tc.want)
			}
			var body web.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Code != sshdeck.RateLimited || body.Error != "too many" {
				t.Errorf("body %s (%v)", rec.Body, err)
			}
		})
	}
	rec := httptest.NewRecorder()
	web.WriteError(rec, httptest.NewRequest("GET", "/", nil), slog.New(slog.DiscardHandler), sshdeck.Errorf(sshdeck.Invalid, "bad"))
	if got := rec.Header().Get("Retry-After"); got != "" {
		t.Errorf("a 400 with Retry-After %q", got)
	}
}
