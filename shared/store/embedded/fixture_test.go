package embedded

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The ids of the schema-3 fixture, which testdata/schema3/make.sh made
// through the API of sshdeck at f1c5383.
const (
	fxAdmin  = "usr_5d0896ba7ece1e89"
	fxAlice  = "usr_987545797451a025"
	fxAlert  = "alr_3a7c33296e7f5ffa"
	fxTunnel = "fixture-tunnel"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// TestSchema3Fixture opens a data directory that sshdeck wrote at schema 3
// (JSON hosts) and checks that the migration kept every record as it was
// created, credentials included, that it rewrote only the hosts, and that
// opening the file again changes nothing.
func TestSchema3Fixture(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "sshdeck.db")
	copyFile(t, filepath.Join("testdata", "schema3", "sshdeck.db"), path)
	before := snapshot(t, path)
	if got := before["meta"]["schema"]; got != "3" {
		t.Fatalf("the fixture has schema %q, want 3", got)
	}

	s := mustOpen(t, path)
	wantSchema(t, s)
	checkFixture(ctx, t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Only the hosts and the schema changed; the hosts' buckets kept their
	// sequences.
	migrated := snapshot(t, path)
	for bucket, values := range before {
		switch {
		case bucket == "meta":
			if migrated[bucket]["schema"] != strconv.Itoa(schemaVersion) {
				t.Errorf("schema after the migration: %q", migrated[bucket]["schema"])
			}
		case strings.HasPrefix(bucket, "hosts/"):
			if !slices.Equal(slices.Sorted(maps.Keys(values)), slices.Sorted(maps.Keys(migrated[bucket]))) || values["#seq"] != migrated[bucket]["#seq"] {
				t.Errorf("bucket %s holds other keys, or another sequence, after the migration", bucket)
			}
		case !maps.Equal(values, migrated[bucket]):
			t.Errorf("the migration changed bucket %s", bucket)
		}
	}

	s = mustOpen(t, path)
	wantSchema(t, s)
	checkFixture(ctx, t, s)
	s.Close()
	if again := snapshot(t, path); !reflect.DeepEqual(again, migrated) {
		t.Errorf("opening the migrated file again changed it")
	}

	// And the migrated file takes writes: host ids go on after alice's 3.
	s = mustOpen(t, path)
	defer s.Close()
	if id, err := s.NextHostID(ctx, fxAlice); err != nil || id != 4 {
		t.Errorf("NextHostID(alice): %d, %v; want 4", id, err)
	}
}

func checkFixture(ctx context.Context, t *testing.T, s *Store) {
	t.Helper()
	key, err := os.ReadFile(filepath.Join("testdata", "schema3", "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	keyring, err := secret.NewLocalKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	sealer := secret.NewSealer(keyring)

	// Users and tokens.
	users, err := s.Users(ctx)
	must(t, err)
	same(t, "Users", users, []*sshdeck.User{
		{ID: fxAdmin, Name: "admin", Admin: true, CreatedAt: at(t, "2026-11-24T22:55:46.679Z")},
		{ID: fxAlice, Name: "alice", CreatedAt: at(t, "2026-11-24T22:55:46.709Z")},
	})
	bootstrap := &sshdeck.Token{ID: "tok_706ed184690b8d88", UserID: fxAdmin, Name: "bootstrap", Hash: "a412edeb5163598e8315066c774feac49c2977fecd2d54417b35300173a29132",
		CreatedAt: at(t, "2026-11-24T22:55:46.68Z"), ExpiresAt: at(t, "2026-12-24T22:55:46.68Z")}
	fixture := &sshdeck.Token{ID: "tok_038b618911709dba", UserID: fxAlice, Name: "fixture", Hash: "4afe738a6b3931f2c6f1efdb3717567f32153e0e20db1c31fa84df25ddb2069e",
		CreatedAt: at(t, "2026-11-24T22:55:46.718Z")}
	revoked := &sshdeck.Token{ID: "tok_b0c5183a90e6f836", UserID: fxAlice, Name: "old", Hash: "8133a8b3faa897e2b90acecbd12bb1650e59fa9e1ad93e1e5d52f6b5b7c1a4b5",
		CreatedAt: at(t, "2026-11-24T22:55:46.725Z"), ExpiresAt: at(t, "2026-12-24T22:55:46.725Z"), Revoked: true, RevokedAt: at(t, "2026-11-24T22:55:46.734Z")}
	tokens, err := s.Tokens(ctx, fxAlice)
	must(t, err)
	same(t, "Tokens(alice)", tokens, []*sshdeck.Token{fixture, revoked})
	tok, err := s.TokenByHash(ctx, bootstrap.Hash)
	must(t, err)
	same(t, "TokenByHash(bootstrap)", tok, bootstrap)

	// Hosts, their credentials opened with the fixture's key.
	hosts, err := s.Hosts(ctx, fxAlice, 0, 0)
	must(t, err)
	creds := make([]sshdeck.Credentials, len(hosts))
	for i, h := range hosts {
		id := strconv.FormatInt(h.ID, 10)
		creds[i], err = sealer.OpenCredentials(ctx, h.Sealed, func(field string) string { return secret.AD("host", h.Owner, id, field) })
		if err != nil {
			t.Fatalf("host %d: %v", h.ID, err)
		}
		h.Sealed = sshdeck.SealedCredentials{}
	}
	same(t, "Hosts(alice)", hosts, []*sshdeck.Host{
		{Owner: fxAlice, ID: 1, Version: 1, HostConfig: sshdeck.HostConfig{
			Name: "db-1", IP: "10.0.0.10", Port: 2222, Username: "postgres", Folder: "prod/eu", Tags: []string{"prod", "db"}, Pin: true,
			AuthType: sshdeck.AuthPassword, KeyType: "auto", EnableTerminal: true, EnableTunnel: true, EnableFileManager: true,
			DefaultPath: "/var/lib/postgresql",
			TunnelConnections: []sshdeck.TunnelConnection{
				{SourcePort: 15432, EndpointPort: 5432, EndpointHost: "127.0.0.1", MaxRetries: 3, RetryInterval: 10, AutoStart: true},
				{SourcePort: 16379, EndpointPort: 6379, EndpointHost: "cache.internal", MaxRetries: 3, RetryInterval: 5},
			}},
			CreatedAt: at(t, "2026-11-24T22:55:46.741Z"), UpdatedAt: at(t, "2026-11-24T22:55:46.741Z")},
		{Owner: fxAlice, ID: 2, Version: 2, HostConfig: sshdeck.HostConfig{
			Name: "web-1", IP: "10.0.0.6", Port: 22, Username: "deploy", Tags: []string{"prod", "eu"},
			AuthType: sshdeck.AuthKey, KeyType: "ssh-ed25519", EnableTerminal: true, EnableTunnel: true, EnableFileManager: true,
			DefaultPath: "/"},
			CreatedAt: at(t, "2026-11-24T22:55:46.755Z"), UpdatedAt: at(t, "2026-11-24T22:55:46.77Z")},
		{Owner: fxAlice, ID: 3, Version: 1, HostConfig: sshdeck.HostConfig{
			Name: "bastion", IP: "bastion.example.com", Port: 22, Username: "ops",
			AuthType: sshdeck.AuthNone, KeyType: "auto", EnableTerminal: true, EnableTunnel: true, EnableFileManager: true,
			DefaultPath: "/"},
			CreatedAt: at(t, "2026-11-24T22:55:46.777Z"), UpdatedAt: at(t, "2026-11-24T22:55:46.777Z")},
	})
	if creds[0] != (sshdeck.Credentials{Password: "fixture-password-1"}) {
		t.Errorf("host 1's credentials are not its password")
	}
	if !strings.HasPrefix(creds[1].Key, "-----BEGIN OPENSSH PRIVATE KEY-----\n") || creds[1].Password != "" || creds[1].KeyPassword != "" {
		t.Errorf("host 2's credentials are not its private key")
	}
	if creds[2] != (sshdeck.Credentials{}) {
		t.Errorf("host 3 has credentials")
	}

	// Host 2's recent files, newest first, and its shortcut.
	recent, err := s.Files(ctx, fxAlice, 2, sshdeck.RecentFile)
	must(t, err)
	same(t, "recent files", recent, []*sshdeck.FileEntry{
		{Owner: fxAlice, HostID: 2, Kind: sshdeck.RecentFile, Path: "/var/log/nginx/access.log", Name: "access.log",
			CreatedAt: at(t, "2026-11-24T22:55:46.791Z"), LastOpened: at(t, "2026-11-24T22:55:46.791Z")},
		{Owner: fxAlice, HostID: 2, Kind: sshdeck.RecentFile, Path: "/etc/nginx/nginx.conf", Name: "nginx.conf", IsSSH: true, SSHSessionID: "sess-1",
			CreatedAt: at(t, "2026-11-24T22:55:46.785Z"), LastOpened: at(t, "2026-11-24T22:55:46.785Z")},
	})
	shortcuts, err := s.Files(ctx, fxAlice, 2, sshdeck.Shortcut)
	must(t, err)
	same(t, "shortcuts", shortcuts, []*sshdeck.FileEntry{
		{Owner: fxAlice, HostID: 2, Kind: sshdeck.Shortcut, Path: "/var/log/nginx/", Name: "nginx", CreatedAt: at(t, "2026-11-24T22:55:46.797Z")},
	})

	// The alert, in force until 2099, and alice's dismissal of it.
	now := at(t, "2026-11-25T00:00:00Z")
	alerts, err := s.Alerts(ctx, now)
	must(t, err)
	same(t, "Alerts", alerts, []*sshdeck.Alert{{
		ID: fxAlert, Title: "Fixture maintenance", Message: "Schema 3 fixture", ExpiresAt: at(t, "2099-01-01T00:00:00Z"),
		Priority: sshdeck.PriorityHigh, Type: sshdeck.AlertWarning, ActionURL: "https://example.com/status", ActionText: "Status",
		CreatedAt: at(t, "2026-11-24T22:55:46.802Z"),
	}})
	dismissals, err := s.Dismissals(ctx, fxAlice, now)
	must(t, err)
	same(t, "Dismissals(alice)", dismissals, []*sshdeck.Dismissal{
		{UserID: fxAlice, AlertID: fxAlert, At: at(t, "2026-11-24T22:55:46.809Z"), Until: at(t, "2099-01-01T00:00:00Z")},
	})

	// The releases page cached: gzipped JSON of the one release.
	entry, err := s.CacheEntry(ctx, "releases/acme/tool/1/2", now)
	must(t, err)
	if !entry.StoredAt.Equal(at(t, "2026-11-24T22:55:46.81486891Z")) || !entry.KeepUntil.Equal(at(t, "2026-12-01T22:55:46.81486891Z")) {
		t.Errorf("cache entry stored %v, kept until %v", entry.StoredAt, entry.KeepUntil)
	}
	zr, err := gzip.NewReader(bytes.NewReader(entry.Value))
	must(t, err)
	page, err := io.ReadAll(zr)
	must(t, err)
	if !bytes.Contains(page, []byte(`"v1.0.0"`)) {
		t.Errorf("the cached page does not hold release v1.0.0")
	}

	// The tunnel that failed, its credentials opened with the fixture's key.
	tunnel, err := s.Tunnel(ctx, fxAlice, fxTunnel)
	must(t, err)
	for role, sealed := range map[string]sshdeck.SealedCredentials{"source": tunnel.Sealed.Source, "endpoint": tunnel.Sealed.Endpoint} {
		c, err := sealer.OpenCredentials(ctx, sealed, func(field string) string { return secret.AD("tunnel", fxAlice, fxTunnel, role, field) })
		if err != nil || c != (sshdeck.Credentials{Password: "fixture-" + role}) {
			t.Errorf("the tunnel's %s credentials: %v", role, err)
		}
	}
	tunnel.Sealed = sshdeck.SealedTunnelCredentials{}
	same(t, "Tunnel", tunnel, &sshdeck.Tunnel{
		Owner: fxAlice, Name: fxTunnel, Generation: 2,
		Spec: sshdeck.TunnelSpec{
			HostName:   "db-1",
			Source:     sshdeck.TunnelHop{IP: "127.0.0.1", SSHPort: 1, Username: "deploy", Auth: sshdeck.AuthPassword, KeyType: "auto"},
			Endpoint:   sshdeck.TunnelHop{IP: "127.0.0.1", SSHPort: 22, Username: "deploy", Auth: sshdeck.AuthPassword, KeyType: "auto"},
			SourcePort: 18090, EndpointPort: 9000, RetryInterval: 5 * time.Second, AutoStart: true,
		},
		Status: sshdeck.TunnelStatus{
			State:  sshdeck.TunnelFailed,
			Reason: "source 127.0.0.1:1: connection refused or unreachable; no retries left (maxRetries 0)",
			Error:  sshdeck.TunnelErrNetwork, RetryExhausted: true, UpdatedAt: at(t, "2026-11-24T22:55:46.826679386Z"),
		},
		CreatedAt: at(t, "2026-11-24T22:55:46.824994883Z"), UpdatedAt: at(t, "2026-11-24T22:55:46.826679386Z"),
	})
	runnable, err := s.RunnableTunnels(ctx)
	must(t, err)
	if len(runnable) != 0 {
		t.Errorf("%d runnable tunnels; the failed one is not to run", len(runnable))
	}
	if _, err := s.KnownHost(ctx, fxAlice, "127.0.0.1:1"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Errorf("a known host where no key was seen: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func same[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %s\n want %s", what, dump(got), dump(want))
	}
}

// dump prints pointers' targets, which %+v does only at the top.
func dump(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		var parts []string
		for i := range rv.Len() {
			parts = append(parts, dump(rv.Index(i).Interface()))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return "&" + dump(rv.Elem().Interface())
	}
	return fmt.Sprintf("%+v", v)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// snapshot returns every value of a closed store's file, by bucket path
// ("hosts/<owner>") and key, with the buckets' sequences under "#seq".
func snapshot(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]map[string]string{}
	var walk func(name string, b *bolt.Bucket) error
	walk = func(name string, b *bolt.Bucket) error {
		values := map[string]string{"#seq": strconv.FormatUint(b.Sequence(), 10)}
		out[name] = values
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(name+"/"+string(k), b.Bucket(k))
			}
			values[string(k)] = string(v)
			return nil
		})
	}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(string(name), b) })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
