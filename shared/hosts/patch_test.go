package hosts

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// countingStore is a real store that counts the host methods an update
// calls. With refusePatch, PatchHost answers Conflict without writing, so
// that every update takes the read-merge-write path; beforePatch runs once,
// before the next PatchHost, as another writer getting in first.
type countingStore struct {
	*embedded.Store
	calls       map[string]int
	refusePatch bool
	beforePatch func()
}

func (s *countingStore) Host(ctx context.Context, owner string, id int64) (*sshdeck.Host, error) {
	s.calls["Host"]++
	return s.Store.Host(ctx, owner, id)
}

func (s *countingStore) UpdateHost(ctx context.Context, h *sshdeck.Host) error {
	s.calls["UpdateHost"]++
	return s.Store.UpdateHost(ctx, h)
}

func (s *countingStore) PatchHost(ctx context.Context, p *sshdeck.HostPatch) (*sshdeck.Host, error) {
	s.calls["PatchHost"]++
	if before := s.beforePatch; before != nil {
		s.beforePatch = nil
		before()
	}
	if s.refusePatch {
		return nil, sshdeck.Errorf(sshdeck.Conflict, "refused by the test")
	}
	return s.Store.PatchHost(ctx, p)
}

// fixedNow is every test service's clock, so that two services' records
// compare equal, timestamps included.
var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newCountingService returns a service over a fresh store that counts its
// calls, with a fixed clock and its own key.
func newCountingService(t *testing.T) (*Service, *countingStore) {
	t.Helper()
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	keyring, err := secret.NewLocalKeyring(make([]byte, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: store, calls: map[string]int{}}
	return NewService(cs, secret.NewSealer(keyring), func() time.Time { return fixedNow }), cs
}

// testKeys are private keys: plain1 and plain2 OpenSSH ed25519 ones without
// a passphrase, locked a PEM ECDSA P-256 one encrypted with passphrase "pp".
// The locked one is legacy PEM encryption, weak but quick to open: an
// OpenSSH key's bcrypt KDF takes 100 ms a parse (a second under -race), and
// the cases parse it a hundred times.
var testKeys = func() (k struct{ plain1, plain2, locked string }) {
	plain := func() string {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		block, err := ssh.MarshalPrivateKey(priv, "test")
		if err != nil {
			panic(err)
		}
		return string(pem.EncodeToMemory(block))
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		panic(err)
	}
	block, err := x509.EncryptPEMBlock(rand.Reader, "EC PRIVATE KEY", der, []byte("pp"), x509.PEMCipherAES128) // deprecated; see above
	if err != nil {
		panic(err)
	}
	k.plain1, k.plain2, k.locked = plain(), plain(), string(pem.EncodeToMemory(block))
	return k
}()

func ptr[T any](v T) *T { return &v }

// input is a host body as JSON, with the required fields.
func input(t *testing.T, fields string) *Input {
	t.Helper()
	in := &Input{}
	if err := json.Unmarshal([]byte(fields), in); err != nil {
		t.Fatalf("%s: %v", fields, err)
	}
	in.IP, in.Username = "10.0.0.5", "deploy"
	return in
}

// storedHosts are the hosts the update cases start from, created through
// the service (so as it stores them).
var storedHosts = []struct {
	name string
	in   func() *Input
}{
	{"password host", func() *Input {
		return &Input{AuthType: ptr("password"), Password: ptr("pw")}
	}},
	{"password host without a password", func() *Input { return &Input{AuthType: ptr("password")} }},
	{"key host", func() *Input { return &Input{AuthType: ptr("key"), Key: ptr(testKeys.plain1)} }},
	{"ecdsa key host with a locked key", func() *Input {
		return &Input{AuthType: ptr("key"), KeyType: ptr(ssh.KeyAlgoECDSA256), Key: ptr(testKeys.locked), KeyPassword: ptr("pp")}
	}},
	{"key host without a key", func() *Input { return &Input{AuthType: ptr("key")} }},
	{"none host", func() *Input { return &Input{AuthType: ptr("none"), Tags: []string{"a"}} }},
}

// updates are update bodies (JSON over the required fields), and the path
// each takes on a store that applies every patch: "patch" (PatchHost
// alone), "patch, then read" (PatchHost refused for a condition, then Host
// and UpdateHost) or "read" (Host and UpdateHost), per stored host where it
// depends on it (stored host name → path), else for all.
var updates = []struct {
	body  string
	path  string
	paths map[string]string
}{
	{body: `{"authType":"password","password":"new"}`, path: "patch"},
	{body: `{"authType":"password","password":""}`, path: "patch"},
	{body: `{"authType":"password"}`, path: "patch", paths: map[string]string{
		"key host": "patch, then read", "ecdsa key host with a locked key": "patch, then read"}},
	{body: `{"authType":"password","key":"not a key","keyPassword":"x"}`, path: "patch", paths: map[string]string{
		"key host": "patch, then read", "ecdsa key host with a locked key": "patch, then read"}},
	{body: `{"authType":"key","key":PLAIN2,"keyPassword":""}`, path: "patch"},
	{body: `{"authType":"key","key":LOCKED,"keyPassword":"pp","password":"ignored"}`, path: "patch"},
	{body: `{"authType":"key","key":"","keyPassword":""}`, path: "patch"},
	// An invalid key is checked again after the read: NotFound comes first.
	{body: `{"authType":"key","key":LOCKED,"keyPassword":"wrong"}`, path: "read"},
	{body: `{"authType":"key","key":"not a key","keyPassword":""}`, path: "read"},
	{body: `{"authType":"key"}`, path: "patch", paths: map[string]string{
		"password host": "patch, then read", "ecdsa key host with a locked key": "patch, then read"}},
	{body: `{"authType":"key","keyType":"ecdsa-sha2-nistp256"}`, path: "patch, then read", paths: map[string]string{
		"ecdsa key host with a locked key": "patch"}},
	{body: `{"authType":"key","keyType":"ssh-ed25519"}`, path: "patch, then read"},
	{body: `{"authType":"key","keyType":"ssh-rsa"}`, path: "patch, then read"},
	{body: `{"authType":"key","keyPassword":"pp"}`, path: "read"},
	{body: `{"authType":"key","key":PLAIN2}`, path: "read"},
	{body: `{"authType":"key","key":""}`, path: "read"},
	{body: `{"authType":"none"}`, path: "patch"},
	{body: `{"authType":"none","password":"x","key":PLAIN2}`, path: "patch"},
	{body: `{"key":PLAIN2,"keyPassword":""}`, path: "patch"},
	{body: `{"key":"","password":"inferred password"}`, path: "patch"},
	{body: `{"key":PLAIN2}`, path: "read"},
	{body: `{}`, path: "read"},
	{body: `{"password":"no authType"}`, path: "read"},
	{body: `{"authType":"password","password":"x","tags":["b","c"],"port":2222,"enableTunnel":false,"tunnelConnections":[{"sourcePort":1,"endpointPort":2,"endpointHost":"h"}]}`, path: "patch"},
}

var wantCalls = map[string]map[string]int{
	"patch":            {"PatchHost": 1},
	"patch, then read": {"PatchHost": 1, "Host": 1, "UpdateHost": 1},
	"read":             {"Host": 1, "UpdateHost": 1},
}

func updateBody(t *testing.T, body string) *Input {
	t.Helper()
	quote := func(s string) string { return fmt.Sprintf("%q", s) }
	for placeholder, key := range map[string]string{"PLAIN2": testKeys.plain2, "LOCKED": testKeys.locked} {
		body = strings.ReplaceAll(body, placeholder, quote(key))
	}
	return input(t, body)
}

// TestUpdateBothPathsAgree updates every stored host with every body twice:
// on a store that applies patches, and on one that refuses them, where
// every update is the read-merge-write. The answers (record or error code)
// and the hosts stored after must be the same, credentials included; the
// first store must have been called as the case's path says.
func TestUpdateBothPathsAgree(t *testing.T) {
	ctx := context.Background()
	fast, fastStore := newCountingService(t)
	slow, slowStore := newCountingService(t)
	slowStore.refusePatch = true
	const absent = 1 << 40
	for _, stored := range storedHosts {
		for _, u := range updates {
			var created int64
			for i, svc := range []*Service{fast, slow} {
				in := stored.in()
				in.IP, in.Username = "10.0.0.5", "deploy"
				r, err := svc.Create(ctx, "usr_a", in)
				if err != nil {
					t.Fatalf("%s: Create: %v", stored.name, err)
				}
				if i > 0 && r.ID != created {
					t.Fatalf("%s: ids %d and %d", stored.name, created, r.ID)
				}
				created = r.ID
			}
			for _, id := range []int64{created, absent} {
				name := fmt.Sprintf("%s/%s/host %d", stored.name, u.body, id)
				clear(fastStore.calls)
				got, gotErr := fast.Update(ctx, "usr_a", id, updateBody(t, u.body), nil)
				want, wantErr := slow.Update(ctx, "usr_a", id, updateBody(t, u.body), nil)
				path := u.path
				if p, ok := u.paths[stored.name]; ok {
					path = p
				}
				if id == absent && path != "read" {
					path = "patch" // NotFound needs no second look
				}
				calls := maps.Clone(wantCalls[path])
				if gotErr != nil {
					delete(calls, "UpdateHost")
				}
				if !maps.Equal(fastStore.calls, calls) {
					t.Errorf("%s: calls %v, want %v (%s)", name, fastStore.calls, calls, path)
				}
				if sshdeck.ErrorCode(gotErr) != sshdeck.ErrorCode(wantErr) || (gotErr == nil) != (wantErr == nil) {
					t.Errorf("%s: error %v, read-merge-write's %v", name, gotErr, wantErr)
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s:\n got  %+v\n want %+v (read-merge-write's)", name, got, want)
				}
				gotStored, _ := fast.Get(ctx, "usr_a", created)
				wantStored, _ := slow.Get(ctx, "usr_a", created)
				if !reflect.DeepEqual(gotStored, wantStored) {
					t.Errorf("%s: stored\n got  %+v\n want %+v (read-merge-write's)", name, gotStored, wantStored)
				}
			}
		}
	}
}

// TestUpdatePatchLosesARace: another writer changes the host between the
// request and its patch, so that the patch's condition fails; the update
// reads the newer record and merges over it.
func TestUpdatePatchLosesARace(t *testing.T) {
	ctx := context.Background()
	svc, store := newCountingService(t)
	if _, err := svc.Create(ctx, "usr_a", input(t, `{"authType":"key","key":`+fmt.Sprintf("%q", testKeys.plain1)+`}`)); err != nil {
		t.Fatal(err)
	}
	// The other writer sets keyType ssh-ed25519 (and a tag); this update
	// says auto, keeping the key, so its patch is conditioned on keyType auto.
	store.beforePatch = func() {
		if _, err := svc.Update(ctx, "usr_a", 1, input(t, `{"authType":"key","keyType":"ssh-ed25519","tags":["other"]}`), nil); err != nil {
			t.Error(err)
		}
	}
	r, err := svc.Update(ctx, "usr_a", 1, input(t, `{"authType":"key","name":"mine"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != 3 || r.Name != "mine" || r.KeyType != "auto" || len(r.Tags) != 0 || r.Key != testKeys.plain1 {
		t.Fatalf("record after the lost race: %+v", r)
	}
	// Create's patch-free calls aside: the other writer's patch (which took
	// the read path as its keyType changed), this one's, its read and write.
	want := map[string]int{"PatchHost": 2, "Host": 2, "UpdateHost": 2}
	if !maps.Equal(store.calls, want) {
		t.Fatalf("calls %v, want %v", store.calls, want)
	}
}

// TestUpdatePatchRefusedThenRaces: a refused patch falls back on the
// read-merge-write, which still retries a race lost in its turn.
func TestUpdatePatchRefusedThenRaces(t *testing.T) {
	ctx := context.Background()
	svc, store := newCountingService(t)
	if _, err := svc.Create(ctx, "usr_a", input(t, `{"authType":"key","key":`+fmt.Sprintf("%q", testKeys.plain1)+`}`)); err != nil {
		t.Fatal(err)
	}
	racing := &racingStore{Store: store.Store}
	svc.store = &onceRacing{racingStore: racing}
	// keyType ssh-ed25519 against a stored auto: the patch is refused.
	r, err := svc.Update(ctx, "usr_a", 1, input(t, `{"authType":"key","keyType":"ssh-ed25519"}`), nil)
	if err != nil || r.Version != 3 || r.Key != testKeys.plain1 || r.KeyType != ssh.KeyAlgoED25519 || racing.races != 1 {
		t.Fatalf("Update = %+v, %v after %d races; want version 3 with the key kept after 1", r, err, racing.races)
	}
}

// TestUpdateIfMatch: an If-Match naming one version is the patch's own
// condition, so the update is one call; a stale one is refused by the patch
// and told from an absent host by a read; one naming several versions reads
// first.
func TestUpdateIfMatch(t *testing.T) {
	ctx := context.Background()
	svc, store := newCountingService(t)
	if _, err := svc.Create(ctx, "usr_a", input(t, `{"authType":"password","password":"pw"}`)); err != nil {
		t.Fatal(err)
	}
	body := `{"authType":"password","password":"new"}`
	for _, tt := range []struct {
		name    string
		id      int64
		ifMatch *Precondition
		code    sshdeck.Code // "" for success
		version int64
		calls   map[string]int
	}{
		{"stale", 1, &Precondition{Versions: []int64{7}}, sshdeck.PreconditionFailed, 0, map[string]int{"PatchHost": 1, "Host": 1}},
		{"current", 1, &Precondition{Versions: []int64{1}}, "", 2, map[string]int{"PatchHost": 1}},
		{"any", 1, &Precondition{Any: true}, "", 3, map[string]int{"PatchHost": 1}},
		{"one of several", 1, &Precondition{Versions: []int64{9, 3}}, "", 4, map[string]int{"Host": 1, "UpdateHost": 1}},
		{"none can match", 1, &Precondition{}, sshdeck.PreconditionFailed, 0, map[string]int{"Host": 1}},
		{"absent host", 2, &Precondition{Versions: []int64{1}}, sshdeck.NotFound, 0, map[string]int{"PatchHost": 1}},
		{"absent host, any", 2, &Precondition{Any: true}, sshdeck.NotFound, 0, map[string]int{"PatchHost": 1}},
	} {
		clear(store.calls)
		r, err := svc.Update(ctx, "usr_a", tt.id, input(t, body), tt.ifMatch)
		switch {
		case sshdeck.ErrorCode(err) != tt.code && (tt.code != "" || err != nil):
			t.Errorf("%s: Update = %v, want code %q", tt.name, err, tt.code)
		case err == nil && (r.Version != tt.version || r.Password != "new"):
			t.Errorf("%s: Update = version %d, password %q; want version %d, new", tt.name, r.Version, r.Password, tt.version)
		}
		if !maps.Equal(store.calls, tt.calls) {
			t.Errorf("%s: calls %v, want %v", tt.name, store.calls, tt.calls)
		}
	}
}

// TestUpdatePatchOtherOwner: another owner's host is NotFound after the one
// patch, and stays as it was.
func TestUpdatePatchOtherOwner(t *testing.T) {
	ctx := context.Background()
	svc, store := newCountingService(t)
	if _, err := svc.Create(ctx, "usr_a", input(t, `{"authType":"password","password":"pw"}`)); err != nil {
		t.Fatal(err)
	}
	clear(store.calls)
	_, err := svc.Update(ctx, "usr_b", 1, input(t, `{"authType":"password","password":"stolen"}`), nil)
	if sshdeck.ErrorCode(err) != sshdeck.NotFound || !maps.Equal(store.calls, map[string]int{"PatchHost": 1}) {
		t.Fatalf("Update of another owner's host = %v, calls %v", err, store.calls)
	}
	if r, err := svc.Get(ctx, "usr_a", 1); err != nil || r.Password != "pw" || r.Version != 1 {
		t.Fatalf("host after another owner's update: %+v, %v", r, err)
	}
}
