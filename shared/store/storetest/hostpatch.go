package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The PatchHost cases never empty a host's tags, tunnel connections or
// every credential at once: the DynamoDB store REMOVEs them, which minidyn,
// its test engine, ignores (its own tests check that request).

// patchOf returns a patch of h's host that replaces its configuration with
// another seed's, credentials untouched (Sealed nil), at updatedAt one hour
// after h's.
func patchOf(h *sshdeck.Host, seed int) *sshdeck.HostPatch {
	other := fullHost(h.Owner, h.ID, seed)
	other.AuthType, other.KeyType = sshdeck.AuthPassword, "ssh-rsa"
	other.Tags = []string{fmt.Sprintf("patched-%d", seed)}
	other.TunnelConnections = other.TunnelConnections[:1]
	return &sshdeck.HostPatch{Owner: h.Owner, ID: h.ID, HostConfig: other.HostConfig, UpdatedAt: h.UpdatedAt.Add(time.Hour)}
}

// patched returns what p must make of stored.
func patched(stored *sshdeck.Host, p *sshdeck.HostPatch) *sshdeck.Host {
	want := *stored
	want.HostConfig = p.HostConfig
	if p.Sealed != nil {
		want.Sealed = *p.Sealed
	}
	want.Version = stored.Version + 1
	want.UpdatedAt = p.UpdatedAt
	return &want
}

// patchHost applies p, which must succeed, and checks what PatchHost
// returns and what the store then holds against patched(before, p).
func patchHost(t *testing.T, s sshdeck.Store, before *sshdeck.Host, p *sshdeck.HostPatch, what string) *sshdeck.Host {
	t.Helper()
	got, err := s.PatchHost(t.Context(), p)
	must(t, err, what)
	want := patched(before, p)
	sameHost(t, got, want, what+": the host returned")
	sameHost(t, getHost(t, s, p.Owner, p.ID), want, what+": the host stored")
	return want
}

// refused applies p, which must fail with code, and checks that the host is
// as before.
func refused(t *testing.T, s sshdeck.Store, before *sshdeck.Host, p *sshdeck.HostPatch, code sshdeck.Code, what string) {
	t.Helper()
	h, err := s.PatchHost(t.Context(), p)
	wantCode(t, err, code, what)
	if h != nil {
		t.Fatalf("%s: got host %+v with the error", what, h)
	}
	sameHost(t, getHost(t, s, before.Owner, before.ID), before, what+": the host stored")
}

// testHostPatchConfig: a patch replaces the configuration, adds one to the
// version, sets updatedAt, and leaves the owner, id, creation time and
// credentials (Sealed nil) as stored, at every version.
func testHostPatchConfig(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	for i := range 3 {
		h = patchHost(t, s, h, patchOf(h, 10+i), fmt.Sprintf("PatchHost #%d", i+1))
	}
	if h.Version != 4 {
		t.Fatalf("version after 3 patches: %d, want 4", h.Version)
	}
	// The configuration's booleans and numbers go both ways.
	p := patchOf(h, 20)
	p.Pin, p.EnableTerminal, p.EnableTunnel, p.EnableFileManager, p.Port = false, false, false, false, 1
	p.Folder, p.Name = "", ""
	h = patchHost(t, s, h, p, "PatchHost clearing flags")
	p = patchOf(h, 21)
	patchHost(t, s, h, p, "PatchHost setting them again")
}

// testHostPatchCredentials: a patch with Sealed replaces the credentials,
// setting and clearing each field; one without keeps them.
func testHostPatchCredentials(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	full := h.Sealed
	for _, c := range []struct {
		what   string
		sealed sshdeck.SealedCredentials
	}{
		{"clear the password", sshdeck.SealedCredentials{Key: full.Key, KeyPassword: full.KeyPassword}},
		{"set the password", sshdeck.SealedCredentials{Password: []byte{1, 0, 0xff}, Key: full.Key, KeyPassword: full.KeyPassword}},
		{"clear the key", sshdeck.SealedCredentials{Password: full.Password, KeyPassword: full.KeyPassword}},
		{"set the key", sshdeck.SealedCredentials{Password: full.Password, Key: []byte("new key\x00"), KeyPassword: full.KeyPassword}},
		{"clear the key password", sshdeck.SealedCredentials{Password: full.Password, Key: full.Key}},
		{"set the key password", sshdeck.SealedCredentials{Password: full.Password, Key: full.Key, KeyPassword: []byte{0x80}}},
		{"keep only the password", sshdeck.SealedCredentials{Password: []byte("only")}},
		{"keep only the key", sshdeck.SealedCredentials{Key: []byte("only")}},
		{"keep only the key password", sshdeck.SealedCredentials{KeyPassword: []byte("only")}},
		{"set all three", full},
	} {
		p := patchOf(h, 2)
		sealed := c.sealed
		p.Sealed = &sealed
		h = patchHost(t, s, h, p, "PatchHost to "+c.what)
		h = patchHost(t, s, h, patchOf(h, 3), "PatchHost keeping the credentials after "+c.what)
	}
}

// testHostPatchVersion: with IfVersion, only the host at that version is
// patched; another version is Conflict and leaves it as it was.
func testHostPatchVersion(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	h = patchHost(t, s, h, patchOf(h, 2), "PatchHost at any version") // version 2
	for _, v := range []int64{1, 3, 4} {
		p := patchOf(h, 3)
		p.IfVersion = v
		refused(t, s, h, p, sshdeck.Conflict, fmt.Sprintf("PatchHost if version %d of a host at 2", v))
	}
	p := patchOf(h, 4)
	p.IfVersion = 2
	h = patchHost(t, s, h, p, "PatchHost if version 2 of a host at 2")
	refused(t, s, h, p, sshdeck.Conflict, "the same PatchHost again")
}

// testHostPatchKeyType: with IfKeyType, only a host of that keyType is
// patched (whatever the new one).
func testHostPatchKeyType(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1) // ssh-ed25519
	for _, kt := range []string{"auto", "ssh-rsa", "ssh-ed25519-cert-v01@openssh.com"} {
		p := patchOf(h, 2)
		p.IfKeyType = kt
		refused(t, s, h, p, sshdeck.Conflict, fmt.Sprintf("PatchHost if keyType %s of an ssh-ed25519 host", kt))
	}
	p := patchOf(h, 2)
	p.IfKeyType = "ssh-ed25519"
	p.KeyType = "ssh-ed25519"
	h = patchHost(t, s, h, p, "PatchHost if keyType ssh-ed25519, keeping it")
	p = patchOf(h, 3)
	p.IfKeyType = "ssh-ed25519"
	p.KeyType = "auto"
	h = patchHost(t, s, h, p, "PatchHost if keyType ssh-ed25519, changing it")
	p = patchOf(h, 4)
	p.IfKeyType = "ssh-ed25519"
	refused(t, s, h, p, sshdeck.Conflict, "PatchHost if keyType ssh-ed25519 of an auto host")
}

// testHostPatchIfNoCredential: IfNoPassword, IfNoKey and IfNoKeyPassword
// refuse a host that has that credential, and pass one that has not, also
// a host with no credentials at all.
func testHostPatchIfNoCredential(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1) // every credential
	conds := []struct {
		name string
		set  func(*sshdeck.HostPatch)
	}{
		{"IfNoPassword", func(p *sshdeck.HostPatch) { p.IfNoPassword = true }},
		{"IfNoKey", func(p *sshdeck.HostPatch) { p.IfNoKey = true }},
		{"IfNoKeyPassword", func(p *sshdeck.HostPatch) { p.IfNoKeyPassword = true }},
	}
	for _, c := range conds {
		p := patchOf(h, 2)
		c.set(p)
		refused(t, s, h, p, sshdeck.Conflict, "PatchHost "+c.name+" of a host with every credential")
	}
	// Down to the password alone: the key conditions pass, not the other.
	p := patchOf(h, 2)
	p.Sealed = &sshdeck.SealedCredentials{Password: h.Sealed.Password}
	h = patchHost(t, s, h, p, "PatchHost to the password alone")
	p = patchOf(h, 3)
	p.IfNoKey, p.IfNoKeyPassword = true, true
	h = patchHost(t, s, h, p, "PatchHost IfNoKey and IfNoKeyPassword of a password host")
	p = patchOf(h, 4)
	p.IfNoPassword = true
	refused(t, s, h, p, sshdeck.Conflict, "PatchHost IfNoPassword of a password host")
	// And the key alone: the other way round.
	p = patchOf(h, 5)
	p.Sealed = &sshdeck.SealedCredentials{Key: []byte("key"), KeyPassword: []byte("kp")}
	h = patchHost(t, s, h, p, "PatchHost to the key alone")
	p = patchOf(h, 6)
	p.IfNoPassword = true
	h = patchHost(t, s, h, p, "PatchHost IfNoPassword of a key host")

	// A host created without credentials meets all three.
	bare := fullHost("alice", nextID(t, s, "alice"), 7)
	bare.Sealed = sshdeck.SealedCredentials{}
	must(t, s.CreateHost(t.Context(), bare), "CreateHost")
	p = patchOf(bare, 8)
	p.IfNoPassword, p.IfNoKey, p.IfNoKeyPassword = true, true, true
	patchHost(t, s, bare, p, "PatchHost with every IfNo... of a host without credentials")
}

// testHostPatchNotFound: an absent host is NotFound, whatever the
// conditions, and PatchHost creates nothing.
func testHostPatchNotFound(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	check := func(owner string, id int64) {
		t.Helper()
		for _, cond := range []func(*sshdeck.HostPatch){
			func(*sshdeck.HostPatch) {},
			func(p *sshdeck.HostPatch) { p.IfVersion = 1 },
			func(p *sshdeck.HostPatch) { p.IfKeyType = "auto" },
			func(p *sshdeck.HostPatch) { p.IfNoPassword, p.IfNoKey, p.IfNoKeyPassword = true, true, true },
		} {
			p := patchOf(fullHost(owner, id, 1), 2)
			cond(p)
			h, err := s.PatchHost(ctx, p)
			wantCode(t, err, sshdeck.NotFound, fmt.Sprintf("PatchHost(%s, %d) %+v", owner, id, p))
			if h != nil {
				t.Fatalf("PatchHost(%s, %d): got host %+v with the error", owner, id, h)
			}
		}
		_, err := s.Host(ctx, owner, id)
		wantCode(t, err, sshdeck.NotFound, fmt.Sprintf("Host(%s, %d) after PatchHost", owner, id))
	}
	check("nobody", 1)
	h := createHost(t, s, "alice", 1)
	check("alice", h.ID+1)
	must(t, s.DeleteHost(ctx, "alice", h.ID, 0), "DeleteHost")
	check("alice", h.ID)
	if hs := listHosts(t, s, "alice"); len(hs) != 0 {
		t.Fatalf("Hosts(alice) after patches of absent hosts: %d hosts", len(hs))
	}
}

// testHostPatchOwnerIsolation: another owner's id is NotFound and its host
// left alone; owners with the same id each patch only their own.
func testHostPatchOwnerIsolation(t *testing.T, s sshdeck.Store) {
	a1 := createHost(t, s, "alice", 1)
	a2 := createHost(t, s, "alice", 2) // an id bob does not have
	b1 := createHost(t, s, "bob", 3)
	if a1.ID != b1.ID {
		t.Fatalf("ids %d and %d: the case needs the same id for both owners", a1.ID, b1.ID)
	}
	steal := patchOf(a2, 4)
	steal.Owner = "bob"
	refused(t, s, a2, steal, sshdeck.NotFound, "bob's PatchHost of alice's id")
	a1 = patchHost(t, s, a1, patchOf(a1, 5), "alice's PatchHost")
	sameHost(t, getHost(t, s, "bob", b1.ID), b1, "bob's host after alice's patch of the same id")
	patchHost(t, s, b1, patchOf(b1, 6), "bob's PatchHost")
	sameHost(t, getHost(t, s, "alice", a1.ID), a1, "alice's host after bob's patch of the same id")
	sameHost(t, getHost(t, s, "alice", a2.ID), a2, "alice's other host")
	if n := len(listHosts(t, s, "bob")); n != 1 {
		t.Fatalf("Hosts(bob): got %d hosts, want 1", n)
	}
}

// testHostPatchCopies: the host PatchHost returns shares nothing with the
// patch or the store.
func testHostPatchCopies(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	p := patchOf(h, 2)
	p.Sealed = &sshdeck.SealedCredentials{Password: []byte{1, 2, 3}, Key: []byte{4}}
	got, err := s.PatchHost(t.Context(), p)
	must(t, err, "PatchHost")
	want := patched(h, p)
	want.Tags = append([]string(nil), want.Tags...)
	want.TunnelConnections = append([]sshdeck.TunnelConnection(nil), want.TunnelConnections...)
	want.Sealed = sshdeck.SealedCredentials{Password: []byte{1, 2, 3}, Key: []byte{4}}
	mutate := func(h *sshdeck.Host) {
		h.Name = "mutated"
		h.Tags[0] = "mutated"
		h.TunnelConnections[0].SourcePort = 1
		h.Sealed.Password[0] = 0x42
	}
	mutate(got)
	p.Tags[0], p.TunnelConnections[0].SourcePort, p.Sealed.Password[0] = "mutated", 1, 0x42
	sameHost(t, getHost(t, s, "alice", h.ID), want, "Host after mutating the patch and the host returned")
}

// testHostPatchConcurrent: concurrent patches each land once (the version
// counts them all), and of patches at the same IfVersion exactly one does.
func testHostPatchConcurrent(t *testing.T, s sshdeck.Store) {
	const writers = 8
	h := createHost(t, s, "alice", 1)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			if _, err := s.PatchHost(t.Context(), patchOf(h, 10+w)); err != nil {
				t.Errorf("PatchHost of writer %d: %v", w, err)
			}
		})
	}
	wg.Wait()
	if got := getHost(t, s, "alice", h.ID); got.Version != 1+writers {
		t.Fatalf("version after %d patches: %d", writers, got.Version)
	}
	var mu sync.Mutex
	won := 0
	for w := range writers {
		wg.Go(func() {
			p := patchOf(h, 20+w)
			p.IfVersion = 1 + writers
			_, err := s.PatchHost(t.Context(), p)
			switch sshdeck.ErrorCode(err) {
			case "":
				mu.Lock()
				won++
				mu.Unlock()
			case sshdeck.Conflict:
			default:
				t.Errorf("PatchHost of writer %d at the same version: %v", w, err)
			}
		})
	}
	wg.Wait()
	if got := getHost(t, s, "alice", h.ID); won != 1 || got.Version != 2+writers {
		t.Fatalf("patches at the same version: %d won, version %d; want 1 and %d", won, got.Version, 2+writers)
	}
}
