package embedded

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/storetest"
)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sshdeck.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s, path
}

func mustOpen(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) sshdeck.Store {
		s, _ := openTemp(t)
		return s
	})
}

func TestReopenKeepsData(t *testing.T) {
	ctx := t.Context()
	s, path := openTemp(t)
	u := &sshdeck.User{ID: "u-1", Name: "alice", CreatedAt: time.Now()}
	k := &sshdeck.Token{ID: "t-1", UserID: "u-1", Hash: "h-1", CreatedAt: time.Now()}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, k); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		id, err := s.NextHostID(ctx, "u-1")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateHost(ctx, &sshdeck.Host{Owner: "u-1", ID: id, Version: 1}, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteHost(ctx, "u-1", 2, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, path)
	defer s.Close()
	if _, err := s.UserByName(ctx, "alice"); err != nil {
		t.Errorf("UserByName after reopen: %v", err)
	}
	if _, err := s.TokenByHash(ctx, "h-1"); err != nil {
		t.Errorf("TokenByHash after reopen: %v", err)
	}
	if _, err := s.Host(ctx, "u-1", 1); err != nil {
		t.Errorf("Host after reopen: %v", err)
	}
	if id, err := s.NextHostID(ctx, "u-1"); err != nil || id != 3 {
		t.Errorf("NextHostID after reopen: got %d, %v; want 3", id, err)
	}
}

func TestOpenLockedFailsFast(t *testing.T) {
	s, path := openTemp(t)
	start := time.Now()
	_, err := Open(path)
	elapsed := time.Since(start)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: got %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
	if elapsed > 2*time.Second {
		t.Errorf("second Open took %v", elapsed)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, path).Close()
}

func TestFileMode(t *testing.T) {
	s, path := openTemp(t)
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Fatalf("mode: got %o, want 600", mode)
	}
}

// setSchema writes a schema number into a closed store's file.
func setSchema(t *testing.T, path, schema string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, []byte(schema)) })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	s, path := openTemp(t)
	s.Close()
	setSchema(t, path, "9")
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "schema 9") {
		t.Fatalf("Open of a schema-9 file: got %v, want an error naming schema 9", err)
	}
}

// downgrade makes a closed store's file as an older sshdeck left it: at
// schema, without the buckets added since, its hosts in JSON.
func downgrade(t *testing.T, path, schema string, added ...[]byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range added {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		if err := hostsToJSON(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte(schema))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
}

func wantSchema(t *testing.T, s *Store) {
	t.Helper()
	var schema string
	s.db.View(func(tx *bolt.Tx) error { schema = string(tx.Bucket(bucketMeta).Get(keySchema)); return nil })
	if want := strconv.Itoa(schemaVersion); schema != want {
		t.Fatalf("schema after opening: got %q, want %s", schema, want)
	}
}

// TestSchema1Migrates opens a file as sshdeck with schema 1 left it: no
// file, alert, dismissal, cache, tunnel or known-host bucket. Its hosts
// stay, and the new kinds work on it.
func TestSchema1Migrates(t *testing.T) {
	ctx := t.Context()
	s, path := openTemp(t)
	id, err := s.NextHostID(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateHost(ctx, &sshdeck.Host{Owner: "alice", ID: id, Version: 1}, 1000); err != nil {
		t.Fatal(err)
	}
	s.Close()
	downgrade(t, path, "1", bucketFiles, bucketAlerts, bucketDismissals, bucketCache, bucketTunnels, bucketKnownHosts)

	s = mustOpen(t, path)
	defer s.Close()
	e := &sshdeck.FileEntry{Owner: "alice", HostID: id, Kind: sshdeck.RecentFile, Path: "/etc/hosts", LastOpened: time.Now()}
	if err := s.PutRecentFile(ctx, e, 100); err != nil {
		t.Fatalf("PutRecentFile on a migrated file: %v", err)
	}
	if _, err := s.Alerts(ctx, time.Now()); err != nil {
		t.Fatalf("Alerts on a migrated file: %v", err)
	}
	if _, err := s.RunnableTunnels(ctx); err != nil {
		t.Fatalf("RunnableTunnels on a migrated file: %v", err)
	}
	wantSchema(t, s)
}

// TestSchema2Migrates opens a file as sshdeck with schema 2 left it: no
// tunnel or known-host bucket. Its hosts and alerts stay, and tunnels and
// known hosts work on it.
func TestSchema2Migrates(t *testing.T) {
	ctx := t.Context()
	s, path := openTemp(t)
	id, err := s.NextHostID(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateHost(ctx, &sshdeck.Host{Owner: "alice", ID: id, Version: 1}, 1000); err != nil {
		t.Fatal(err)
	}
	a := &sshdeck.Alert{ID: "alr_1", Title: "Hello", ExpiresAt: time.Now().Add(time.Hour), CreatedAt: time.Now()}
	if err := s.CreateAlert(ctx, a); err != nil {
		t.Fatal(err)
	}
	s.Close()
	downgrade(t, path, "2", bucketTunnels, bucketKnownHosts)

	s = mustOpen(t, path)
	if _, err := s.Host(ctx, "alice", id); err != nil {
		t.Fatalf("Host on a migrated file: %v", err)
	}
	if as, err := s.Alerts(ctx, time.Now()); err != nil || len(as) != 1 {
		t.Fatalf("Alerts on a migrated file: got %d alerts, %v; want 1", len(as), err)
	}
	if ts, err := s.RunnableTunnels(ctx); err != nil || len(ts) != 0 {
		t.Fatalf("RunnableTunnels on a migrated file: got %d tunnels, %v; want none", len(ts), err)
	}
	if err := s.PutTunnel(ctx, &sshdeck.Tunnel{Owner: "alice", Name: "db", Generation: 1, Run: true}); err != nil {
		t.Fatalf("PutTunnel on a migrated file: %v", err)
	}
	if _, err := s.AcquireTunnelLease(ctx, "alice", "db", "replica-1", time.Now(), time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("AcquireTunnelLease on a migrated file: %v", err)
	}
	if err := s.AddKnownHost(ctx, &sshdeck.KnownHost{Owner: "alice", Addr: "10.0.0.5:22", Key: "ssh-ed25519 AAAA", CreatedAt: time.Now()}); err != nil {
		t.Fatalf("AddKnownHost on a migrated file: %v", err)
	}
	wantSchema(t, s)

	// And the tunnels survive reopening.
	s.Close()
	s = mustOpen(t, path)
	defer s.Close()
	if ts, err := s.RunnableTunnels(ctx); err != nil || len(ts) != 1 || ts[0].Lease.Holder != "replica-1" {
		t.Fatalf("RunnableTunnels after reopening: got %+v, %v; want alice's db leased by replica-1", ts, err)
	}
	if _, err := s.KnownHost(ctx, "alice", "10.0.0.5:22"); err != nil {
		t.Fatalf("KnownHost after reopening: %v", err)
	}
}

// TestMigrationFailureKeepsFile: a schema-3 host that is not JSON stops
// Open, with an error that does not quote it, and the file stays as it
// was: at schema 3, its other host still JSON.
func TestMigrationFailureKeepsFile(t *testing.T) {
	ctx := t.Context()
	s, path := openTemp(t)
	for _, id := range []int64{1, 2} {
		if err := s.CreateHost(ctx, &sshdeck.Host{Owner: "alice", ID: id, Version: 1}, 1000); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	downgrade(t, path, "3")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketHosts).Bucket([]byte("alice")).Put(hostKey(2), []byte("secret-ish garbage"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, path)

	_, err = Open(path)
	if err == nil || !strings.Contains(err.Error(), "migrate schema 3 to 8") || strings.Contains(err.Error(), "garbage") {
		t.Fatalf("Open of a file with a corrupt host: %v", err)
	}
	if after := snapshot(t, path); !reflect.DeepEqual(after, before) {
		t.Fatal("the failed migration changed the file")
	}
}

// The suite needs only creation order; this store also orders ties by id.
func TestTokensTieBreakByID(t *testing.T) {
	ctx := t.Context()
	s, _ := openTemp(t)
	defer s.Close()
	at := time.Now()
	for _, id := range []string{"t-b", "t-c", "t-a"} {
		if err := s.CreateToken(ctx, &sshdeck.Token{ID: id, UserID: "u", Hash: "h" + id, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	tokens, err := s.Tokens(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range tokens {
		ids = append(ids, k.ID)
	}
	if got := strings.Join(ids, ","); got != "t-a,t-b,t-c" {
		t.Fatalf("Tokens: got %s, want t-a,t-b,t-c", got)
	}
}

// TestSchema5Opens: a schema 5 file, its hosts in format 1, opens at
// schema 7 with its hosts as they were (no jump hosts, the bytes kept),
// and a host's next write stores format 3.
func TestSchema5Opens(t *testing.T) {
	ctx := t.Context()
	s, path := openTemp(t)
	h := goldenHost()
	id, err := s.NextHostID(ctx, h.Owner)
	if err != nil {
		t.Fatal(err)
	}
	for ; id < h.ID; id++ {
		if _, err := s.NextHostID(ctx, h.Owner); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	format1, err := os.ReadFile(filepath.Join("testdata", "golden", "host-format1.bin"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := ownerBucket(tx, h.Owner).Put(hostKey(h.ID), format1); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte("5"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, path)
	defer s.Close()
	wantSchema(t, s)
	stored := func() []byte {
		var v []byte
		s.db.View(func(tx *bolt.Tx) error { v = bytes.Clone(ownerBucket(tx, h.Owner).Get(hostKey(h.ID))); return nil })
		return v
	}
	if !bytes.Equal(stored(), format1) {
		t.Fatal("opening the file rewrote the host")
	}
	got, err := s.Host(ctx, h.Owner, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.JumpHosts != nil || got.Name != h.Name || got.Version != 1 {
		t.Fatalf("the format 1 host reads as %+v", got)
	}
	got.Version, got.JumpHosts = 2, []sshdeck.JumpHost{{HostID: 1}}
	if err := s.UpdateHost(ctx, got); err != nil {
		t.Fatal(err)
	}
	if v := stored(); v[0] != hostFormat {
		t.Fatalf("the updated host is in format %d", v[0])
	}
	if again, err := s.Host(ctx, h.Owner, h.ID); err != nil || len(again.JumpHosts) != 1 || again.JumpHosts[0].HostID != 1 {
		t.Fatalf("the updated host: %+v, %v", again, err)
	}
}
