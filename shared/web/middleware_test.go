package web_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/sshdeck/sshdeck/shared/web"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestRequestIDs: a request without an id gets a new version 4 UUID, a
// different one each time; one given (the Lambda's) is kept.
func TestRequestIDs(t *testing.T) {
	h := web.WithRequest(slog.New(slog.DiscardHandler), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	seen := map[string]bool{}
	for range 1000 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		id := rec.Header().Get("X-Request-Id")
		if !uuidV4.MatchString(id) {
			t.Fatalf("request id %q is not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("request id %q twice", id)
		}
		seen[id] = true
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/", nil)
	h.ServeHTTP(rec, req.WithContext(web.NewContextWithRequestID(req.Context(), "lambda-id")))
	if id := rec.Header().Get("X-Request-Id"); id != "lambda-id" {
		t.Fatalf("request id %q, want the given one", id)
	}
}

func BenchmarkRequestID(b *testing.B) {
	h := web.WithRequest(slog.New(slog.DiscardHandler), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest("GET", "/", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
