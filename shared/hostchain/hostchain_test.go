package hostchain_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// world is a store of hosts made by add.
type world struct {
	t     *testing.T
	store *embedded.Store
}

func newWorld(t *testing.T) *world {
	s, err := embedded.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &world{t: t, store: s}
}

// add stores the owner's next host, named name, with jump hosts jumps,
// and returns its id. The store keeps jump hosts as given: the rules are
// Check's, and these tests make broken routes on purpose.
func (w *world) add(owner, name string, jumps ...int64) int64 {
	ctx := context.Background()
	id, err := w.store.NextHostID(ctx, owner)
	if err != nil {
		w.t.Fatal(err)
	}
	h := &sshdeck.Host{Owner: owner, ID: id, Version: 1, HostConfig: sshdeck.HostConfig{Name: name, IP: "10.0.0.1", Port: 22, Username: "u", AuthType: sshdeck.AuthPassword}}
	for _, j := range jumps {
		h.JumpHosts = append(h.JumpHosts, sshdeck.JumpHost{HostID: j})
	}
	if err := w.store.CreateHost(ctx, h, 1000); err != nil {
		w.t.Fatal(err)
	}
	return id
}

// setJumps changes a stored host's jump hosts.
func (w *world) setJumps(owner string, id int64, jumps ...int64) {
	ctx := context.Background()
	h, err := w.store.Host(ctx, owner, id)
	if err != nil {
		w.t.Fatal(err)
	}
	h.JumpHosts = nil
	for _, j := range jumps {
		h.JumpHosts = append(h.JumpHosts, sshdeck.JumpHost{HostID: j})
	}
	h.Version++
	if err := w.store.UpdateHost(ctx, h); err != nil {
		w.t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	w := newWorld(t)
	web := w.add("usr_a", "web")
	db1 := w.add("usr_a", "db")
	db2 := w.add("usr_a", "db")
	// A host named like the id of another: the id wins.
	named := w.add("usr_a", strconv.FormatInt(web, 10))
	// A name that is a number no host of the owner has as id.
	seventySeven := w.add("usr_a", "77")
	other := w.add("usr_b", "theirs")
	r := &hostchain.Reader{Store: w.store}
	for _, tt := range []struct {
		ref    string
		owner  string
		id     int64
		code   sshdeck.Code
		reason string
	}{
		{ref: strconv.FormatInt(web, 10), owner: "usr_a", id: web},
		{ref: "web", owner: "usr_a", id: web},
		{ref: strconv.FormatInt(named, 10), owner: "usr_a", id: named},
		{ref: "77", owner: "usr_a", id: seventySeven},
		{ref: "db", owner: "usr_a", code: sshdeck.Invalid, reason: "2 of your hosts have this name (hosts " + strconv.FormatInt(db1, 10) + " and " + strconv.FormatInt(db2, 10) + "): name one by id"},
		{ref: "nothing", owner: "usr_a", code: sshdeck.NotFound, reason: "no host of yours has this name or id"},
		// Another owner's host, by id or name, is no host of the caller's;
		// and is not told to exist.
		{ref: strconv.FormatInt(other, 10) + "0", owner: "usr_a", code: sshdeck.NotFound},
		{ref: "theirs", owner: "usr_a", code: sshdeck.NotFound},
		{ref: "web", owner: "usr_b", code: sshdeck.NotFound},
		{ref: "0", owner: "usr_a", code: sshdeck.NotFound},
		{ref: "", owner: "usr_a", code: sshdeck.NotFound},
	} {
		h, err := r.Find(context.Background(), tt.owner, tt.ref)
		switch {
		case tt.code == "" && (err != nil || h.ID != tt.id):
			t.Errorf("Find(%s, %q) = %v, %v; want host %d", tt.owner, tt.ref, h, err, tt.id)
		case tt.code != "" && sshdeck.ErrorCode(err) != tt.code:
			t.Errorf("Find(%s, %q) = %v, %v; want %s", tt.owner, tt.ref, h, err, tt.code)
		case tt.reason != "" && sshdeck.ErrorMessage(err) != tt.reason:
			t.Errorf("Find(%s, %q): %q, want %q", tt.owner, tt.ref, sshdeck.ErrorMessage(err), tt.reason)
		}
	}
}

// TestFindPaged: a name is found on any page of the owner's hosts, and
// duplicates across pages are all named.
func TestFindPaged(t *testing.T) {
	w := newWorld(t)
	var firsts []int64
	for i := range 250 {
		id := w.add("usr_a", "h"+strconv.Itoa(i))
		if i == 3 || i == 150 {
			firsts = append(firsts, id)
		}
	}
	last := w.add("usr_a", "last")
	w.setJumps("usr_a", firsts[0]) // an update changes nothing of the name
	r := &hostchain.Reader{Store: w.store}
	if h, err := r.Find(context.Background(), "usr_a", "last"); err != nil || h.ID != last {
		t.Fatalf("Find(last) past two pages = %v, %v", h, err)
	}
	dup := w.add("usr_a", "h150")
	_, err := r.Find(context.Background(), "usr_a", "h150")
	if want := "hosts " + strconv.FormatInt(firsts[1], 10) + " and " + strconv.FormatInt(dup, 10); sshdeck.ErrorCode(err) != sshdeck.Invalid || !strings.Contains(err.Error(), want) {
		t.Fatalf("Find(h150) = %v, want Invalid naming %s", err, want)
	}
}

func TestRouteIDs(t *testing.T) {
	w := newWorld(t)
	a := w.add("usr_a", "a")
	c := w.add("usr_a", "c")
	b := w.add("usr_a", "b", c)
	x := w.add("usr_a", "x", a, b)
	y := w.add("usr_a", "y", a, b, c) // c twice on the route: each read once
	gone := w.add("usr_a", "gone-hop", 999)
	under := w.add("usr_a", "under", gone)
	p := w.add("usr_a", "p")
	q := w.add("usr_a", "q", p)
	w.setJumps("usr_a", p, q) // a cycle made behind Check's back
	// Ids are per owner: one of usr_b's that usr_a has none of.
	var theirs int64
	for range 20 {
		theirs = w.add("usr_b", "theirs")
	}
	foreign := w.add("usr_a", "foreign", theirs)
	r := &hostchain.Reader{Store: w.store}
	for _, tt := range []struct {
		name   string
		owner  string
		id     int64
		want   []int64
		code   sshdeck.Code
		reason string
	}{
		{name: "no jump hosts", owner: "usr_a", id: a, want: []int64{}},
		{name: "one hop", owner: "usr_a", id: b, want: []int64{c}},
		{name: "a hop's own route before it", owner: "usr_a", id: x, want: []int64{a, c, b}},
		{name: "a host twice on the route", owner: "usr_a", id: y, want: []int64{a, c, b, c}},
		{name: "a missing hop", owner: "usr_a", id: gone, code: sshdeck.Invalid, reason: "jumpHosts[0]: host 999 not found"},
		{name: "a hop's missing hop", owner: "usr_a", id: under, code: sshdeck.Invalid, reason: "jumpHosts[0]: host 999, a jump host of host " + strconv.FormatInt(gone, 10) + ", not found"},
		{name: "a cycle", owner: "usr_a", id: q, code: sshdeck.Invalid, reason: "a cycle"},
		{name: "another owner's hop", owner: "usr_a", id: foreign, code: sshdeck.Invalid, reason: "not found"},
		{name: "another owner's host", owner: "usr_c", id: x, code: sshdeck.NotFound},
		{name: "no such host", owner: "usr_a", id: 12345, code: sshdeck.NotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.RouteIDs(context.Background(), tt.owner, tt.id)
			switch {
			case tt.code == "" && (err != nil || !slices.Equal(got, tt.want)):
				t.Fatalf("RouteIDs = %v, %v; want %v", got, err, tt.want)
			case tt.code != "" && sshdeck.ErrorCode(err) != tt.code:
				t.Fatalf("RouteIDs = %v, %v; want %s", got, err, tt.code)
			case !strings.Contains(sshdeck.ErrorMessage(err), tt.reason):
				t.Fatalf("RouteIDs: %v, want %q in it", err, tt.reason)
			}
		})
	}
	// The limit of hops counts the hops' own.
	short := &hostchain.Reader{Store: w.store, Max: 2}
	if _, err := short.RouteIDs(context.Background(), "usr_a", x); sshdeck.ErrorCode(err) != sshdeck.LimitExceeded {
		t.Fatalf("RouteIDs of 3 hops at a limit of 2 = %v, want LimitExceeded", err)
	}
}
