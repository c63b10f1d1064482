package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// fullHost returns a version-1 host with every field set; seed makes the
// values differ between hosts.
func fullHost(owner string, id int64, seed int) *sshdeck.Host {
	return &sshdeck.Host{
		Owner:   owner,
		ID:      id,
		Version: 1,
		HostConfig: sshdeck.HostConfig{
			Name:              fmt.Sprintf("web-%d", seed),
			IP:                fmt.Sprintf("10.0.%d.%d", seed/256, seed%256),
			Port:              2200 + seed,
			Username:          fmt.Sprintf("deploy%d", seed),
			Folder:            "prod/eu",
			Tags:              []string{"prod", fmt.Sprintf("t%d", seed)},
			Pin:               true,
			AuthType:          sshdeck.AuthKey,
			KeyType:           "ssh-ed25519",
			EnableTerminal:    true,
			EnableTunnel:      true,
			EnableFileManager: true,
			DefaultPath:       "/srv",
			TunnelConnections: []sshdeck.TunnelConnection{
				{SourcePort: 8000 + seed, EndpointPort: 80, EndpointHost: "db.internal", MaxRetries: 3, RetryInterval: 10, AutoStart: true},
				{SourcePort: 9000 + seed, EndpointPort: 5432, EndpointHost: "10.1.0.7"},
			},
			// Ids as the store keeps them, whether or not such hosts
			// exist (the rules above the store check that): in the
			// chain's order, which is not theirs, one past 32 bits.
			JumpHosts:    []sshdeck.JumpHost{{HostID: int64(300 + seed)}, {HostID: 1<<40 + int64(seed)}, {HostID: int64(seed%7 + 1)}},
			IdentityFile: fmt.Sprintf("~/.ssh/id_ed25519 web-%d", seed),
		},
		// Bytes that a store converting through text would mangle.
		Sealed: sshdeck.SealedCredentials{
			Password:    []byte{0x00, 0xff, 0x80, byte(seed)},
			Key:         []byte(fmt.Sprintf("sealed-key-%d\x00\xfe", seed)),
			KeyPassword: []byte{0xde, 0xad, byte(seed)},
		},
		CreatedAt: base.Add(time.Duration(seed) * time.Hour),
		UpdatedAt: base.Add(time.Duration(seed)*time.Hour + 1500*time.Millisecond),
	}
}

// edited returns h at its next version with every field changed.
func edited(h *sshdeck.Host) *sshdeck.Host {
	e := fullHost(h.Owner, h.ID, 1000+int(h.ID))
	e.Version = h.Version + 1
	e.Pin, e.EnableTerminal, e.EnableTunnel, e.EnableFileManager = false, false, false, false
	e.AuthType, e.KeyType = sshdeck.AuthPassword, ""
	e.Tags = []string{"staging"}
	e.TunnelConnections = e.TunnelConnections[1:]
	e.JumpHosts = []sshdeck.JumpHost{e.JumpHosts[2], e.JumpHosts[0]}
	e.Sealed.Key, e.Sealed.KeyPassword = nil, nil
	e.IdentityFile = ""
	e.CreatedAt = h.CreatedAt
	e.UpdatedAt = h.UpdatedAt.Add(time.Minute)
	return e
}

// sameHost treats nil and empty slices alike: a store may return either.
func sameHost(t *testing.T, got, want *sshdeck.Host, what string) {
	t.Helper()
	same(t, got, want, func(h *sshdeck.Host) {
		h.CreatedAt, h.UpdatedAt = ms(h.CreatedAt), ms(h.UpdatedAt)
		if len(h.Tags) == 0 {
			h.Tags = nil
		}
		if len(h.TunnelConnections) == 0 {
			h.TunnelConnections = nil
		}
		if len(h.JumpHosts) == 0 {
			h.JumpHosts = nil
		}
		for _, b := range []*[]byte{&h.Sealed.Password, &h.Sealed.Key, &h.Sealed.KeyPassword} {
			if len(*b) == 0 {
				*b = nil
			}
		}
	}, what)
}

func nextID(t *testing.T, s sshdeck.Store, owner string) int64 {
	t.Helper()
	id, err := s.NextHostID(t.Context(), owner)
	must(t, err, "NextHostID")
	return id
}

// createHost allocates an id and stores a full host under it.
func createHost(t *testing.T, s sshdeck.Store, owner string, seed int) *sshdeck.Host {
	t.Helper()
	h := fullHost(owner, nextID(t, s, owner), seed)
	must(t, s.CreateHost(t.Context(), h, maxHosts), "CreateHost")
	return h
}

func getHost(t *testing.T, s sshdeck.Store, owner string, id int64) *sshdeck.Host {
	t.Helper()
	h, err := s.Host(t.Context(), owner, id)
	must(t, err, fmt.Sprintf("Host(%s, %d)", owner, id))
	return h
}

func listHosts(t *testing.T, s sshdeck.Store, owner string) []*sshdeck.Host {
	t.Helper()
	hs, err := s.Hosts(t.Context(), owner, 0, 0)
	must(t, err, "Hosts")
	if hs == nil {
		t.Fatalf("Hosts(%s): got nil, want a non-nil slice", owner)
	}
	return hs
}

func testHostIDsPerOwner(t *testing.T, s sshdeck.Store) {
	var prev int64
	for i := range 3 {
		id := nextID(t, s, "alice")
		if (i == 0 && id != 1) || id <= prev {
			t.Fatalf("NextHostID(alice) #%d: got %d after %d", i+1, id, prev)
		}
		prev = id
	}
	if id := nextID(t, s, "bob"); id != 1 {
		t.Fatalf("NextHostID(bob) after alice's: got %d, want 1", id)
	}
	if id := nextID(t, s, "alice"); id <= prev {
		t.Fatalf("NextHostID(alice) after bob's: got %d after %d", id, prev)
	}
}

func testHostIDsNeverReused(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	a := createHost(t, s, "alice", 1)
	b := createHost(t, s, "alice", 2)
	must(t, s.DeleteHost(ctx, "alice", b.ID, 0), "DeleteHost")
	c := nextID(t, s, "alice")
	if c <= b.ID {
		t.Fatalf("NextHostID after deleting host %d: got %d", b.ID, c)
	}
	// Emptying the owner must not restart the ids either.
	must(t, s.DeleteHost(ctx, "alice", a.ID, 0), "DeleteHost")
	if d := nextID(t, s, "alice"); d <= c {
		t.Fatalf("NextHostID with no hosts left: got %d after %d", d, c)
	}
}

func testHostRoundTrip(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	h := createHost(t, s, "alice", 7)
	sameHost(t, getHost(t, s, "alice", h.ID), h, "Host after create")
	hs := listHosts(t, s, "alice")
	if len(hs) != 1 {
		t.Fatalf("Hosts: got %d hosts, want 1", len(hs))
	}
	sameHost(t, hs[0], h, "Hosts[0] after create")

	e := edited(h)
	must(t, s.UpdateHost(ctx, e), "UpdateHost")
	sameHost(t, getHost(t, s, "alice", h.ID), e, "Host after update")
	sameHost(t, listHosts(t, s, "alice")[0], e, "Hosts[0] after update")

	must(t, s.DeleteHost(ctx, "alice", h.ID, e.Version), "DeleteHost")
	_, err := s.Host(ctx, "alice", h.ID)
	wantCode(t, err, sshdeck.NotFound, "Host after delete")
	if hs := listHosts(t, s, "alice"); len(hs) != 0 {
		t.Fatalf("Hosts after delete: got %d hosts", len(hs))
	}
}

func testHostCreateConflict(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	dup := fullHost("alice", h.ID, 2)
	wantCode(t, s.CreateHost(t.Context(), dup, maxHosts), sshdeck.Conflict, "CreateHost with an existing id")
	sameHost(t, getHost(t, s, "alice", h.ID), h, "Host after the refused create")
}

func testHostCreateInvalid(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	id := nextID(t, s, "alice")
	for name, h := range map[string]*sshdeck.Host{
		"no owner":  fullHost("", id, 1),
		"no id":     fullHost("alice", 0, 1),
		"version 0": func() *sshdeck.Host { h := fullHost("alice", id, 1); h.Version = 0; return h }(),
		"version 2": func() *sshdeck.Host { h := fullHost("alice", id, 1); h.Version = 2; return h }(),
	} {
		if err := s.CreateHost(ctx, h, maxHosts); err == nil {
			t.Errorf("CreateHost with %s: no error", name)
		}
	}
	if hs := listHosts(t, s, "alice"); len(hs) != 0 {
		t.Fatalf("Hosts after invalid creates: got %d hosts", len(hs))
	}
}

func testHostsOrderedByID(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	// 20 ids: ordering their decimal text would put 10 before 2.
	want := make([]*sshdeck.Host, 20)
	for i := range want {
		want[i] = fullHost("alice", nextID(t, s, "alice"), i)
	}
	for _, i := range []int{3, 19, 0, 11, 1, 10, 2, 9, 18, 4, 12, 5, 17, 6, 13, 7, 16, 8, 15, 14} {
		must(t, s.CreateHost(ctx, want[i], maxHosts), "CreateHost")
	}
	got := listHosts(t, s, "alice")
	if len(got) != len(want) {
		t.Fatalf("Hosts: got %d hosts, want %d", len(got), len(want))
	}
	for i := range want {
		sameHost(t, got[i], want[i], fmt.Sprintf("Hosts[%d]", i))
	}
}

// testHostsPaged walks an owner's hosts a page at a time: each page holds
// the ids after the one given, in order, up to the limit; the last is
// short, and a page past the end is empty. Another owner's hosts, and ids
// deleted in between, never show.
func testHostsPaged(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	var want []int64
	for i := range 11 {
		want = append(want, createHost(t, s, "alice", i).ID)
		createHost(t, s, "bob", i)
	}
	must(t, s.DeleteHost(ctx, "alice", want[4], 0), "DeleteHost")
	want = append(want[:4], want[5:]...)
	for _, limit := range []int{1, 3, 10, 11} {
		var got []int64
		after := int64(0)
		for pages := 0; ; pages++ {
			if pages > len(want) {
				t.Fatalf("limit %d: the pages never end", limit)
			}
			page, err := s.Hosts(ctx, "alice", after, limit)
			must(t, err, "Hosts")
			if len(page) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(page))
			}
			for _, h := range page {
				got = append(got, h.ID)
			}
			if len(page) < limit {
				break
			}
			after = page[len(page)-1].ID
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("limit %d: pages hold ids %v, want %v", limit, got, want)
		}
	}
	if page, err := s.Hosts(ctx, "alice", want[len(want)-1], 5); err != nil || len(page) != 0 {
		t.Errorf("the page after the last host: %d hosts, %v", len(page), err)
	}
	if page, err := s.Hosts(ctx, "carol", 0, 5); err != nil || page == nil || len(page) != 0 {
		t.Errorf("an owner without hosts: %v, %v; want an empty page", page, err)
	}
}

// testHostCopies checks that neither the stored record nor another caller's
// copy shares memory with what a caller holds.
func testHostCopies(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	want := fullHost("alice", h.ID, 1)
	mutate := func(h *sshdeck.Host) {
		h.Name = "mutated"
		h.Tags[0] = "mutated"
		h.TunnelConnections[0].SourcePort = 1
		h.Sealed.Password[0] = 0x42
		h.CreatedAt = time.Time{}
	}
	mutate(h)
	sameHost(t, getHost(t, s, "alice", h.ID), want, "Host after mutating the created host")
	mutate(getHost(t, s, "alice", h.ID))
	sameHost(t, getHost(t, s, "alice", h.ID), want, "Host after mutating a returned host")
	mutate(listHosts(t, s, "alice")[0])
	sameHost(t, listHosts(t, s, "alice")[0], want, "Hosts after mutating a listed host")
}

// testHostEmptyCollections stores hosts as the service makes most of them:
// no tags, no tunnel connections, no credentials. Each comes back with
// nothing in their place (nil or empty), listed next to a full host whose
// values must not leak into them.
func testHostEmptyCollections(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	full := createHost(t, s, "alice", 1)
	bare := fullHost("alice", nextID(t, s, "alice"), 2)
	bare.Tags, bare.TunnelConnections, bare.Sealed = []string{}, []sshdeck.TunnelConnection{}, sshdeck.SealedCredentials{}
	must(t, s.CreateHost(ctx, bare, maxHosts), "CreateHost")
	sameHost(t, getHost(t, s, "alice", bare.ID), bare, "Host of the bare host")
	hs := listHosts(t, s, "alice")
	if len(hs) != 2 {
		t.Fatalf("Hosts: got %d hosts, want 2", len(hs))
	}
	sameHost(t, hs[0], full, "listed full host")
	sameHost(t, hs[1], bare, "listed bare host")
	// And back: an update that empties a full host's collections.
	emptied := edited(full)
	emptied.Tags, emptied.TunnelConnections, emptied.Sealed = nil, nil, sshdeck.SealedCredentials{}
	must(t, s.UpdateHost(ctx, emptied), "UpdateHost")
	sameHost(t, getHost(t, s, "alice", full.ID), emptied, "Host after emptying")
}
