package sshdeck

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies an error for the caller. Every service maps each code to
// one HTTP status in one place (shared/web).
type Code string

const (
	Invalid      Code = "invalid"
	Unauthorized Code = "unauthorized"
	Forbidden    Code = "forbidden"
	// Denied is a request that names what the service never reaches (an
	// address in a denied range): the client's mistake, 400, shown with
	// code "forbidden" as the contract says.
	Denied           Code = "denied"
	NotFound         Code = "not_found"
	MethodNotAllowed Code = "method_not_allowed"
	Conflict         Code = "conflict"
	// LimitExceeded is a request that would take its caller past one of
	// the deployment's limits (config.Limits); its message names the limit.
	LimitExceeded        Code = "limit_exceeded"
	PreconditionFailed   Code = "precondition_failed"
	TooLarge             Code = "too_large"
	UnsupportedMediaType Code = "unsupported_media_type"
	RateLimited          Code = "rate_limited"
	Upstream             Code = "upstream"
	Internal             Code = "internal"
)

// Error is an error whose message is safe to show to the caller. Any error
// that is not an *Error is internal: it is logged, never shown.
type Error struct {
	Code    Code
	Message string
	// RetryAfter, on a RateLimited error, is when the caller may try
	// again: the Retry-After header of the answer.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf returns an *Error with a formatted message. The message reaches the
// client: never put a credential or internal detail into it.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, Internal for errors that carry none.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// RetryAfter returns how long a RateLimited err asks its caller to wait: 0
// when it does not say.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// ErrorMessage returns the message of err that may be shown to a client; for
// internal errors it is a generic sentence.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
