package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// publish publishes an alert as root, expiring in the given time.
func (e *env) publish(title, priority string, expiresIn time.Duration) *sshdeck.Alert {
	e.t.Helper()
	resp := e.sendJSON("POST", e.root, "/alerts", map[string]any{
		"title": title, "message": "About " + title, "priority": priority,
		"expiresAt": e.clock().Add(expiresIn).UTC().Format(time.RFC3339),
	})
	if resp.Status != http.StatusCreated {
		e.t.Fatalf("publish %s: %d %s", title, resp.Status, resp.Body)
	}
	var a sshdeck.Alert
	resp.json(e.t, &a)
	if resp.Header.Get("Location") != "/alerts/"+a.ID {
		e.t.Fatalf("Location %q for alert %s", resp.Header.Get("Location"), a.ID)
	}
	return &a
}

func (e *env) alerts(token string) []*sshdeck.Alert {
	e.t.Helper()
	resp := e.get(token, "/alerts")
	if resp.Status != http.StatusOK {
		e.t.Fatalf("GET /alerts: %d %s", resp.Status, resp.Body)
	}
	var as []*sshdeck.Alert
	resp.json(e.t, &as)
	return as
}

func titles(as []*sshdeck.Alert) string {
	var ts []string
	for _, a := range as {
		ts = append(ts, a.Title)
	}
	return strings.Join(ts, " ")
}

func TestAlerts(t *testing.T) {
	e := newEnv(t)
	if got := e.get(e.alice, "/alerts"); got.Status != 200 || strings.TrimSpace(string(got.Body)) != "[]" {
		t.Fatalf("no alerts: %d %s", got.Status, got.Body)
	}
	resp := e.sendJSON("POST", e.root, "/alerts", map[string]any{
		"title": "Upgrade", "message": "Version 2 is out.\n\tSee the notes.", "expiresAt": e.clock().Add(48 * time.Hour).Format(time.RFC3339),
		"type": "success", "actionUrl": "https://example.com/v2", "actionText": "Read more", "id": "mine", "createdAt": "2000-01-01T00:00:00Z",
	})
	var full sshdeck.Alert
	resp.json(t, &full)
	if resp.Status != 201 || !strings.HasPrefix(full.ID, "alr_") || full.Priority != "medium" || full.Type != "success" || full.ActionText != "Read more" || full.CreatedAt.Year() == 2000 {
		t.Fatalf("publish with defaults: %d %s", resp.Status, resp.Body)
	}
	low := e.publish("Low", "low", 2*time.Hour)
	critical := e.publish("Critical", "critical", 3*time.Hour)
	soon := e.publish("High soon", "high", time.Hour)
	e.publish("High later", "high", 5*time.Hour)

	// Most urgent first; among equals, the one expiring soonest.
	if got := titles(e.alerts(e.alice)); got != "Critical High soon High later Upgrade Low" {
		t.Fatalf("alice's alerts: %s", got)
	}
	// A dismissal hides the alert from that user only, and twice is fine.
	for range 2 {
		if resp := e.sendJSON("POST", e.bob, "/alerts/dismiss", map[string]any{"alertId": critical.ID}); resp.Status != 200 || !strings.Contains(string(resp.Body), "Alert dismissed") {
			t.Fatalf("dismiss: %d %s", resp.Status, resp.Body)
		}
	}
	if got := titles(e.alerts(e.bob)); got != "High soon High later Upgrade Low" {
		t.Fatalf("bob's alerts after dismissing: %s", got)
	}
	if got := titles(e.alerts(e.alice)); !strings.HasPrefix(got, "Critical") {
		t.Fatalf("alice's alerts after bob dismissed: %s", got)
	}
	// Expired alerts are never shown, nor dismissable.
	e.advance(time.Hour)
	if got := titles(e.alerts(e.alice)); got != "Critical High later Upgrade Low" {
		t.Fatalf("alerts an hour later: %s", got)
	}
	if resp := e.sendJSON("POST", e.bob, "/alerts/dismiss", map[string]any{"alertId": soon.ID}); resp.Status != 404 {
		t.Fatalf("dismiss an expired alert: %d %s", resp.Status, resp.Body)
	}
	// An admin withdraws an alert for everyone.
	if resp := e.do(request{method: "DELETE", path: "/alerts/" + low.ID, token: e.root}); resp.Status != 200 || !strings.Contains(string(resp.Body), "Alert deleted") {
		t.Fatalf("delete: %d %s", resp.Status, resp.Body)
	}
	if resp := e.do(request{method: "DELETE", path: "/alerts/" + low.ID, token: e.root}); resp.Status != 404 {
		t.Fatalf("delete twice: %d %s", resp.Status, resp.Body)
	}
	if got := titles(e.alerts(e.alice)); got != "Critical High later Upgrade" {
		t.Fatalf("alerts after delete: %s", got)
	}
}

func TestAlertsAdminOnly(t *testing.T) {
	e := newEnv(t)
	a := e.publish("Kept", "low", time.Hour)
	body := map[string]any{"title": "x", "expiresAt": e.clock().Add(time.Hour).Format(time.RFC3339)}
	if resp := e.sendJSON("POST", e.alice, "/alerts", body); resp.Status != http.StatusForbidden || resp.errorCode(t) != "forbidden" {
		t.Fatalf("publish by a user: %d %s", resp.Status, resp.Body)
	}
	if resp := e.do(request{method: "DELETE", path: "/alerts/" + a.ID, token: e.alice}); resp.Status != http.StatusForbidden {
		t.Fatalf("delete by a user: %d %s", resp.Status, resp.Body)
	}
	if resp := e.sendJSON("POST", "", "/alerts", body); resp.Status != http.StatusUnauthorized {
		t.Fatalf("publish without a token: %d %s", resp.Status, resp.Body)
	}
	if got := titles(e.alerts(e.alice)); got != "Kept" {
		t.Fatalf("alerts after refused writes: %s", got)
	}
}

func TestAlertRequestsRefused(t *testing.T) {
	e := newEnv(t)
	future := e.clock().Add(time.Hour).UTC().Format(time.RFC3339)
	past := e.clock().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, tc := range []struct{ body, says string }{
		{`{"expiresAt":"` + future + `"}`, "title is required"},
		{`{"title":"t"}`, "expiresAt is required"},
		{`{"title":"t","expiresAt":"tomorrow"}`, "expiresAt: must be an RFC 3339 time"},
		{`{"title":"t","expiresAt":"` + past + `"}`, "expiresAt: must be in the future"},
		{`{"title":"t","expiresAt":"` + future + `","priority":"urgent"}`, "priority: must be low, medium, high or critical"},
		{`{"title":"t","expiresAt":"` + future + `","priority":3}`, "priority: expected a string"},
		{`{"title":"t","expiresAt":"` + future + `","type":"danger"}`, "type: must be info, warning, error or success"},
		{`{"title":"t","expiresAt":"` + future + `","actionUrl":"javascript:alert(1)"}`, "actionUrl: must be an absolute http or https URL"},
		{`{"title":"t","expiresAt":"` + future + `","actionUrl":"/relative"}`, "actionUrl: must be an absolute"},
		{`{"title":"t","expiresAt":"` + future + `","actionText":"Go"}`, "actionText: needs an actionUrl"},
		{`{"title":"` + strings.Repeat("t", 201) + `","expiresAt":"` + future + `"}`, "title: at most 200"},
		{`{"title":"t","message":"` + strings.Repeat("m", 4001) + `","expiresAt":"` + future + `"}`, "message: at most 4000"},
		{`{"title":`, "truncated JSON"},
		{`{"title":"a\u001b[2Jb","expiresAt":"` + future + `"}`, "title must not contain control characters"},
		{`{"title":"t","message":"a\u0000","expiresAt":"` + future + `"}`, "message must not contain control characters"},
		{`{"title":"t","actionUrl":"https://x/","actionText":"Go\n","expiresAt":"` + future + `"}`, "actionText must not contain control characters"},
	} {
		resp := e.sendJSON("POST", e.root, "/alerts", []byte(tc.body))
		if resp.Status != 400 || !strings.Contains(string(resp.Body), tc.says) {
			t.Errorf("publish %.60s: %d %s, want 400 saying %q", tc.body, resp.Status, resp.Body, tc.says)
		}
	}
	if resp := e.do(request{method: "POST", path: "/alerts", token: e.root, contentType: "text/plain", body: []byte(`{}`)}); resp.Status != 415 {
		t.Errorf("publish as text/plain: %d", resp.Status)
	}
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{}`, 400},
		{`{"alertId":""}`, 400},
		{`{"alertId":7}`, 400},
		{`{"alertId":"` + strings.Repeat("a", 129) + `"}`, 400},
		{`{"alertId":"alr_unknown"}`, 404},
		{`{"alertId":"alr\u0000"}`, 400},
	} {
		if resp := e.sendJSON("POST", e.alice, "/alerts/dismiss", []byte(tc.body)); resp.Status != tc.status {
			t.Errorf("dismiss %s: %d %s, want %d", tc.body, resp.Status, resp.Body, tc.status)
		}
	}
	if got := e.alerts(e.root); len(got) != 0 {
		t.Fatalf("alerts after refused publishes: %s", titles(got))
	}
}

// TestRemoteAlerts: the remote list's alerts join the published ones, are
// fetched once per 5 minutes, and a remote that fails never fails the call.
func TestRemoteAlerts(t *testing.T) {
	e := newEnv(t)
	e.publish("Published", "medium", 3*time.Hour)
	remote := func(id, title, priority string, expiresIn time.Duration) string {
		return fmt.Sprintf(`{"id":%q,"title":%q,"message":"m","priority":%q,"type":"warning","expiresAt":%q,"actionUrl":"","actionText":""}`,
			id, title, priority, e.clock().Add(expiresIn).UTC().Format(time.RFC3339))
	}
	e.remote.Set(200, "["+strings.Join([]string{
		remote("r-1", "Remote critical", "critical", 2*time.Hour),
		remote("r-2", "Remote low", "low", 2*time.Hour),
		remote("r-old", "Remote expired", "high", -time.Hour),
		`{"id":"r-bad","title":"no expiry"}`,
	}, ",")+"]")
	if got := titles(e.alerts(e.alice)); got != "Remote critical Published Remote low" {
		t.Fatalf("alerts with the remote list: %s", got)
	}
	// A remote alert can be dismissed like a published one.
	if resp := e.sendJSON("POST", e.alice, "/alerts/dismiss", map[string]any{"alertId": "r-1"}); resp.Status != 200 {
		t.Fatalf("dismiss a remote alert: %d %s", resp.Status, resp.Body)
	}
	if got := titles(e.alerts(e.alice)); got != "Published Remote low" {
		t.Fatalf("alerts after dismissing r-1: %s", got)
	}
	if n := e.remote.Calls(); n != 1 {
		t.Fatalf("the remote list was fetched %d times within 5 minutes, want 1", n)
	}
	// It fails: the cached list stays in use; once stale, the last good
	// list is still served and the call still answers 200.
	e.remote.Set(500, `oops`)
	e.advance(5*time.Minute + time.Second)
	if got := titles(e.alerts(e.bob)); got != "Remote critical Published Remote low" {
		t.Fatalf("alerts while the remote fails: %s", got)
	}
	if n := e.remote.Calls(); n != 2 {
		t.Fatalf("remote fetched %d times, want 2 (a refetch once stale)", n)
	}
	e.remote.Set(200, "["+remote("r-3", "Remote new", "high", time.Hour)+"]")
	e.advance(time.Minute)
	if got := titles(e.alerts(e.bob)); got != "Remote new Published" {
		t.Fatalf("alerts once the remote is back: %s", got)
	}
}

// TestRemoteAlertsDown: a remote that never answered leaves the published
// alerts, and the call answers 200.
func TestRemoteAlertsDown(t *testing.T) {
	e := newEnv(t)
	e.publish("Published", "low", time.Hour)
	e.remote.Close()
	if got := titles(e.alerts(e.alice)); got != "Published" {
		t.Fatalf("alerts with the remote down: %s", got)
	}
}
