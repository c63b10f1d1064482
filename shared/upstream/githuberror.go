package upstream

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// RateLimitError is GitHub refusing a request because a rate limit is used
// up: the primary limit (X-RateLimit-Remaining: 0, with the time it resets)
// or a secondary one (Retry-After). The caller should serve what it has and
// not ask again before Reset: asking sooner only prolongs a secondary limit.
// Releases returns it wrapped with the repository; find it with errors.As.
type RateLimitError struct {
	// Status is the HTTP status of the answer: 403 or 429.
	Status int
	// Reset is when GitHub will answer again. It is now + 60s when the
	// answer did not say.
	Reset time.Time
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("rate limited (status %d) until %s", e.Status, e.Reset.UTC().Format(time.RFC3339))
}

// StatusError is any other answer that is not a success, such as 404 for a
// repository that does not exist or is private to the token. Releases
// returns it wrapped with the repository; find it with errors.As.
type StatusError struct {
	// Status is the HTTP status of the answer.
	Status int
	// Message is GitHub's explanation (the "message" field of its error
	// body, at most maxMessage bytes) or else the status text.
	Message string
}

func (e *StatusError) Error() string { return fmt.Sprintf("status %d: %s", e.Status, e.Message) }

// defaultRateLimitWait is how long a rate limit lasts when the answer does
// not say.
const defaultRateLimitWait = 60 * time.Second

// rateLimit returns the RateLimitError of a GitHub answer, or nil when the
// answer is not a rate limit. A 429 always is; a 403 is only when it says so
// in its headers (GitHub also answers 403 for lack of permission). When both
// headers give a time, the later one is kept: both limits must have passed.
func rateLimit(resp *http.Response, now time.Time) *RateLimitError {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return nil
	}
	retryAfter, hasRetryAfter := resp.Header.Get("Retry-After"), len(resp.Header.Values("Retry-After")) > 0
	exhausted := resp.Header.Get("X-RateLimit-Remaining") == "0"
	if resp.StatusCode == http.StatusForbidden && !hasRetryAfter && !exhausted {
		return nil
	}
	var reset time.Time
	if t, ok := parseRetryAfter(retryAfter, now); hasRetryAfter && ok {
		reset = t
	}
	if exhausted {
		if secs, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil && secs > 0 {
			if t := time.Unix(secs, 0); t.After(reset) {
				reset = t
			}
		}
	}
	if reset.IsZero() {
		reset = now.Add(defaultRateLimitWait)
	}
	return &RateLimitError{Status: resp.StatusCode, Reset: reset}
}

// parseRetryAfter reads a Retry-After header: seconds, as GitHub sends, or
// an HTTP date, as RFC 9110 also allows. Absurd counts of seconds (that would
// overflow a Duration) are not read.
func parseRetryAfter(v string, now time.Time) (time.Time, bool) {
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 && secs < 1<<31 {
		return now.Add(time.Duration(secs) * time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return t, true
	}
	return time.Time{}, false
}
