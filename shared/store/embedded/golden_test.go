package embedded

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The golden files pin what the store writes: a change of sshdeck's types
// or of the API that would change the bytes on disk fails here, and so
// does an edit of a record that forgets the stored files. Rewrite them
// with -update only for a change of format that comes with a new format
// byte or a migration.
var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// goldenHost has every field set, to values that differ from one another,
// and times with nanoseconds.
func goldenHost() *sshdeck.Host {
	return &sshdeck.Host{
		Owner:   "usr_0123456789abcdef",
		ID:      300,
		Version: 1,
		HostConfig: sshdeck.HostConfig{
			Name:              "db-1",
			IP:                "10.0.0.10",
			Port:              2222,
			Username:          "postgres",
			Folder:            "prod/eu",
			Tags:              []string{"prod", "db"},
			Pin:               true,
			AuthType:          sshdeck.AuthKey,
			KeyType:           "ssh-ed25519",
			EnableTerminal:    true,
			EnableTunnel:      false,
			EnableFileManager: true,
			DefaultPath:       "/var/lib/postgresql",
			TunnelConnections: []sshdeck.TunnelConnection{
				{SourcePort: 15432, EndpointPort: 5432, EndpointHost: "127.0.0.1", MaxRetries: 3, RetryInterval: 10, AutoStart: true},
				{SourcePort: 16379, EndpointPort: 6379, EndpointHost: "cache.internal", MaxRetries: 0, RetryInterval: 5},
			},
			// Ids of one byte and of several, as varints.
			JumpHosts:    []sshdeck.JumpHost{{HostID: 7}, {HostID: 1 << 40}, {HostID: 299}},
			IdentityFile: "~/.ssh/id_ed25519_db",
		},
		Sealed: sshdeck.SealedCredentials{
			Password:    []byte{0x01, 0x02, 0x03},
			Key:         []byte("sealed key\x00\xff"),
			KeyPassword: []byte{0xfe},
		},
		CreatedAt: time.Date(2025, 3, 14, 15, 9, 26, 535_897_932, time.UTC),
		UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
	}
}

func TestGoldenHost(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	h := goldenHost()
	if err := s.CreateHost(ctx, h, 1000); err != nil {
		t.Fatal(err)
	}
	var stored []byte
	s.db.View(func(tx *bolt.Tx) error {
		stored = bytes.Clone(ownerBucket(tx, h.Owner).Get(hostKey(h.ID)))
		return nil
	})
	golden := filepath.Join("testdata", "golden", "host.bin")
	if *update {
		writeGolden(t, golden, stored)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored, want) {
		t.Fatalf("the stored host is not %s:\n got\n%s want\n%s", golden, hex.Dump(stored), hex.Dump(want))
	}
	// And the golden bytes read back as the host: reading must go on
	// understanding them whatever comes after.
	got := new(sshdeck.Host)
	if err := decodeHost(hostKey(h.ID), want, got); err != nil {
		t.Fatal(err)
	}
	same(t, "the golden host decoded", got, h)
}

// TestGoldenHostFormat1: a host as schemas 4 and 5 wrote it (format 1,
// without jump hosts) reads as it did, with none. The file is
// TestGoldenHost's host.bin of before format 2, kept as it was: -update
// never rewrites it.
func TestGoldenHostFormat1(t *testing.T) {
	want := goldenHost()
	want.JumpHosts, want.IdentityFile = nil, ""
	testOldFormat(t, "host-format1.bin", hostFormat1, want)
}

// TestGoldenHostFormat2: a host as schema 6 wrote it (format 2, without
// an identity file) reads as it did, with none. The file is
// TestGoldenHost's host.bin of before format 3, kept as it was.
func TestGoldenHostFormat2(t *testing.T) {
	want := goldenHost()
	want.IdentityFile = ""
	testOldFormat(t, "host-format2.bin", hostFormat2, want)
}

func testOldFormat(t *testing.T, file string, format byte, want *sshdeck.Host) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden", file))
	if err != nil {
		t.Fatal(err)
	}
	if data[0] != format {
		t.Fatalf("%s starts with format %d", file, data[0])
	}
	got := new(sshdeck.Host)
	if err := decodeHost(hostKey(want.ID), data, got); err != nil {
		t.Fatal(err)
	}
	same(t, "the old format's host decoded", got, want)
	// Written again, it is the current format, and the same host.
	again := hostRecordOf(got).appendTo(nil)
	if again[0] != hostFormat {
		t.Fatalf("a format %d host is written in format %d", format, again[0])
	}
	got2 := new(sshdeck.Host)
	if err := decodeHost(hostKey(want.ID), again, got2); err != nil {
		t.Fatal(err)
	}
	same(t, "the old format's host written again", got2, want)
}

// TestGoldenRecords pins the JSON of every other kind, each written by the
// store's own method, one "bucket key" line and one value line each.
func TestGoldenRecords(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	t0 := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	owner := "usr_0123456789abcdef"
	h := goldenHost()
	for _, err := range []error{
		s.CreateUser(ctx, &sshdeck.User{ID: owner, Name: "alice", Admin: true, CreatedAt: t0}),
		s.CreateToken(ctx, &sshdeck.Token{ID: "tok_1", UserID: owner, Name: "laptop", Hash: "ab12", CreatedAt: t0, ExpiresAt: t0.Add(720 * time.Hour)}),
		s.CreateToken(ctx, &sshdeck.Token{ID: "tok_2", UserID: owner, Name: "ci", Hash: "cd34", CreatedAt: t0}),
		// Schema 5: a token with scopes (in its own order) and a last use.
		s.CreateToken(ctx, &sshdeck.Token{ID: "tok_3", UserID: owner, Name: "deploy", Hash: "ef56", CreatedAt: t0, Scopes: []sshdeck.Scope{sshdeck.ScopeTokens, sshdeck.ScopeHostsRead}, LastUsedAt: t0.Add(time.Second)}),
		s.PutLoginSecrets(ctx, &sshdeck.LoginSecrets{UserID: owner, PasswordHash: "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA", TOTP: []byte{0x00, 0xff}, PendingTOTP: []byte{0x01}, TOTPStep: 58000000, Version: 1, UpdatedAt: t0}),
		s.CreateHost(ctx, h, 1000),
		s.PutRecentFile(ctx, &sshdeck.FileEntry{Owner: owner, HostID: h.ID, Kind: sshdeck.RecentFile, Path: "/etc/hosts", Name: "hosts", IsSSH: true, SSHSessionID: "sess-1", CreatedAt: t0, LastOpened: t0}, 10),
		s.CreateAlert(ctx, &sshdeck.Alert{ID: "alr_1", Title: "Maintenance", Message: "Tonight", ExpiresAt: t0.Add(time.Hour), Priority: sshdeck.PriorityHigh, Type: sshdeck.AlertWarning, ActionURL: "https://example.com", ActionText: "More", CreatedAt: t0}),
		s.DismissAlert(ctx, &sshdeck.Dismissal{UserID: owner, AlertID: "alr_1", At: t0, Until: t0.Add(time.Hour)}),
		s.PutCacheEntry(ctx, &sshdeck.CacheEntry{Key: "releases/acme/tool/1/2", Value: []byte{0x1f, 0x8b, 0x00}, StoredAt: t0, KeepUntil: t0.Add(time.Hour)}),
		s.PutTunnel(ctx, &sshdeck.Tunnel{
			Owner: owner, Name: "db", Generation: 1,
			Spec: sshdeck.TunnelSpec{
				HostName:     "db-1",
				Source:       sshdeck.TunnelHop{IP: "10.0.0.5", SSHPort: 22, Username: "deploy", Auth: sshdeck.AuthKey, KeyType: "ssh-ed25519", HostKey: "SHA256:abc"},
				Endpoint:     sshdeck.TunnelHop{IP: "10.0.0.6", SSHPort: 2222, Username: "ops", Auth: sshdeck.AuthPassword, KeyType: "auto"},
				SourcePort:   15432,
				EndpointPort: 5432, MaxRetries: 3, RetryInterval: 5 * time.Second, AutoStart: true, IsPinned: true,
			},
			Sealed: sshdeck.SealedTunnelCredentials{
				Source:   sshdeck.SealedCredentials{Key: []byte{1, 2}, KeyPassword: []byte{3}},
				Endpoint: sshdeck.SealedCredentials{Password: []byte{4, 5}},
			},
			Run:       true,
			Status:    sshdeck.TunnelStatus{State: sshdeck.TunnelWaiting, RetryCount: 2, NextRetryAt: t0.Add(time.Minute), Reason: "refused", Error: sshdeck.TunnelErrNetwork, UpdatedAt: t0},
			CreatedAt: t0, UpdatedAt: t0,
		}),
		s.AddKnownHost(ctx, &sshdeck.KnownHost{Owner: owner, Addr: "10.0.0.5:22", Key: "ssh-ed25519 AAAAC3Nza", CreatedAt: t0}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RevokeToken(ctx, "tok_2", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireTunnelLease(ctx, owner, "db", "replica-1", t0, t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchToken(ctx, "ef56", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddFailure(ctx, "addr:10.0.0.5", t0, 15*time.Minute); err != nil {
		t.Fatal(err)
	}

	var text strings.Builder
	s.db.View(func(tx *bolt.Tx) error {
		var walk func(path string, b *bolt.Bucket)
		walk = func(path string, b *bolt.Bucket) {
			b.ForEach(func(k, v []byte) error {
				switch {
				case v == nil:
					walk(path+"/"+string(k), b.Bucket(k))
				case strings.HasPrefix(path, "hosts/"), path == "meta":
					// Hosts are TestGoldenHost's; the schema is no record.
				default:
					fmt.Fprintf(&text, "%s %q\n%s\n", path, k, v)
				}
				return nil
			})
		}
		tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			walk(string(name), b)
			return nil
		})
		return nil
	})
	golden := filepath.Join("testdata", "golden", "records.txt")
	if *update {
		writeGolden(t, golden, []byte(text.String()))
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if text.String() != string(want) {
		t.Fatalf("the stored records are not %s:\n got\n%s\n want\n%s", golden, text.String(), want)
	}
}

func writeGolden(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
