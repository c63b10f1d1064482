package web

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// statuses is the one map from error codes to HTTP statuses, for every
// service of sshdeck.
var statuses = map[sshdeck.Code]int{
	sshdeck.Invalid:              http.StatusBadRequest,
	sshdeck.Unauthorized:         http.StatusUnauthorized,
	sshdeck.Forbidden:            http.StatusForbidden,
	sshdeck.Denied:               http.StatusBadRequest,
	sshdeck.NotFound:             http.StatusNotFound,
	sshdeck.MethodNotAllowed:     http.StatusMethodNotAllowed,
	sshdeck.Conflict:             http.StatusConflict,
	sshdeck.LimitExceeded:        http.StatusConflict,
	sshdeck.PreconditionFailed:   http.StatusPreconditionFailed,
	sshdeck.TooLarge:             http.StatusRequestEntityTooLarge,
	sshdeck.UnsupportedMediaType: http.StatusUnsupportedMediaType,
	sshdeck.RateLimited:          http.StatusTooManyRequests,
	sshdeck.Upstream:             http.StatusBadGateway,
	sshdeck.Internal:             http.StatusInternalServerError,
}

// Status returns the HTTP status of an error code.
func Status(code sshdeck.Code) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// bodyCode is the code an error body shows. The contract answers a denied
// address 400 with code "forbidden", so that clients can tell it from other
// bad requests: sshdeck.Denied is a code of its own for its status only.
func bodyCode(code sshdeck.Code) sshdeck.Code {
	if code == sshdeck.Denied {
		return sshdeck.Forbidden
	}
	return code
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error string       `json:"error"`
	Code  sshdeck.Code `json:"code"`
}

// WriteError answers with err's status and body. Internal errors are logged
// with the request id and answered with a generic sentence.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := sshdeck.ErrorCode(err)
	if code == sshdeck.Internal {
		log.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("request_id", RequestID(r.Context())), slog.String("error", err.Error()))
	}
	if code == sshdeck.Unauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	if wait := sshdeck.RetryAfter(err); wait > 0 {
		// Whole seconds, rounded up: a client that waits that long is past
		// the wait, never a second short of it.
		w.Header().Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
	}
	WriteJSON(w, Status(code), ErrorBody{Error: sshdeck.ErrorMessage(err), Code: bodyCode(code)})
}

// WriteJSON answers with v as JSON, without HTML escaping: "<token>" reads
// better than "\u003ctoken\u003e", and no response is HTML.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only a programming error gets here; the values are plain data.
		status = http.StatusInternalServerError
		body.Reset()
		body.WriteString(`{"error":"internal error","code":"internal"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(body.Bytes())
}
