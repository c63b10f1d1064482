package hosts

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// hopsInput is a host body with the given jump hosts (by id).
func hopsInput(t *testing.T, ids ...int64) *Input {
	t.Helper()
	hops := make([]string, len(ids))
	for i, id := range ids {
		hops[i] = fmt.Sprintf(`{"hostId":%d}`, id)
	}
	return input(t, `{"authType":"none","jumpHosts":[`+strings.Join(hops, ",")+`]}`)
}

// mustCreate creates a host of owner with the given jump hosts and returns
// its id.
func mustCreate(t *testing.T, svc *Service, owner string, hops ...int64) int64 {
	t.Helper()
	r, err := svc.Create(context.Background(), owner, hopsInput(t, hops...))
	if err != nil {
		t.Fatalf("create with jump hosts %v: %v", hops, err)
	}
	return r.ID
}

// wantError checks err's code and exact message.
func wantError(t *testing.T, what string, err error, code sshdeck.Code, msg string) {
	t.Helper()
	e, ok := err.(*sshdeck.Error)
	if !ok || e.Code != code || e.Message != msg {
		t.Errorf("%s: got %v, want %s %q", what, err, code, msg)
	}
}

func hopIDs(hops []sshdeck.JumpHost) []int64 {
	ids := []int64{}
	for _, h := range hops {
		ids = append(ids, h.HostID)
	}
	return ids
}

func TestJumpHostsSaved(t *testing.T) {
	ctx := context.Background()
	svc, _ := newCountingService(t)
	a := mustCreate(t, svc, "usr_a")
	b := mustCreate(t, svc, "usr_a")
	c := mustCreate(t, svc, "usr_a", b, a) // the order is the chain's
	r, err := svc.Get(ctx, "usr_a", c)
	if err != nil || !slices.Equal(hopIDs(r.JumpHosts), []int64{b, a}) {
		t.Fatalf("Get = %+v, %v; want jump hosts [%d %d]", r, err, b, a)
	}
	page, err := svc.Page(ctx, "usr_a", 0, 0)
	if err != nil || len(page) != 3 || !slices.Equal(hopIDs(page[2].JumpHosts), []int64{b, a}) {
		t.Fatalf("Page = %v, %v", page, err)
	}
	// Empty is [] in JSON, as tags and tunnelConnections are; so is a
	// host saved without the field.
	for _, rec := range []*Record{page[0], page[1]} {
		if j, _ := json.Marshal(rec); !strings.Contains(string(j), `"tunnelConnections":[],"jumpHosts":[],`) {
			t.Errorf("record %s", j)
		}
	}
	// An update replaces the list; absent clears it, as for every field
	// but the credentials.
	if r, err = svc.Update(ctx, "usr_a", c, hopsInput(t, a), nil); err != nil || !slices.Equal(hopIDs(r.JumpHosts), []int64{a}) {
		t.Fatalf("Update = %+v, %v", r, err)
	}
	if r, err = svc.Update(ctx, "usr_a", c, input(t, `{"authType":"none"}`), nil); err != nil || len(r.JumpHosts) != 0 || r.JumpHosts == nil {
		t.Fatalf("Update without jumpHosts = %+v, %v; want []", r, err)
	}
}

// TestJumpHostForeignIsMissing: another owner's host reads exactly as a
// host that does not exist, on create and on update.
func TestJumpHostForeignIsMissing(t *testing.T) {
	ctx := context.Background()
	svc, _ := newCountingService(t)
	mustCreate(t, svc, "usr_b")
	mustCreate(t, svc, "usr_b")
	mine := mustCreate(t, svc, "usr_a")
	// usr_b has hosts 1 and 2; usr_a has 1 only: 2 is usr_b's, 7 nobody's.
	for _, id := range []int64{2, 7} {
		_, err := svc.Create(ctx, "usr_a", hopsInput(t, mine, id))
		wantError(t, fmt.Sprintf("create naming host %d", id), err, sshdeck.Invalid, fmt.Sprintf("jumpHosts[1]: host %d not found", id))
		_, err = svc.Update(ctx, "usr_a", mine, hopsInput(t, id), nil)
		wantError(t, fmt.Sprintf("update naming host %d", id), err, sshdeck.Invalid, fmt.Sprintf("jumpHosts[0]: host %d not found", id))
	}
	// No id was spent by the refused creates.
	if id := mustCreate(t, svc, "usr_a"); id != 2 {
		t.Errorf("the next host is %d, want 2", id)
	}
}

func TestJumpHostSelf(t *testing.T) {
	ctx := context.Background()
	svc, _ := newCountingService(t)
	a := mustCreate(t, svc, "usr_a")
	_, err := svc.Update(ctx, "usr_a", a, hopsInput(t, a), nil)
	wantError(t, "a host its own hop", err, sshdeck.Invalid, "jumpHosts[0]: host 1 is this host; a host cannot be its own jump host")
	if r, _ := svc.Get(ctx, "usr_a", a); r.Version != 1 {
		t.Errorf("the refused update wrote: version %d", r.Version)
	}
}

func TestJumpHostCycles(t *testing.T) {
	ctx := context.Background()
	svc, _ := newCountingService(t)
	h1 := mustCreate(t, svc, "usr_a")
	h2 := mustCreate(t, svc, "usr_a", h1)
	h3 := mustCreate(t, svc, "usr_a", h2)
	// An update that introduces a 2-cycle: 1 → 2 → 1.
	_, err := svc.Update(ctx, "usr_a", h1, hopsInput(t, h2), nil)
	wantError(t, "2-cycle", err, sshdeck.Invalid, "jumpHosts[0]: a cycle: 1 → 2 → 1")
	// A 3-cycle through existing hosts, behind a good first hop.
	h4 := mustCreate(t, svc, "usr_a")
	_, err = svc.Update(ctx, "usr_a", h1, hopsInput(t, h4, h3), nil)
	wantError(t, "3-cycle", err, sshdeck.Invalid, "jumpHosts[1]: a cycle: 1 → 3 → 2 → 1")
	// The hops' chains sharing a host is no cycle: 5 [3, 2] passes 2
	// twice (3's route is 1, 2), as two ProxyJump hosts may share one.
	if _, err := svc.Create(ctx, "usr_a", hopsInput(t, h3, h2)); err != nil {
		t.Errorf("a diamond: %v", err)
	}
	for _, id := range []int64{h1, h2, h3} {
		if r, _ := svc.Get(ctx, "usr_a", id); r.Version != 1 {
			t.Errorf("host %d was written: version %d", id, r.Version)
		}
	}
}

func TestJumpHostDuplicate(t *testing.T) {
	ctx := context.Background()
	svc, store := newCountingService(t)
	a := mustCreate(t, svc, "usr_a")
	b := mustCreate(t, svc, "usr_a")
	clear(store.calls)
	_, err := svc.Create(ctx, "usr_a", hopsInput(t, a, b, a))
	wantError(t, "duplicate", err, sshdeck.Invalid, "jumpHosts[2]: host 1 is jumpHosts[0] already; a chain passes each host once")
	_, err = svc.Create(ctx, "usr_a", input(t, `{"jumpHosts":[{"hostId":0}]}`))
	wantError(t, "id 0", err, sshdeck.Invalid, "jumpHosts[0].hostId must be a positive host id")
	_, err = svc.Create(ctx, "usr_a", input(t, `{"jumpHosts":[{}]}`))
	wantError(t, "no id", err, sshdeck.Invalid, "jumpHosts[0].hostId must be a positive host id")
	if len(store.calls) != 0 {
		t.Errorf("a list bad on its own read the store: %v", store.calls)
	}
}

// TestJumpHostLimit: the route, the hops' own chains counted, has at most
// Limits.JumpHosts hops; each host of it is read once, and the walk stops
// at the limit.
func TestJumpHostLimit(t *testing.T) {
	ctx := context.Background()
	svc, store := newCountingService(t)
	svc.Limits.JumpHosts = 3
	const limitMsg = "limit of jump hosts per chain reached: the route to the host would pass more than 3 hosts, counting the jump hosts' own (SSHDECK_LIMIT_JUMP_HOSTS); shorten the chain"
	h1 := mustCreate(t, svc, "usr_a")
	h2 := mustCreate(t, svc, "usr_a", h1)
	h3 := mustCreate(t, svc, "usr_a", h2)
	clear(store.calls)
	h4 := mustCreate(t, svc, "usr_a", h3) // 3, 2, 1: at the limit
	if store.calls["Host"] != 3 {
		t.Errorf("a route of 3 hops read %d hosts, want 3", store.calls["Host"])
	}
	clear(store.calls)
	_, err := svc.Create(ctx, "usr_a", hopsInput(t, h4)) // 4, 3, 2, 1
	wantError(t, "a route of 4", err, sshdeck.LimitExceeded, limitMsg)
	if store.calls["Host"] != 3 {
		t.Errorf("a route past the limit read %d hosts, want 3 (the walk stops there)", store.calls["Host"])
	}
	// Hops' chains count where they are: [3, 1] is 2, 1, 3, 1.
	_, err = svc.Create(ctx, "usr_a", hopsInput(t, h3, h1))
	wantError(t, "a route of 4 through two hops", err, sshdeck.LimitExceeded, limitMsg)
	// A list longer than the limit is refused before any read.
	more := mustCreate(t, svc, "usr_a")
	clear(store.calls)
	_, err = svc.Update(ctx, "usr_a", more, hopsInput(t, 1, 2, 3, 4), nil)
	wantError(t, "a list of 4", err, sshdeck.LimitExceeded, limitMsg)
	if store.calls["Host"] != 1 { // the host updated
		t.Errorf("a list past the limit read %d hosts, want 1", store.calls["Host"])
	}
	// The default limit is 8.
	svc.Limits.JumpHosts = 0
	if got := svc.maxJumpHosts(); got != 8 {
		t.Errorf("default limit %d", got)
	}
}

// TestJumpHostDeleted: a hop may be deleted. The hosts that name it keep
// its id and are read and listed as before; saving one is 400 naming the
// missing hop until its list changes, and so is saving a host whose route
// passes it.
func TestJumpHostDeleted(t *testing.T) {
	ctx := context.Background()
	svc, _ := newCountingService(t)
	h1 := mustCreate(t, svc, "usr_a")
	h2 := mustCreate(t, svc, "usr_a", h1)
	h3 := mustCreate(t, svc, "usr_a", h2)
	if err := svc.Delete(ctx, "usr_a", h1, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := svc.Get(ctx, "usr_a", h2); err != nil || !slices.Equal(hopIDs(r.JumpHosts), []int64{h1}) {
		t.Fatalf("Get = %+v, %v", r, err)
	}
	if page, err := svc.Page(ctx, "usr_a", 0, 0); err != nil || len(page) != 2 || !slices.Equal(hopIDs(page[0].JumpHosts), []int64{h1}) {
		t.Fatalf("Page = %v, %v", page, err)
	}
	_, err := svc.Update(ctx, "usr_a", h2, hopsInput(t, h1), nil)
	wantError(t, "saving the host", err, sshdeck.Invalid, "jumpHosts[0]: host 1 not found")
	_, err = svc.Update(ctx, "usr_a", h3, hopsInput(t, h2), nil)
	wantError(t, "saving a host behind it", err, sshdeck.Invalid, "jumpHosts[0]: host 1, a jump host of host 2, not found")
	_, err = svc.Route(ctx, "usr_a", h3)
	wantError(t, "its route", err, sshdeck.Invalid, "host 3: jumpHosts[0]: host 1, a jump host of host 2, not found")
	// Fixed: saved without it.
	if _, err := svc.Update(ctx, "usr_a", h2, hopsInput(t), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Update(ctx, "usr_a", h3, hopsInput(t, h2), nil); err != nil {
		t.Fatal(err)
	}
}

// TestRoute: each hop is reached through its own jump hosts, in order,
// with its credentials.
func TestRoute(t *testing.T) {
	ctx := context.Background()
	svc, store := newCountingService(t)
	pw := "pw-c"
	a := mustCreate(t, svc, "usr_a")
	c, err := svc.Create(ctx, "usr_a", &Input{IP: "10.0.0.3", Username: "c", Password: &pw})
	if err != nil {
		t.Fatal(err)
	}
	b := mustCreate(t, svc, "usr_a", c.ID)
	x := mustCreate(t, svc, "usr_a", a, b)
	clear(store.calls)
	route, err := svc.Route(ctx, "usr_a", x)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range route {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []int64{a, c.ID, b}) || route[1].Password != "pw-c" {
		t.Fatalf("route %v (%+v), want [%d %d %d] with c's password", ids, route, a, c.ID, b)
	}
	if store.calls["Host"] != 4 {
		t.Errorf("Route read %d hosts, want 4 (the host and its 3 hops)", store.calls["Host"])
	}
	if route, err := svc.Route(ctx, "usr_a", a); err != nil || len(route) != 0 {
		t.Errorf("the route of a host without jump hosts: %v, %v", route, err)
	}
	if _, err := svc.Route(ctx, "usr_b", x); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Errorf("another owner's route: %v", err)
	}
}
