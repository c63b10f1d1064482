package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// fullTunnel returns a generation-1 tunnel with every field but the lease
// set (PutTunnel does not write it); seed makes the values differ.
func fullTunnel(owner, name string, seed int) *sshdeck.Tunnel {
	return &sshdeck.Tunnel{
		Owner:      owner,
		Name:       name,
		Generation: 1,
		Spec: sshdeck.TunnelSpec{
			HostName: fmt.Sprintf("web-%d", seed),
			Jumps: []sshdeck.TunnelHop{
				{IP: "bastion.example.com", SSHPort: 2222, Username: fmt.Sprintf("jump%d", seed), Auth: sshdeck.AuthPassword, KeyType: "auto", HostID: int64(10 + seed)},
				{IP: fmt.Sprintf("10.1.%d.%d", seed/256, seed%256), SSHPort: 22, Username: "hop", Auth: sshdeck.AuthKey, KeyType: "ssh-rsa", HostKey: fmt.Sprintf("SHA256:jump-%d", seed)},
			},
			Source: sshdeck.TunnelHop{
				IP: fmt.Sprintf("10.0.%d.%d", seed/256, seed%256), SSHPort: 22, Username: fmt.Sprintf("deploy%d", seed),
				Auth: sshdeck.AuthKey, KeyType: "ssh-ed25519", HostKey: fmt.Sprintf("SHA256:source-%d", seed),
				HostID: int64(20 + seed),
			},
			Endpoint: sshdeck.TunnelHop{
				IP: "203.0.113.7", SSHPort: 2200 + seed, Username: "tunnel",
				Auth: sshdeck.AuthPassword, KeyType: "auto", HostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE endpoint",
				HostID: int64(30 + seed),
			},
			SourcePort:    8000 + seed,
			EndpointPort:  9000 + seed,
			MaxRetries:    3 + seed,
			RetryInterval: 5*time.Second + time.Duration(seed)*time.Millisecond,
			AutoStart:     true,
			IsPinned:      true,
			// A store keeps references and hops alike, whatever the
			// tunnel service makes of both.
			SourceHostID:   int64(40 + seed),
			EndpointHostID: int64(50 + seed),
			EndpointHost:   fmt.Sprintf("db-%d", seed),
			HostTunnel:     true,
			Mode:           sshdeck.TunnelDirect,
		},
		// Bytes that a store converting through text would mangle.
		Sealed: sshdeck.SealedTunnelCredentials{
			Jumps: []sshdeck.SealedCredentials{
				{Password: []byte{0x02, byte(seed), 0xff}},
				{Key: fmt.Appendf(nil, "sealed-jump-key-%d\x00", seed), KeyPassword: []byte{0x00, byte(seed)}},
			},
			Source: sshdeck.SealedCredentials{
				Password: []byte{0x00, 0xff, 0x80, byte(seed)}, Key: fmt.Appendf(nil, "sealed-key-%d\x00\xfe", seed), KeyPassword: []byte{0xde, 0xad, byte(seed)},
			},
			Endpoint: sshdeck.SealedCredentials{
				Password: []byte{0x01, byte(seed), 0x00}, Key: []byte{0xfe, 0xed}, KeyPassword: []byte{0xbe, 0xef, byte(seed)},
			},
		},
		Run: true,
		Status: sshdeck.TunnelStatus{
			State:            sshdeck.TunnelWaiting,
			RetryCount:       2,
			NextRetryAt:      base.Add(time.Duration(seed)*time.Hour + 5*time.Second),
			Reason:           fmt.Sprintf("dial tcp 203.0.113.7:%d: connection refused", 2200+seed),
			Error:            sshdeck.TunnelErrNetwork,
			RetryExhausted:   true,
			ManualDisconnect: true,
			UpdatedAt:        base.Add(time.Duration(seed)*time.Hour + time.Second),
			// Counts past 32 bits, as a busy tunnel's bytes soon are.
			ConnectedAt:       base.Add(time.Duration(seed)*time.Hour + 700*time.Millisecond),
			BytesIn:           5<<40 + int64(seed),
			BytesOut:          3<<33 + int64(seed),
			ActiveConnections: 16 + seed,
			Reconnects:        4 + seed,
			LastError:         fmt.Sprintf("endpoint 203.0.113.7:%d: the connection closed", 2200+seed),
		},
		CreatedAt: base.Add(time.Duration(seed) * time.Hour),
		UpdatedAt: base.Add(time.Duration(seed)*time.Hour + 1500*time.Millisecond),
	}
}

// nextTunnel returns t at its next generation with every field changed:
// Run cleared, a status with nothing optional, some credentials gone (not
// all of them: see testTunnelEmptyCredentials), a jump host fewer, the
// endpoint's host id gone (given inline), and no reference to a stored host.
func nextTunnel(t *sshdeck.Tunnel) *sshdeck.Tunnel {
	n := fullTunnel(t.Owner, t.Name, 1000+int(t.Generation))
	n.Generation = t.Generation + 1
	n.Spec.Jumps, n.Sealed.Jumps = n.Spec.Jumps[1:], n.Sealed.Jumps[1:]
	n.Spec.Source.HostKey, n.Spec.AutoStart, n.Spec.IsPinned = "", false, false
	n.Spec.Endpoint.HostID = 0
	n.Spec.SourceHostID, n.Spec.EndpointHostID, n.Spec.EndpointHost, n.Spec.HostTunnel = 0, 0, "", false
	n.Spec.Mode = ""
	n.Sealed.Source.Key, n.Sealed.Source.KeyPassword = nil, nil
	n.Sealed.Endpoint = sshdeck.SealedCredentials{}
	n.Run = false
	n.Status = sshdeck.TunnelStatus{State: sshdeck.TunnelDisconnected, ManualDisconnect: true, UpdatedAt: t.UpdatedAt.Add(time.Minute)}
	n.CreatedAt = t.CreatedAt
	n.UpdatedAt = t.UpdatedAt.Add(time.Minute)
	return n
}

// sameTunnel compares times to the millisecond and treats nil and empty
// credentials, and nil and empty lists of jump hosts, alike: a store may
// return either.
func sameTunnel(t *testing.T, got, want *sshdeck.Tunnel, what string) {
	t.Helper()
	same(t, got, want, func(x *sshdeck.Tunnel) {
		x.CreatedAt, x.UpdatedAt = ms(x.CreatedAt), ms(x.UpdatedAt)
		x.Status.NextRetryAt, x.Status.UpdatedAt = ms(x.Status.NextRetryAt), ms(x.Status.UpdatedAt)
		x.Status.ConnectedAt = ms(x.Status.ConnectedAt)
		x.Lease.Until = ms(x.Lease.Until)
		// Not in place: the lists are the caller's.
		x.Spec.Jumps, x.Sealed.Jumps = slices.Clone(x.Spec.Jumps), slices.Clone(x.Sealed.Jumps)
		if len(x.Spec.Jumps) == 0 {
			x.Spec.Jumps = nil
		}
		if len(x.Sealed.Jumps) == 0 {
			x.Sealed.Jumps = nil
		}
		creds := []*sshdeck.SealedCredentials{&x.Sealed.Source, &x.Sealed.Endpoint}
		for i := range x.Sealed.Jumps {
			creds = append(creds, &x.Sealed.Jumps[i])
		}
		for _, c := range creds {
			for _, b := range []*[]byte{&c.Password, &c.Key, &c.KeyPassword} {
				if len(*b) == 0 {
					*b = nil
				}
			}
		}
	}, what)
}

func sameTunnels(t *testing.T, got, want []*sshdeck.Tunnel, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d tunnels %v, want %d %v", what, len(got), tunnelNames(got), len(want), tunnelNames(want))
	}
	for i := range want {
		sameTunnel(t, got[i], want[i], fmt.Sprintf("%s[%d]", what, i))
	}
}

func tunnelNames(ts []*sshdeck.Tunnel) []string {
	var names []string
	for _, x := range ts {
		names = append(names, x.Owner+"/"+x.Name)
	}
	return names
}

func putTunnel(t *testing.T, s sshdeck.Store, x *sshdeck.Tunnel) {
	t.Helper()
	must(t, s.PutTunnel(t.Context(), x), fmt.Sprintf("PutTunnel(%s, %q, generation %d)", x.Owner, x.Name, x.Generation))
}

func getTunnel(t *testing.T, s sshdeck.Store, owner, name string) *sshdeck.Tunnel {
	t.Helper()
	x, err := s.Tunnel(t.Context(), owner, name)
	must(t, err, fmt.Sprintf("Tunnel(%s, %q)", owner, name))
	return x
}

func listTunnels(t *testing.T, s sshdeck.Store, owner string) []*sshdeck.Tunnel {
	t.Helper()
	ts, err := s.Tunnels(t.Context(), owner)
	must(t, err, "Tunnels("+owner+")")
	if ts == nil {
		t.Fatalf("Tunnels(%s): got nil, want a non-nil slice", owner)
	}
	return ts
}

func runnable(t *testing.T, s sshdeck.Store) []*sshdeck.Tunnel {
	t.Helper()
	ts, err := s.RunnableTunnels(t.Context())
	must(t, err, "RunnableTunnels")
	if ts == nil {
		t.Fatal("RunnableTunnels: got nil, want a non-nil slice")
	}
	return ts
}

// byOwnerAndName is the order of RunnableTunnels (and, within an owner, of
// Tunnels): the strings' byte order.
func byOwnerAndName(a, b *sshdeck.Tunnel) int {
	return cmp.Or(strings.Compare(a.Owner, b.Owner), strings.Compare(a.Name, b.Name))
}

func testTunnelRoundTrip(t *testing.T, s sshdeck.Store) {
	x := fullTunnel("usr_a", "db", 7)
	putTunnel(t, s, x)
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), x, "Tunnel after create")
	sameTunnels(t, listTunnels(t, s, "usr_a"), []*sshdeck.Tunnel{x}, "Tunnels after create")
	sameTunnels(t, runnable(t, s), []*sshdeck.Tunnel{x}, "RunnableTunnels after create")

	n := nextTunnel(x)
	putTunnel(t, s, n)
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), n, "Tunnel after replacing")
	sameTunnels(t, listTunnels(t, s, "usr_a"), []*sshdeck.Tunnel{n}, "Tunnels after replacing")
	sameTunnels(t, runnable(t, s), nil, "RunnableTunnels after clearing Run")
}

// testTunnelPutGeneration: a put lands only on the generation before its
// own, 0 being an absent tunnel.
func testTunnelPutGeneration(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	for _, gen := range []int64{0, 2, -1} {
		x := fullTunnel("usr_a", "db", 1)
		x.Generation = gen
		wantCode(t, s.PutTunnel(ctx, x), sshdeck.Conflict, fmt.Sprintf("PutTunnel at generation %d of an absent tunnel", gen))
	}
	_, err := s.Tunnel(ctx, "usr_a", "db")
	wantCode(t, err, sshdeck.NotFound, "Tunnel after the refused creates")

	x := fullTunnel("usr_a", "db", 1)
	putTunnel(t, s, x)
	wantCode(t, s.PutTunnel(ctx, fullTunnel("usr_a", "db", 2)), sshdeck.Conflict, "PutTunnel at generation 1 of an existing tunnel")
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), x, "Tunnel after the refused create")

	g2 := nextTunnel(x)
	putTunnel(t, s, g2)
	for _, gen := range []int64{0, 1, 2, 4} {
		stale := fullTunnel("usr_a", "db", 99)
		stale.Generation = gen
		wantCode(t, s.PutTunnel(ctx, stale), sshdeck.Conflict, fmt.Sprintf("PutTunnel at generation %d of a tunnel at 2", gen))
	}
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), g2, "Tunnel after the refused puts")
	g3 := nextTunnel(g2)
	g3.Run = true
	putTunnel(t, s, g3)
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), g3, "Tunnel at generation 3")
}

// testTunnelPutNeedsOwnerAndName: such a put is a programming error.
func testTunnelPutNeedsOwnerAndName(t *testing.T, s sshdeck.Store) {
	for what, x := range map[string]*sshdeck.Tunnel{
		"no owner": fullTunnel("", "db", 1),
		"no name":  fullTunnel("usr_a", "", 1),
	} {
		if err := s.PutTunnel(t.Context(), x); err == nil {
			t.Errorf("PutTunnel with %s: no error", what)
		}
	}
	sameTunnels(t, listTunnels(t, s, "usr_a"), nil, "Tunnels after the refused puts")
	sameTunnels(t, runnable(t, s), nil, "RunnableTunnels after the refused puts")
}

func testTunnelNotFound(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	check := func(owner, name string) {
		t.Helper()
		what := fmt.Sprintf("(%s, %q)", owner, name)
		_, err := s.Tunnel(ctx, owner, name)
		wantCode(t, err, sshdeck.NotFound, "Tunnel"+what)
		st := &sshdeck.TunnelStatus{State: sshdeck.TunnelConnected, UpdatedAt: base}
		wantCode(t, s.SetTunnelStatus(ctx, owner, name, 1, "replica-1", st), sshdeck.NotFound, "SetTunnelStatus"+what)
		_, err = s.AcquireTunnelLease(ctx, owner, name, "replica-1", base, base.Add(time.Minute))
		wantCode(t, err, sshdeck.NotFound, "AcquireTunnelLease"+what)
		must(t, s.ReleaseTunnelLease(ctx, owner, name, "replica-1"), "ReleaseTunnelLease"+what)
	}
	check("usr_nobody", "db") // an owner who never had a tunnel
	putTunnel(t, s, fullTunnel("usr_a", "db", 1))
	check("usr_a", "db2")
	check("usr_a", "d")
	sameTunnels(t, listTunnels(t, s, "usr_nobody"), nil, "Tunnels(usr_nobody)")
	// Nothing above may have created the tunnels it looked for.
	sameTunnels(t, runnable(t, s), []*sshdeck.Tunnel{fullTunnel("usr_a", "db", 1)}, "RunnableTunnels")
}

// testTunnelOwnerIsolation: a name is unique within its owner only, and
// every method is scoped to the owner.
func testTunnelOwnerIsolation(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	a := fullTunnel("usr_a", "db", 1)
	a2 := fullTunnel("usr_a", "web", 2)
	b := fullTunnel("usr_b", "db", 3)
	for _, x := range []*sshdeck.Tunnel{a, a2, b} {
		putTunnel(t, s, x)
	}
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), a, "usr_a's db")
	sameTunnel(t, getTunnel(t, s, "usr_b", "db"), b, "usr_b's db")
	sameTunnels(t, listTunnels(t, s, "usr_a"), []*sshdeck.Tunnel{a, a2}, "Tunnels(usr_a)")
	sameTunnels(t, listTunnels(t, s, "usr_b"), []*sshdeck.Tunnel{b}, "Tunnels(usr_b)")

	_, err := s.Tunnel(ctx, "usr_b", "web")
	wantCode(t, err, sshdeck.NotFound, "usr_b's Tunnel of usr_a's name")
	_, err = s.AcquireTunnelLease(ctx, "usr_b", "web", "replica-1", base, base.Add(time.Minute))
	wantCode(t, err, sshdeck.NotFound, "usr_b's AcquireTunnelLease of usr_a's name")

	// The same name's lease and generation are the owner's own.
	_, err = s.AcquireTunnelLease(ctx, "usr_a", "db", "replica-1", base, base.Add(time.Minute))
	must(t, err, "AcquireTunnelLease(usr_a, db)")
	_, err = s.AcquireTunnelLease(ctx, "usr_b", "db", "replica-2", base, base.Add(time.Minute))
	must(t, err, "AcquireTunnelLease(usr_b, db) while usr_a's db is leased")
	st := &sshdeck.TunnelStatus{State: sshdeck.TunnelConnected, UpdatedAt: base}
	wantCode(t, s.SetTunnelStatus(ctx, "usr_b", "db", 1, "replica-1", st), sshdeck.Conflict, "SetTunnelStatus by usr_a's db's holder on usr_b's db")
	putTunnel(t, s, nextTunnel(b))
	must(t, s.SetTunnelStatus(ctx, "usr_a", "db", 1, "replica-1", st), "SetTunnelStatus(usr_a, db) at 1 after usr_b's db went to 2")

	steal := nextTunnel(a)
	steal.Owner = "usr_b"
	wantCode(t, s.PutTunnel(ctx, steal), sshdeck.Conflict, "usr_b's PutTunnel at generation 2 of usr_a's name")
	_, err = s.Tunnel(ctx, "usr_b", "web")
	wantCode(t, err, sshdeck.NotFound, "usr_b's web after the refused put")
}

// oddTunnelNames are names as a client may choose them (1..128 characters of
// anything), several of them the start of others, and with the characters
// a store might use as a separator.
var oddTunnelNames = []string{
	"b", "b#", "b#c", "b#c#d", "b/c", "b c", "b.c", "b\x00c", "#", "##", "/", " ", "B", "bc",
	"ünïcødé 隧道 🚇", strings.Repeat("n", 128), strings.Repeat("é", 127) + "🚇",
}

// testTunnelNames: every odd name is its own tunnel, listed in byte order,
// and an owner's list holds none of another owner's whose id starts with
// the first's.
func testTunnelNames(t *testing.T, s sshdeck.Store) {
	var want []*sshdeck.Tunnel
	for i, name := range oddTunnelNames {
		x := fullTunnel("usr_a", name, i)
		putTunnel(t, s, x)
		want = append(want, x)
	}
	others := []*sshdeck.Tunnel{
		fullTunnel("usr_ab", "b", 100), fullTunnel("usr_", "a#b", 101), fullTunnel("usr_", "ab", 102), fullTunnel("usr_a b", "c", 103),
	}
	for _, x := range others {
		putTunnel(t, s, x)
	}
	for _, x := range want {
		sameTunnel(t, getTunnel(t, s, x.Owner, x.Name), x, fmt.Sprintf("Tunnel(%s, %q)", x.Owner, x.Name))
	}
	_, err := s.Tunnel(t.Context(), "usr_a", "b#c#")
	wantCode(t, err, sshdeck.NotFound, "Tunnel of a name that only starts others")
	slices.SortFunc(want, byOwnerAndName)
	sameTunnels(t, listTunnels(t, s, "usr_a"), want, "Tunnels(usr_a)")
	sameTunnels(t, listTunnels(t, s, "usr_"), []*sshdeck.Tunnel{others[1], others[2]}, "Tunnels(usr_)")
	sameTunnels(t, listTunnels(t, s, "usr_ab"), others[:1], "Tunnels(usr_ab)")
	sameTunnels(t, listTunnels(t, s, "usr_a b"), others[3:], "Tunnels(usr_a b)")
	sameTunnels(t, listTunnels(t, s, "usr"), nil, "Tunnels(usr)")
	// By owner then name, also where an owner's id followed by the separator
	// of a store's key would sort otherwise ("usr_a b" before "usr_a#").
	all := append(slices.Clone(want), others...)
	slices.SortFunc(all, byOwnerAndName)
	sameTunnels(t, runnable(t, s), all, "RunnableTunnels")
}

// testTunnelsOrderedByName: names in byte order, not creation order.
func testTunnelsOrderedByName(t *testing.T, s sshdeck.Store) {
	want := make([]*sshdeck.Tunnel, 20)
	for i := range want {
		want[i] = fullTunnel("usr_a", fmt.Sprintf("t%d", i), i)
	}
	for _, i := range []int{3, 19, 0, 11, 1, 10, 2, 9, 18, 4, 12, 5, 17, 6, 13, 7, 16, 8, 15, 14} {
		putTunnel(t, s, want[i])
	}
	slices.SortFunc(want, byOwnerAndName) // t0 t1 t10 t11 ... t19 t2 t3 ...
	sameTunnels(t, listTunnels(t, s, "usr_a"), want, "Tunnels")
}

// testTunnelRunnable: every owner's tunnels with Run set, by owner then
// name, whatever their state or lease.
func testTunnelRunnable(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	var want []*sshdeck.Tunnel
	for i, on := range []struct {
		owner, name string
		run         bool
	}{
		{"usr_b", "web", true}, {"usr_a", "web", false}, {"usr_ab", "a", true}, {"usr_a", "z", true},
		{"usr_a", "db", true}, {"usr_c", "db", false}, {"usr_b", "api", true}, {"usr_a", "y#1", true},
	} {
		x := fullTunnel(on.owner, on.name, i)
		x.Run = on.run
		if i%2 == 0 {
			x.Status = sshdeck.TunnelStatus{State: sshdeck.TunnelFailed, RetryExhausted: true, UpdatedAt: base}
		}
		putTunnel(t, s, x)
		if on.run {
			want = append(want, x)
		}
	}
	// A lease changes nothing: replicas take over expired ones from the list.
	_, err := s.AcquireTunnelLease(ctx, "usr_b", "web", "replica-1", base, base.Add(time.Minute))
	must(t, err, "AcquireTunnelLease")
	want[0].Lease = sshdeck.TunnelLease{Holder: "replica-1", Until: base.Add(time.Minute)}
	slices.SortFunc(want, byOwnerAndName)
	sameTunnels(t, runnable(t, s), want, "RunnableTunnels")

	// Clearing Run (disconnect) takes a tunnel out; setting it brings one in.
	off := nextTunnel(getTunnel(t, s, "usr_a", "db"))
	putTunnel(t, s, off)
	on := nextTunnel(getTunnel(t, s, "usr_c", "db"))
	on.Run = true
	putTunnel(t, s, on)
	want = slices.DeleteFunc(want, func(x *sshdeck.Tunnel) bool { return x.Owner == "usr_a" && x.Name == "db" })
	want = append(want, on)
	slices.SortFunc(want, byOwnerAndName)
	sameTunnels(t, runnable(t, s), want, "RunnableTunnels after a disconnect and a connect")
}

// testTunnelCopies checks that neither the stored record nor another
// caller's copy shares memory with what a caller holds.
func testTunnelCopies(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	x := fullTunnel("usr_a", "db", 1)
	putTunnel(t, s, x)
	want, err := s.AcquireTunnelLease(ctx, "usr_a", "db", "replica-1", base, base.Add(time.Minute))
	must(t, err, "AcquireTunnelLease")
	wantCopy := *want
	wantCopy.Sealed.Source.Password = slices.Clone(want.Sealed.Source.Password)
	wantCopy.Spec.Jumps = slices.Clone(want.Spec.Jumps)
	wantCopy.Sealed.Jumps = slices.Clone(want.Sealed.Jumps)
	wantCopy.Sealed.Jumps[0].Password = slices.Clone(want.Sealed.Jumps[0].Password)
	mutate := func(x *sshdeck.Tunnel) {
		x.Spec.HostName = "mutated"
		x.Spec.Jumps[0].IP = "mutated"
		x.Sealed.Jumps[0].Password[0] = 0x42
		x.Sealed.Source.Password[0] = 0x42
		x.Status.Reason = "mutated"
		x.Lease.Holder = "mutated"
		x.CreatedAt = time.Time{}
	}
	mutate(x)
	mutate(want)
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), &wantCopy, "Tunnel after mutating the put and the acquired tunnel")
	mutate(getTunnel(t, s, "usr_a", "db"))
	sameTunnel(t, getTunnel(t, s, "usr_a", "db"), &wantCopy, "Tunnel after mutating a returned tunnel")
	mutate(listTunnels(t, s, "usr_a")[0])
	sameTunnel(t, listTunnels(t, s, "usr_a")[0], &wantCopy, "Tunnels after mutating a listed tunnel")
	mutate(runnable(t, s)[0])
	sameTunnel(t, runnable(t, s)[0], &wantCopy, "RunnableTunnels after mutating a listed tunnel")
}

// testTunnelEmptyCredentials stores a tunnel with no credentials at all,
// nil and empty: each comes back with nothing in their place, listed next
// to a full tunnel whose values must not leak into them.
func testTunnelEmptyCredentials(t *testing.T, s sshdeck.Store) {
	full := fullTunnel("usr_a", "a", 1)
	null := fullTunnel("usr_a", "b", 2)
	null.Sealed = sshdeck.SealedTunnelCredentials{}
	empty := fullTunnel("usr_a", "c", 3)
	empty.Sealed = sshdeck.SealedTunnelCredentials{
		Source:   sshdeck.SealedCredentials{Password: []byte{}, Key: []byte{}, KeyPassword: []byte{}},
		Endpoint: sshdeck.SealedCredentials{Password: []byte{}},
	}
	for _, x := range []*sshdeck.Tunnel{full, null, empty} {
		putTunnel(t, s, x)
	}
	sameTunnel(t, getTunnel(t, s, "usr_a", "b"), null, "Tunnel with nil credentials")
	sameTunnel(t, getTunnel(t, s, "usr_a", "c"), empty, "Tunnel with empty credentials")
	sameTunnels(t, listTunnels(t, s, "usr_a"), []*sshdeck.Tunnel{full, null, empty}, "Tunnels")
	// And the other way: credentials added at the next generation.
	filled := nextTunnel(null)
	filled.Sealed = full.Sealed
	putTunnel(t, s, filled)
	sameTunnel(t, getTunnel(t, s, "usr_a", "b"), filled, "Tunnel after adding credentials")
}

// testTunnelJumps: a tunnel's jump hosts come back in their order, each
// with its own sealed credentials (an empty one keeping its place), and
// none where there are none, next to tunnels with some whose values must
// not leak; a later generation adds and removes them.
func testTunnelJumps(t *testing.T, s sshdeck.Store) {
	direct := fullTunnel("usr_a", "a", 1)
	direct.Spec.Jumps, direct.Sealed.Jumps = nil, nil
	three := fullTunnel("usr_a", "b", 2)
	three.Spec.Jumps = append(three.Spec.Jumps, sshdeck.TunnelHop{IP: "[2001:db8::9]", SSHPort: 22, Username: "third", Auth: sshdeck.AuthPassword, KeyType: "auto"})
	// The second hop's credentials are empty: the third's must stay third.
	three.Sealed.Jumps = []sshdeck.SealedCredentials{three.Sealed.Jumps[0], {}, {Password: []byte{0x03, 0x00}}}
	for _, x := range []*sshdeck.Tunnel{direct, three} {
		putTunnel(t, s, x)
	}
	sameTunnel(t, getTunnel(t, s, "usr_a", "a"), direct, "Tunnel without jump hosts")
	if got := getTunnel(t, s, "usr_a", "a"); len(got.Spec.Jumps) != 0 || len(got.Sealed.Jumps) != 0 {
		t.Errorf("tunnel without jump hosts: got %d hops and %d sealed", len(got.Spec.Jumps), len(got.Sealed.Jumps))
	}
	got := getTunnel(t, s, "usr_a", "b")
	sameTunnel(t, got, three, "Tunnel with three jump hosts")
	if len(got.Sealed.Jumps) != 3 {
		t.Errorf("tunnel with three jump hosts: got %d sealed, want 3 (an empty one keeps its place)", len(got.Sealed.Jumps))
	}
	sameTunnels(t, listTunnels(t, s, "usr_a"), []*sshdeck.Tunnel{direct, three}, "Tunnels")
	sameTunnels(t, runnable(t, s), []*sshdeck.Tunnel{direct, three}, "RunnableTunnels")

	added := nextTunnel(direct)
	added.Spec.Jumps, added.Sealed.Jumps = three.Spec.Jumps, three.Sealed.Jumps
	putTunnel(t, s, added)
	sameTunnel(t, getTunnel(t, s, "usr_a", "a"), added, "Tunnel after adding jump hosts")
	removed := nextTunnel(three)
	removed.Spec.Jumps, removed.Sealed.Jumps = nil, nil
	putTunnel(t, s, removed)
	sameTunnel(t, getTunnel(t, s, "usr_a", "b"), removed, "Tunnel after removing its jump hosts")
}

func sameKnownHost(t *testing.T, got, want *sshdeck.KnownHost, what string) {
	t.Helper()
	same(t, got, want, func(k *sshdeck.KnownHost) { k.CreatedAt = ms(k.CreatedAt) }, what)
}

func testKnownHostAddAndGet(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	// Addresses that start one another, and an IPv6 one; an endpoint's
	// key is remembered per source (the tunnel engine's "<endpoint> via
	// <source>"), so that the same address behind two sources is two keys.
	addrs := []string{"10.0.0.5:22", "10.0.0.5:2222", "10.0.0.50:22", "[2001:db8::1]:22", "db.internal:22",
		"10.0.0.5:22 via 203.0.113.7:22", "10.0.0.5:22 via bastion.example.com:2222", "[fd12::5]:22 via [2001:db8::7]:22",
		// A host behind jump hosts is remembered with its whole path,
		// which can be kilobytes long: two that differ only at the end.
		longPath(9) + " via 10.0.0.1:22", longPath(9) + " via 10.0.0.2:22"}
	var want []*sshdeck.KnownHost
	for i, addr := range addrs {
		k := &sshdeck.KnownHost{Owner: "usr_a", Addr: addr, Key: fmt.Sprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%d", i), CreatedAt: base.Add(time.Duration(i) * time.Minute)}
		must(t, s.AddKnownHost(ctx, k), "AddKnownHost("+addr+")")
		want = append(want, k)
	}
	for _, k := range want {
		got, err := s.KnownHost(ctx, "usr_a", k.Addr)
		must(t, err, "KnownHost("+k.Addr+")")
		sameKnownHost(t, got, k, "KnownHost("+k.Addr+")")
		got.Key = "mutated"
	}

	// The first key wins.
	again := &sshdeck.KnownHost{Owner: "usr_a", Addr: addrs[0], Key: "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ other", CreatedAt: base.Add(time.Hour)}
	wantCode(t, s.AddKnownHost(ctx, again), sshdeck.Conflict, "AddKnownHost of a known address")
	got, err := s.KnownHost(ctx, "usr_a", addrs[0])
	must(t, err, "KnownHost after the refused add")
	sameKnownHost(t, got, want[0], "KnownHost after the refused add")

	_, err = s.KnownHost(ctx, "usr_a", "10.0.0.5:2")
	wantCode(t, err, sshdeck.NotFound, "KnownHost of an unknown address")
}

// longPath is the address of a host behind hops jump hosts, each with a
// name of the longest length (253 characters) and port.
func longPath(hops int) string {
	parts := make([]string, hops)
	for i := range parts {
		parts[i] = fmt.Sprintf("%s%d.example:65535", strings.Repeat("a", 253-len(".example")-1), i)
	}
	return strings.Join(parts, " via ")
}

func testKnownHostOwnerIsolation(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	a := &sshdeck.KnownHost{Owner: "usr_a", Addr: "10.0.0.5:22", Key: "ssh-ed25519 AAAA-a", CreatedAt: base}
	must(t, s.AddKnownHost(ctx, a), "AddKnownHost(usr_a)")
	for _, owner := range []string{"usr_b", "usr_ab", "usr_"} {
		_, err := s.KnownHost(ctx, owner, a.Addr)
		wantCode(t, err, sshdeck.NotFound, "KnownHost of usr_a's address for "+owner)
	}
	// Another owner's first connection there records its own key.
	b := &sshdeck.KnownHost{Owner: "usr_b", Addr: a.Addr, Key: "ssh-ed25519 AAAA-b", CreatedAt: base.Add(time.Minute)}
	must(t, s.AddKnownHost(ctx, b), "AddKnownHost(usr_b) of usr_a's address")
	for _, k := range []*sshdeck.KnownHost{a, b} {
		got, err := s.KnownHost(ctx, k.Owner, k.Addr)
		must(t, err, "KnownHost("+k.Owner+")")
		sameKnownHost(t, got, k, "KnownHost("+k.Owner+")")
	}
}
