package upstream_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/upstream"
)

// alertsJSON is a published list: three good items, then one of each way an
// item can be wrong.
var alertsJSON = `[
  {"id": "maint-2026-03", "title": "Maintenance", "message": "Tunnels restart at 02:00 UTC.",
   "expiresAt": "2026-03-02T02:30:00Z", "priority": "high", "type": "warning",
   "actionUrl": "https://status.example/maint", "actionText": "Details",
   "createdAt": "2026-03-01T00:00:00Z", "audience": "everyone"},
  {"id": "welcome", "title": "Welcome", "expiresAt": "2026-12-31T23:59:59+01:00"},
  {"id": "` + strings.Repeat("x", 128) + `", "title": "Long id", "expiresAt": "2026-04-01T00:00:00Z",
   "priority": "critical", "type": "success", "actionUrl": "http://example.com"},
  {"id": "", "title": "No id", "expiresAt": "2026-04-01T00:00:00Z"},
  {"title": "Absent id", "expiresAt": "2026-04-01T00:00:00Z"},
  {"id": "` + strings.Repeat("x", 129) + `", "title": "Id too long", "expiresAt": "2026-04-01T00:00:00Z"},
  {"id": "no-title", "expiresAt": "2026-04-01T00:00:00Z"},
  {"id": "blank-title", "title": "  ", "expiresAt": "2026-04-01T00:00:00Z"},
  {"id": "no-expiry", "title": "No expiry"},
  {"id": "null-expiry", "title": "Null expiry", "expiresAt": null},
  {"id": "zero-expiry", "title": "Zero expiry", "expiresAt": "0001-01-01T00:00:00Z"},
  {"id": "bad-expiry", "title": "Bad expiry", "expiresAt": "next Tuesday"},
  {"id": "number-expiry", "title": "Number expiry", "expiresAt": 1772370000},
  {"id": "bad-priority", "title": "Bad priority", "expiresAt": "2026-04-01T00:00:00Z", "priority": "urgent"},
  {"id": "upper-priority", "title": "Upper priority", "expiresAt": "2026-04-01T00:00:00Z", "priority": "HIGH"},
  {"id": "bad-type", "title": "Bad type", "expiresAt": "2026-04-01T00:00:00Z", "type": "fatal"},
  {"id": "script-action", "title": "Script", "expiresAt": "2026-04-01T00:00:00Z", "actionUrl": "javascript:alert(1)"},
  {"id": "relative-action", "title": "Relative", "expiresAt": "2026-04-01T00:00:00Z", "actionUrl": "/settings"},
  {"id": 42, "title": "Number id", "expiresAt": "2026-04-01T00:00:00Z"},
  {"id": "welcome", "title": "Duplicate id", "expiresAt": "2026-04-01T00:00:00Z"},
  "not an object",
  null,
  [1, 2]
]`

// alertsDropped is how many items of alertsJSON are invalid.
const alertsDropped = 20

// newAlertsServer serves answer at /alerts.json, checking the request.
func newAlertsServer(t *testing.T, answer http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/alerts.json" {
			t.Errorf("request %s %s, want GET /alerts.json", r.Method, r.URL.Path)
		}
		if ua, acc := r.Header.Get("User-Agent"), r.Header.Get("Accept"); ua != "sshdeck" || acc != "application/json" {
			t.Errorf("User-Agent %q, Accept %q", ua, acc)
		}
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newAlertsList(t *testing.T, url string, timeout time.Duration) *upstream.AlertsList {
	t.Helper()
	l, err := upstream.NewAlertsList(url, timeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func date(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestAlertsListFetch(t *testing.T) {
	srv := newAlertsServer(t, answerJSON(200, alertsJSON))
	got, dropped, err := newAlertsList(t, srv.URL+"/alerts.json", 0).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []sshdeck.Alert{
		{ID: "maint-2026-03", Title: "Maintenance", Message: "Tunnels restart at 02:00 UTC.",
			ExpiresAt: date("2026-03-02T02:30:00Z"), Priority: sshdeck.PriorityHigh, Type: sshdeck.AlertWarning,
			ActionURL: "https://status.example/maint", ActionText: "Details"},
		{ID: "welcome", Title: "Welcome", ExpiresAt: date("2026-12-31T23:59:59+01:00"),
			Priority: sshdeck.PriorityMedium, Type: sshdeck.AlertInfo},
		{ID: strings.Repeat("x", 128), Title: "Long id", ExpiresAt: date("2026-04-01T00:00:00Z"),
			Priority: sshdeck.PriorityCritical, Type: sshdeck.AlertSuccess, ActionURL: "http://example.com"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d alerts, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !got[i].ExpiresAt.Equal(want[i].ExpiresAt) {
			t.Errorf("alert %s expires %v, want %v", want[i].ID, got[i].ExpiresAt, want[i].ExpiresAt)
		}
		g, w := got[i], want[i]
		g.ExpiresAt, w.ExpiresAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("alert %d:\n got %+v\nwant %+v", i, g, w)
		}
		if !got[i].CreatedAt.IsZero() {
			t.Errorf("alert %s has CreatedAt %v, want zero for a remote alert", got[i].ID, got[i].CreatedAt)
		}
	}
	if dropped != alertsDropped {
		t.Errorf("dropped %d, want %d", dropped, alertsDropped)
	}
}

func TestAlertsListEmpty(t *testing.T) {
	srv := newAlertsServer(t, answerJSON(200, ` [ ] `))
	got, dropped, err := newAlertsList(t, srv.URL+"/alerts.json", 0).Fetch(context.Background())
	if err != nil || len(got) != 0 || dropped != 0 {
		t.Errorf("Fetch() = %v, %d, %v; want no alerts", got, dropped, err)
	}
}

func TestAlertsListErrors(t *testing.T) {
	tests := []struct {
		name   string
		answer http.HandlerFunc
		says   string
	}{
		{"503", answerJSON(503, `[]`), "status 503 Service Unavailable"},
		{"404", answerJSON(404, `not here`), "status 404 Not Found"},
		{"object", answerJSON(200, `{"alerts": []}`), "answer is not a JSON array"},
		{"null", answerJSON(200, `null`), "answer is not a JSON array"},
		{"malformed", answerJSON(200, `[{"id": "a"`), "answer is not a JSON array"},
		{"empty body", answerJSON(200, ``), "answer is not a JSON array"},
		{"over 1 MiB", func(w http.ResponseWriter, r *http.Request) {
			w.Write(append(append([]byte("["), bytes.Repeat([]byte(" "), upstream.MaxAlertsBody)...), ']'))
		}, "answer over 1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newAlertsServer(t, tt.answer)
			got, dropped, err := newAlertsList(t, srv.URL+"/alerts.json", 0).Fetch(context.Background())
			if err == nil {
				t.Fatalf("Fetch() = %v, %d; want an error", got, dropped)
			}
			want := "remote alerts " + srv.URL + "/alerts.json: " + tt.says
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q, want %q", err, want)
			}
			if got != nil || dropped != 0 {
				t.Errorf("alerts %v, dropped %d with the error", got, dropped)
			}
		})
	}
}

func TestAlertsListTimeout(t *testing.T) {
	unblock := make(chan struct{})
	srv := newAlertsServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-unblock:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(unblock) }) // before the server closes
	start := time.Now()
	_, _, err := newAlertsList(t, srv.URL+"/alerts.json", 100*time.Millisecond).Fetch(context.Background())
	elapsed := time.Since(start)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a timeout", err)
	}
	if want := "remote alerts " + srv.URL + "/alerts.json: no answer within 100ms"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
	if elapsed < 100*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("failed after %s, want about 100ms", elapsed)
	}
}

func TestAlertsListErrorsHideTheQuery(t *testing.T) {
	srv := newAlertsServer(t, answerJSON(200, `[]`))
	srv.Close() // every request now fails in the transport
	withAuth := strings.Replace(srv.URL, "http://", "http://u:pa55word@", 1)
	l := newAlertsList(t, withAuth+"/alerts.json?X-Amz-Signature=sig-s3cr3t#frag", 0)
	_, _, err := l.Fetch(context.Background())
	if err == nil {
		t.Fatal("no error from a closed server")
	}
	want := "remote alerts " + strings.Replace(srv.URL, "http://", "http://u:xxxxx@", 1) + "/alerts.json?…: "
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
	if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "pa55word") {
		t.Errorf("error quotes a secret: %q", err)
	}
}

func TestNewAlertsListValidation(t *testing.T) {
	tests := []struct{ url, err string }{
		{"https://alerts.example/list.json", ""},
		{"http://127.0.0.1:8080/a?sig=1", ""},
		{"", `SSHDECK_ALERTS_URL must be an absolute http(s) URL, got ""`},
		{"alerts.example/list.json", `SSHDECK_ALERTS_URL must be an absolute http(s) URL, got "alerts.example/list.json"`},
		{"/list.json", `got "/list.json"`},
		{"file:///etc/passwd", `got "file:///etc/passwd"`},
		{"https://", `got "https://"`},
		{"https://u:pa55word@alerts.example/", ""},
		{"ftp://u:pa55word@alerts.example/", `got "ftp://u:xxxxx@alerts.example/"`},
		{"http://u:pa55word@[::1", `got "…@[::1"`},
	}
	for _, tt := range tests {
		_, err := upstream.NewAlertsList(tt.url, 0, nil)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.url, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want %q", tt.url, err, tt.err)
		case err != nil && strings.Contains(err.Error(), "pa55word"):
			t.Errorf("error quotes the password: %v", err)
		}
	}
}
