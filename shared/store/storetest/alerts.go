package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func fullAlert(id string, seed int) *sshdeck.Alert {
	return &sshdeck.Alert{
		ID:         id,
		Title:      fmt.Sprintf("Maintenance %d", seed),
		Message:    fmt.Sprintf("The API restarts at 02:%02d UTC.", seed),
		ExpiresAt:  base.Add(time.Duration(seed+1) * time.Hour),
		Priority:   sshdeck.PriorityHigh,
		Type:       sshdeck.AlertWarning,
		ActionURL:  fmt.Sprintf("https://status.example.com/%d", seed),
		ActionText: "Status page",
		CreatedAt:  base.Add(time.Duration(seed) * time.Minute),
	}
}

func sameAlerts(t *testing.T, got, want []*sshdeck.Alert, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d alerts, want %d", what, len(got), len(want))
	}
	for i := range want {
		same(t, got[i], want[i], func(a *sshdeck.Alert) {
			a.ExpiresAt, a.CreatedAt = ms(a.ExpiresAt), ms(a.CreatedAt)
		}, fmt.Sprintf("%s[%d]", what, i))
	}
}

func listAlerts(t *testing.T, s sshdeck.Store, now time.Time) []*sshdeck.Alert {
	t.Helper()
	as, err := s.Alerts(t.Context(), now)
	must(t, err, "Alerts")
	if as == nil {
		t.Fatal("Alerts: got nil, want a non-nil slice")
	}
	return as
}

func testAlertRoundTrip(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	b := fullAlert("alr_b", 2)
	a := fullAlert("alr_a", 1)
	bare := &sshdeck.Alert{ID: "alr_c", Title: "Hello", ExpiresAt: base.Add(time.Hour), Priority: sshdeck.PriorityLow, Type: sshdeck.AlertInfo, CreatedAt: base}
	for _, x := range []*sshdeck.Alert{b, a, bare} {
		must(t, s.CreateAlert(ctx, x), "CreateAlert("+x.ID+")")
	}
	sameAlerts(t, listAlerts(t, s, base), []*sshdeck.Alert{a, b, bare}, "Alerts ordered by id")
	wantCode(t, s.CreateAlert(ctx, fullAlert("alr_a", 9)), sshdeck.Conflict, "CreateAlert with an existing id")
	sameAlerts(t, listAlerts(t, s, base), []*sshdeck.Alert{a, b, bare}, "Alerts after the refused create")
}

// testAlertExpiry: an alert is gone from the list from its expiry on.
func testAlertExpiry(t *testing.T, s sshdeck.Store) {
	a := fullAlert("alr_a", 0) // expires at base + 1h
	b := fullAlert("alr_b", 1) // expires at base + 2h
	must(t, s.CreateAlert(t.Context(), a), "CreateAlert")
	must(t, s.CreateAlert(t.Context(), b), "CreateAlert")
	sameAlerts(t, listAlerts(t, s, a.ExpiresAt.Add(-time.Millisecond)), []*sshdeck.Alert{a, b}, "Alerts just before the first expiry")
	sameAlerts(t, listAlerts(t, s, a.ExpiresAt), []*sshdeck.Alert{b}, "Alerts at the first expiry")
	sameAlerts(t, listAlerts(t, s, b.ExpiresAt.Add(time.Hour)), nil, "Alerts after both expired")
}

func testAlertDelete(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	a, b := fullAlert("alr_a", 1), fullAlert("alr_b", 2)
	must(t, s.CreateAlert(ctx, a), "CreateAlert")
	must(t, s.CreateAlert(ctx, b), "CreateAlert")
	must(t, s.DeleteAlert(ctx, "alr_a"), "DeleteAlert")
	wantCode(t, s.DeleteAlert(ctx, "alr_a"), sshdeck.NotFound, "DeleteAlert twice")
	wantCode(t, s.DeleteAlert(ctx, "alr_nope"), sshdeck.NotFound, "DeleteAlert of an unknown id")
	sameAlerts(t, listAlerts(t, s, base), []*sshdeck.Alert{b}, "Alerts after delete")
}

func testAlertDismissals(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	dismiss := func(user, alert string, minutes int) *sshdeck.Dismissal {
		d := &sshdeck.Dismissal{UserID: user, AlertID: alert, At: base, Until: base.Add(time.Duration(minutes) * time.Minute)}
		must(t, s.DismissAlert(ctx, d), "DismissAlert")
		return d
	}
	list := func(user string, now time.Time) []*sshdeck.Dismissal {
		ds, err := s.Dismissals(ctx, user, now)
		must(t, err, "Dismissals")
		if ds == nil {
			t.Fatal("Dismissals: got nil, want a non-nil slice")
		}
		return ds
	}
	check := func(got []*sshdeck.Dismissal, want []*sshdeck.Dismissal, what string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: got %d dismissals, want %d", what, len(got), len(want))
		}
		for i := range want {
			same(t, got[i], want[i], func(d *sshdeck.Dismissal) { d.At, d.Until = ms(d.At), ms(d.Until) }, fmt.Sprintf("%s[%d]", what, i))
		}
	}
	z := dismiss("alice", "remote-z", 60)
	a := dismiss("alice", "alr_a", 30)
	b := dismiss("bob", "alr_a", 90)
	check(list("alice", base), []*sshdeck.Dismissal{a, z}, "alice's dismissals")
	check(list("bob", base), []*sshdeck.Dismissal{b}, "bob's dismissals")
	check(list("carol", base), nil, "carol's dismissals")
	check(list("alice", a.Until), []*sshdeck.Dismissal{z}, "alice's dismissals once the first ran out")
	// Dismissing again replaces: the new Until counts.
	a2 := dismiss("alice", "alr_a", 120)
	check(list("alice", a.Until), []*sshdeck.Dismissal{a2, z}, "alice's dismissals after dismissing again")
}
