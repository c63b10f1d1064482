package web

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime"
	"runtime/debug"
	"time"
)

type requestIDKey struct{}

// NewContextWithRequestID returns a context carrying the request id to use
// (the API Gateway request id in Lambda). Without one, the API makes one.
func NewContextWithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id of ctx.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// requestInfo collects what the request log line says about a request as
// the request goes down the handler chain.
type requestInfo struct {
	route, user string
}

type requestInfoKey struct{}

func requestInfoFrom(ctx context.Context) *requestInfo {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return info
	}
	return &requestInfo{}
}

// NoteRequest names the route and the caller of a request for its log line.
func NoteRequest(r *http.Request, route, user string) {
	info := requestInfoFrom(r.Context())
	info.route, info.user = route, user
}

// WithRequest gives every request an id (X-Request-Id on the response),
// answers a path that is not clean (CleanPath) 404 before any router sees
// it, turns a panic into a 500 and logs one line per request. The line
// never holds a body, a header value or a query string: they may carry
// secrets.
func WithRequest(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := r.Context()
		id := RequestID(ctx)
		if id == "" {
			id = newRequestID()
			ctx = NewContextWithRequestID(ctx, id)
		}
		info := &requestInfo{}
		ctx = context.WithValue(ctx, requestInfoKey{}, info)
		r = r.WithContext(ctx)
		w.Header().Set("X-Request-Id", id)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.LogAttrs(ctx, slog.LevelError, "panic",
					slog.String("request_id", id), slog.String("panic", panicSummary(v)), slog.String("stack", string(debug.Stack())))
				if rec.status == 0 {
					WriteError(rec, r, log, fmt.Errorf("panic"))
				}
			}
			log.LogAttrs(ctx, slog.LevelInfo, "request",
				slog.String("request_id", id),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.String("route", info.route),
				slog.String("user", info.user),
				slog.Int("status", rec.status),
				slog.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000))
		}()
		if !CleanPath(r) {
			WriteError(rec, r, log, notCleanPath(r))
			return
		}
		next.ServeHTTP(rec, r)
	})
}

// panicSummary says what panicked without printing arbitrary values, which
// could hold a credential: runtime errors are safe, others give their type.
func panicSummary(v any) string {
	if err, ok := v.(runtime.Error); ok {
		return err.Error()
	}
	return fmt.Sprintf("%T", v)
}

// newRequestID returns a version 4 UUID, the shape of Lambda's ids. An id
// must be unique, not secret: its bits come from math/rand/v2 (ChaCha8,
// seeded by the system), without the system call and formatting that
// crypto/rand and fmt cost on every request.
func newRequestID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	hex.Encode(s[9:13], b[4:6])
	hex.Encode(s[14:18], b[6:8])
	hex.Encode(s[19:23], b[8:10])
	hex.Encode(s[24:36], b[10:16])
	s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
	return string(s[:])
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
