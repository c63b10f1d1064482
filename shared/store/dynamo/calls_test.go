package dynamo_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

func newHost(owner string, id, version int64) *sshdeck.Host {
	h := &sshdeck.Host{Owner: owner, ID: id, Version: version, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	h.Name = "web"
	h.Sealed.Password = []byte{0, 1, 2}
	return h
}

func mustCreateHosts(t *testing.T, s *dynamo.Store, owner string, n int) {
	t.Helper()
	for range n {
		id, err := s.NextHostID(t.Context(), owner)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateHost(t.Context(), newHost(owner, id, 1), 1000); err != nil {
			t.Fatal(err)
		}
	}
}

// newEntry returns an entry of kind at path, opened (and created) now.
func newEntry(owner string, hostID int64, kind sshdeck.FileKind, path string) *sshdeck.FileEntry {
	e := &sshdeck.FileEntry{Owner: owner, HostID: hostID, Kind: kind, Path: path, Name: path, CreatedAt: time.Now()}
	if kind == sshdeck.RecentFile {
		e.LastOpened = e.CreatedAt
	}
	return e
}

// wantAdded turns AddShortcut's answer into an error when added is not
// want.
func wantAdded(added bool, err error) func(want bool) error {
	return func(want bool) error {
		if err == nil && added != want {
			err = fmt.Errorf("AddShortcut: added %t, want %t", added, want)
		}
		return err
	}
}

// wantFailures turns the answer of Failures or AddFailure into an error
// when the count is not want.
func wantFailures(n int, _ time.Time, err error) func(want int) error {
	return func(want int) error {
		if err == nil && n != want {
			err = fmt.Errorf("got %d failures, want %d", n, want)
		}
		return err
	}
}

func newAlert(id string, now time.Time) *sshdeck.Alert {
	return &sshdeck.Alert{ID: id, Title: "Maintenance", ExpiresAt: now.Add(time.Hour), Priority: sshdeck.PriorityHigh, Type: sshdeck.AlertWarning, CreatedAt: now}
}

func newCacheEntry(k string, now time.Time) *sshdeck.CacheEntry {
	return &sshdeck.CacheEntry{Key: k, Value: []byte("feed"), StoredAt: now, KeepUntil: now.Add(time.Hour)}
}

func newTunnel(owner, name string, gen int64) *sshdeck.Tunnel {
	t := &sshdeck.Tunnel{Owner: owner, Name: name, Generation: gen, Run: true, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	t.Spec.Source.IP, t.Spec.Endpoint.IP = "10.0.0.5", "10.0.0.6"
	t.Sealed.Source.Password = []byte{0, 1, 2}
	t.Status.State = sshdeck.TunnelConnecting
	return t
}

// TestCallCounts pins the DynamoDB calls of each store method, in the order
// of a scenario; README.md adds them up per route. The calls of each step,
// failures included (a refused UpdateHost reads, a full recent list is
// trimmed by BatchWriteItem, AddShortcut at the limit reads), must need only
// the IAM actions of every function calling the method (callers).
func TestCallCounts(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	mustCreateHosts(t, s, "alice", 2)
	now := time.Now()

	steps := []struct {
		name string
		run  func() error
		code sshdeck.Code // of the error; "" for success
		want map[string]int
	}{
		{"Ping", func() error { return s.Ping(ctx) }, "", map[string]int{"GetItem": 1}},
		{"CreateUser", func() error {
			return s.CreateUser(ctx, &sshdeck.User{ID: "u-1", Name: "alice", CreatedAt: now})
		}, "", map[string]int{"TransactWriteItems": 1}},
		{"CreateUser of a taken name", func() error {
			return s.CreateUser(ctx, &sshdeck.User{ID: "u-2", Name: "alice", CreatedAt: now})
		}, sshdeck.Conflict, map[string]int{"TransactWriteItems": 1}},
		{"User", func() error { _, err := s.User(ctx, "u-1"); return err }, "", map[string]int{"GetItem": 1}},
		{"UserByName", func() error { _, err := s.UserByName(ctx, "alice"); return err }, "", map[string]int{"GetItem": 1}},
		{"Users", func() error { _, err := s.Users(ctx); return err }, "", map[string]int{"Query": 1}},
		{"CreateToken", func() error {
			return s.CreateToken(ctx, &sshdeck.Token{ID: "t-1", UserID: "u-1", Hash: "h-1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
		}, "", map[string]int{"TransactWriteItems": 1}},
		{"TokenByHash", func() error { _, err := s.TokenByHash(ctx, "h-1"); return err }, "", map[string]int{"GetItem": 1}},
		{"TouchToken", func() error { return s.TouchToken(ctx, "h-1", now) }, "", map[string]int{"UpdateItem": 1}},
		// Refused by the condition, which returns the item: no read.
		{"TouchToken at an earlier time", func() error { return s.TouchToken(ctx, "h-1", now.Add(-time.Minute)) }, "", map[string]int{"UpdateItem": 1}},
		{"TouchToken absent", func() error { return s.TouchToken(ctx, "h-none", now) }, sshdeck.NotFound, map[string]int{"UpdateItem": 1}},
		{"Tokens", func() error { _, err := s.Tokens(ctx, "u-1"); return err }, "", map[string]int{"Query": 1}},
		{"Token", func() error { _, err := s.Token(ctx, "t-1"); return err }, "", map[string]int{"GetItem": 2}},
		{"Token absent", func() error { _, err := s.Token(ctx, "t-none"); return err }, sshdeck.NotFound, map[string]int{"GetItem": 1}},
		{"RevokeToken", func() error { _, err := s.RevokeToken(ctx, "t-1", now); return err }, "", map[string]int{"GetItem": 2, "TransactWriteItems": 1}},
		{"RevokeToken again", func() error { _, err := s.RevokeToken(ctx, "t-1", now); return err }, "", map[string]int{"GetItem": 2}},
		{"CreateTokenWithin", func() error {
			return s.CreateTokenWithin(ctx, &sshdeck.Token{ID: "t-2", UserID: "u-1", Hash: "h-2", CreatedAt: now}, 1)
		}, "", map[string]int{"GetItem": 1, "Query": 1, "TransactWriteItems": 1}},
		{"CreateTokenWithin past the limit", func() error {
			return s.CreateTokenWithin(ctx, &sshdeck.Token{ID: "t-3", UserID: "u-1", Hash: "h-3", CreatedAt: now}, 1)
		}, sshdeck.LimitExceeded, map[string]int{"GetItem": 1, "Query": 1}},
		{"UpdateUser", func() error {
			yes := true
			_, err := s.UpdateUser(ctx, "u-1", sshdeck.UserChange{Disabled: &yes})
			return err
		}, "", map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		{"CreateTokenWithin for a disabled user", func() error {
			return s.CreateTokenWithin(ctx, &sshdeck.Token{ID: "t-3", UserID: "u-1", Hash: "h-3", CreatedAt: now}, 1)
		}, sshdeck.Conflict, map[string]int{"GetItem": 1}},
		// t-1 is revoked already; t-2 is listed (and not in the index
		// yet, or already: minidyn's index is at once).
		{"RevokeUserTokens", func() error {
			revoked, err := s.RevokeUserTokens(ctx, "u-1", now, "")
			if err == nil && len(revoked) != 1 {
				err = fmt.Errorf("RevokeUserTokens revoked %d tokens, want 1", len(revoked))
			}
			return err
		}, "", map[string]int{"Query": 2, "GetItem": 2, "TransactWriteItems": 1}},
		{"LoginSecrets absent", func() error { _, err := s.LoginSecrets(ctx, "u-1"); return err }, sshdeck.NotFound, map[string]int{"GetItem": 1}},
		{"PutLoginSecrets", func() error {
			return s.PutLoginSecrets(ctx, &sshdeck.LoginSecrets{UserID: "u-1", PasswordHash: "$argon2id$", Version: 1, UpdatedAt: now})
		}, "", map[string]int{"PutItem": 1}},
		{"PutLoginSecrets of the next version", func() error {
			return s.PutLoginSecrets(ctx, &sshdeck.LoginSecrets{UserID: "u-1", PasswordHash: "$argon2id$", TOTP: []byte{1}, Version: 2, UpdatedAt: now})
		}, "", map[string]int{"PutItem": 1}},
		{"PutLoginSecrets stale", func() error {
			return s.PutLoginSecrets(ctx, &sshdeck.LoginSecrets{UserID: "u-1", Version: 2, UpdatedAt: now})
		}, sshdeck.Conflict, map[string]int{"PutItem": 1}},
		{"LoginSecrets", func() error { _, err := s.LoginSecrets(ctx, "u-1"); return err }, "", map[string]int{"GetItem": 1}},
		{"Failures of an unknown key", func() error { return wantFailures(s.Failures(ctx, "name:a", now))(0) }, "", map[string]int{"GetItem": 1}},
		{"AddFailure", func() error { return wantFailures(s.AddFailure(ctx, "name:a", now, time.Minute))(1) }, "", map[string]int{"UpdateItem": 1}},
		{"AddFailure in the window", func() error { return wantFailures(s.AddFailure(ctx, "name:a", now, time.Minute))(2) }, "", map[string]int{"UpdateItem": 1}},
		{"Failures", func() error { return wantFailures(s.Failures(ctx, "name:a", now))(2) }, "", map[string]int{"GetItem": 1}},
		// The update's condition fails on the ended window; a put opens the
		// next.
		{"AddFailure after the window", func() error {
			return wantFailures(s.AddFailure(ctx, "name:a", now.Add(time.Minute), time.Minute))(1)
		}, "", map[string]int{"UpdateItem": 1, "PutItem": 1}},
		{"AddFailure of too long a key", func() error {
			_, _, err := s.AddFailure(ctx, strings.Repeat("k", sshdeck.MaxFailureKey+1), now, time.Minute)
			return err
		}, sshdeck.Internal, map[string]int{}},
		{"Host", func() error { _, err := s.Host(ctx, "alice", 1); return err }, "", map[string]int{"GetItem": 1}},
		{"Host absent", func() error { _, err := s.Host(ctx, "alice", 99); return err }, sshdeck.NotFound, map[string]int{"GetItem": 1}},
		{"Hosts", func() error { _, err := s.Hosts(ctx, "alice", 0, 0); return err }, "", map[string]int{"Query": 1}},
		{"Hosts, a page", func() error { _, err := s.Hosts(ctx, "alice", 1, 1); return err }, "", map[string]int{"Query": 1}},
		{"NextHostID", func() error { _, err := s.NextHostID(ctx, "alice"); return err }, "", map[string]int{"UpdateItem": 1}},
		{"CreateHost", func() error { return s.CreateHost(ctx, newHost("alice", 3, 1), 1000) }, "", map[string]int{"TransactWriteItems": 1}},
		{"CreateHost of an existing id", func() error { return s.CreateHost(ctx, newHost("alice", 3, 1), 1000) }, sshdeck.Conflict, map[string]int{"TransactWriteItems": 1}},
		// The first transaction requires the counter at or past the id; the
		// read of the counter, then one that raises it.
		{"CreateHost past the counter", func() error { return s.CreateHost(ctx, newHost("alice", 10, 1), 1000) }, "", map[string]int{"GetItem": 1, "TransactWriteItems": 2}},
		// The count is refused in the transaction, and the counter read
		// says why.
		{"CreateHost at the limit", func() error { return s.CreateHost(ctx, newHost("alice", 11, 1), 4) }, sshdeck.LimitExceeded, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		{"UpdateHost", func() error { return s.UpdateHost(ctx, newHost("alice", 1, 2)) }, "", map[string]int{"PutItem": 1}},
		{"UpdateHost stale", func() error { return s.UpdateHost(ctx, newHost("alice", 1, 2)) }, sshdeck.Conflict, map[string]int{"PutItem": 1, "GetItem": 1}},
		{"UpdateHost absent", func() error { return s.UpdateHost(ctx, newHost("alice", 99, 2)) }, sshdeck.NotFound, map[string]int{"PutItem": 1, "GetItem": 1}},
		{"PutRecentFile", func() error {
			return s.PutRecentFile(ctx, newEntry("alice", 1, sshdeck.RecentFile, "/a"), 2)
		}, "", map[string]int{"TransactWriteItems": 1, "Query": 1}},
		{"PutRecentFile again", func() error {
			return s.PutRecentFile(ctx, newEntry("alice", 1, sshdeck.RecentFile, "/b"), 2)
		}, "", map[string]int{"TransactWriteItems": 1, "Query": 1}},
		{"PutRecentFile beyond keep", func() error {
			return s.PutRecentFile(ctx, newEntry("alice", 1, sshdeck.RecentFile, "/c"), 2)
		}, "", map[string]int{"TransactWriteItems": 1, "Query": 1, "BatchWriteItem": 1}},
		{"PutRecentFile on an absent host", func() error {
			return s.PutRecentFile(ctx, newEntry("alice", 99, sshdeck.RecentFile, "/a"), 2)
		}, sshdeck.NotFound, map[string]int{"TransactWriteItems": 1}},
		{"AddShortcut", func() error {
			return wantAdded(s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, "/s"), 2))(true)
		}, "", map[string]int{"TransactWriteItems": 1}},
		{"AddShortcut again", func() error {
			return wantAdded(s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, "/s"), 2))(false)
		}, "", map[string]int{"TransactWriteItems": 1}},
		{"AddShortcut on an absent host", func() error {
			_, err := s.AddShortcut(ctx, newEntry("alice", 99, sshdeck.Shortcut, "/s"), 2)
			return err
		}, sshdeck.NotFound, map[string]int{"TransactWriteItems": 1}},
		// Refused by the count: the counter read says so, the entry's that
		// the path is new.
		{"AddShortcut at max", func() error {
			_, err := s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, "/t"), 1)
			return err
		}, sshdeck.LimitExceeded, map[string]int{"TransactWriteItems": 1, "GetItem": 2}},
		{"AddShortcut at max, again", func() error {
			return wantAdded(s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, "/s"), 1))(false)
		}, "", map[string]int{"TransactWriteItems": 1}},
		{"Files", func() error { _, err := s.Files(ctx, "alice", 1, sshdeck.RecentFile); return err }, "", map[string]int{"Query": 1}},
		{"DeleteFile", func() error { return s.DeleteFile(ctx, "alice", 1, sshdeck.RecentFile, "/c") }, "", map[string]int{"DeleteItem": 1}},
		{"DeleteFile absent", func() error { return s.DeleteFile(ctx, "alice", 1, sshdeck.RecentFile, "/c") }, sshdeck.NotFound, map[string]int{"DeleteItem": 1}},
		// A shortcut's delete is a transaction with its host's count.
		{"DeleteFile(shortcut)", func() error { return s.DeleteFile(ctx, "alice", 1, sshdeck.Shortcut, "/s") }, "", map[string]int{"TransactWriteItems": 1}},
		{"DeleteFile(shortcut) absent", func() error { return s.DeleteFile(ctx, "alice", 1, sshdeck.Shortcut, "/s") }, sshdeck.NotFound, map[string]int{"TransactWriteItems": 1}},
		{"DeleteHost at another version", func() error { return s.DeleteHost(ctx, "alice", 1, 1) }, sshdeck.Conflict, map[string]int{"TransactWriteItems": 1, "GetItem": 1}},
		// Host 1 has a recent entry and its count of shortcuts, host 2 its
		// count alone.
		{"DeleteHost at its version, with entries", func() error { return s.DeleteHost(ctx, "alice", 1, 2) }, "", map[string]int{"TransactWriteItems": 1, "Query": 1, "BatchWriteItem": 1}},
		{"DeleteHost at any version, without entries", func() error { return s.DeleteHost(ctx, "alice", 2, 0) }, "", map[string]int{"TransactWriteItems": 1, "Query": 1, "BatchWriteItem": 1}},
		{"DeleteHost absent", func() error { return s.DeleteHost(ctx, "alice", 2, 0) }, sshdeck.NotFound, map[string]int{"TransactWriteItems": 1}},
		{"CreateAlert", func() error { return s.CreateAlert(ctx, newAlert("alr_1", now)) }, "", map[string]int{"PutItem": 1}},
		{"CreateAlert of an existing id", func() error { return s.CreateAlert(ctx, newAlert("alr_1", now)) }, sshdeck.Conflict, map[string]int{"PutItem": 1}},
		{"Alerts", func() error { _, err := s.Alerts(ctx, now); return err }, "", map[string]int{"Query": 1}},
		{"DismissAlert", func() error {
			return s.DismissAlert(ctx, &sshdeck.Dismissal{UserID: "u-1", AlertID: "alr_1", At: now, Until: now.Add(time.Hour)})
		}, "", map[string]int{"PutItem": 1}},
		{"Dismissals", func() error { _, err := s.Dismissals(ctx, "u-1", now); return err }, "", map[string]int{"Query": 1}},
		{"DeleteAlert", func() error { return s.DeleteAlert(ctx, "alr_1") }, "", map[string]int{"DeleteItem": 1}},
		{"DeleteAlert absent", func() error { return s.DeleteAlert(ctx, "alr_1") }, sshdeck.NotFound, map[string]int{"DeleteItem": 1}},
		{"PutCacheEntry", func() error { return s.PutCacheEntry(ctx, newCacheEntry("k", now)) }, "", map[string]int{"PutItem": 1}},
		{"PutCacheEntry too large", func() error {
			e := newCacheEntry("k", now)
			e.Value = make([]byte, sshdeck.MaxCacheValue+1)
			return s.PutCacheEntry(ctx, e)
		}, sshdeck.TooLarge, map[string]int{}},
		{"CacheEntry", func() error { _, err := s.CacheEntry(ctx, "k", now); return err }, "", map[string]int{"GetItem": 1}},
		{"CountBelow", func() error {
			added, err := s.CountBelow(ctx, "calls/k", 1, now.Add(time.Minute))
			if err == nil && !added {
				err = fmt.Errorf("CountBelow did not add")
			}
			return err
		}, "", map[string]int{"UpdateItem": 1}},
		{"CountBelow at the limit", func() error {
			added, err := s.CountBelow(ctx, "calls/k", 1, now.Add(time.Minute))
			if err == nil && added {
				err = fmt.Errorf("CountBelow added past the limit")
			}
			return err
		}, "", map[string]int{"UpdateItem": 1}},
		{"CacheEntry absent", func() error { _, err := s.CacheEntry(ctx, "other", now); return err }, sshdeck.NotFound, map[string]int{"GetItem": 1}},
		// The owner's first tunnel: the transaction fails on the absent
		// count, which is read, counted and put with the tunnel.
		{"PutTunnel", func() error { return s.PutTunnel(ctx, newTunnel("usr_a", "db", 1)) }, "", map[string]int{"TransactWriteItems": 2, "GetItem": 1, "Query": 1}},
		{"PutTunnel of an existing name", func() error { return s.PutTunnel(ctx, newTunnel("usr_a", "db", 1)) }, sshdeck.Conflict, map[string]int{"TransactWriteItems": 1}},
		{"CreateTunnel", func() error { return s.CreateTunnel(ctx, newTunnel("usr_a", "api", 1), 3) }, "", map[string]int{"TransactWriteItems": 1}},
		{"CreateTunnel at the limit", func() error { return s.CreateTunnel(ctx, newTunnel("usr_a", "gw", 1), 2) }, sshdeck.LimitExceeded, map[string]int{"TransactWriteItems": 1, "GetItem": 2}},
		{"CreateTunnel of an existing name", func() error { return s.CreateTunnel(ctx, newTunnel("usr_a", "api", 1), 3) }, sshdeck.Conflict, map[string]int{"TransactWriteItems": 1}},
		{"DeleteTunnel", func() error { return s.DeleteTunnel(ctx, "usr_a", "api", 0) }, "", map[string]int{"TransactWriteItems": 1}},
		{"DeleteTunnel absent", func() error { return s.DeleteTunnel(ctx, "usr_a", "api", 0) }, sshdeck.NotFound, map[string]int{"TransactWriteItems": 1, "GetItem": 1}},
		{"DeleteTunnel at another generation", func() error { return s.DeleteTunnel(ctx, "usr_a", "db", 7) }, sshdeck.Conflict, map[string]int{"TransactWriteItems": 1, "GetItem": 1}},
		{"StoppedTunnels", func() error { _, err := s.StoppedTunnels(ctx, now); return err }, "", map[string]int{"Query": 1}},
		{"PutTunnel at the next generation", func() error { return s.PutTunnel(ctx, newTunnel("usr_a", "db", 2)) }, "", map[string]int{"UpdateItem": 1}},
		{"PutTunnel stale", func() error { return s.PutTunnel(ctx, newTunnel("usr_a", "db", 2)) }, sshdeck.Conflict, map[string]int{"UpdateItem": 1}},
		{"PutTunnel absent", func() error { return s.PutTunnel(ctx, newTunnel("usr_a", "web", 2)) }, sshdeck.Conflict, map[string]int{"UpdateItem": 1}},
		{"Tunnel", func() error { _, err := s.Tunnel(ctx, "usr_a", "db"); return err }, "", map[string]int{"GetItem": 1}},
		{"Tunnel absent", func() error { _, err := s.Tunnel(ctx, "usr_a", "web"); return err }, sshdeck.NotFound, map[string]int{"GetItem": 1}},
		{"Tunnels", func() error { _, err := s.Tunnels(ctx, "usr_a"); return err }, "", map[string]int{"Query": 1}},
		{"RunnableTunnels", func() error { _, err := s.RunnableTunnels(ctx); return err }, "", map[string]int{"Query": 1}},
		{"AcquireTunnelLease", func() error {
			_, err := s.AcquireTunnelLease(ctx, "usr_a", "db", "replica-1", now, now.Add(time.Minute))
			return err
		}, "", map[string]int{"UpdateItem": 1}},
		{"AcquireTunnelLease held by another", func() error {
			_, err := s.AcquireTunnelLease(ctx, "usr_a", "db", "replica-2", now, now.Add(time.Minute))
			return err
		}, sshdeck.Conflict, map[string]int{"UpdateItem": 1}},
		{"AcquireTunnelLease absent", func() error {
			_, err := s.AcquireTunnelLease(ctx, "usr_a", "web", "replica-1", now, now.Add(time.Minute))
			return err
		}, sshdeck.NotFound, map[string]int{"UpdateItem": 1}},
		{"SetTunnelStatus", func() error {
			return s.SetTunnelStatus(ctx, "usr_a", "db", 2, "replica-1", &sshdeck.TunnelStatus{State: sshdeck.TunnelConnected, UpdatedAt: now})
		}, "", map[string]int{"UpdateItem": 1}},
		{"SetTunnelStatus by another holder", func() error {
			return s.SetTunnelStatus(ctx, "usr_a", "db", 2, "replica-2", &sshdeck.TunnelStatus{State: sshdeck.TunnelConnected, UpdatedAt: now})
		}, sshdeck.Conflict, map[string]int{"UpdateItem": 1}},
		{"SetTunnelStatus absent", func() error {
			return s.SetTunnelStatus(ctx, "usr_a", "web", 2, "replica-1", &sshdeck.TunnelStatus{State: sshdeck.TunnelConnected, UpdatedAt: now})
		}, sshdeck.NotFound, map[string]int{"UpdateItem": 1}},
		{"ReleaseTunnelLease by another holder", func() error { return s.ReleaseTunnelLease(ctx, "usr_a", "db", "replica-2") }, "", map[string]int{"UpdateItem": 1}},
		{"ReleaseTunnelLease", func() error { return s.ReleaseTunnelLease(ctx, "usr_a", "db", "replica-1") }, "", map[string]int{"UpdateItem": 1}},
		{"ReleaseTunnelLease absent", func() error { return s.ReleaseTunnelLease(ctx, "usr_a", "web", "replica-1") }, "", map[string]int{"UpdateItem": 1}},
		{"AddKnownHost", func() error {
			return s.AddKnownHost(ctx, &sshdeck.KnownHost{Owner: "usr_a", Addr: "10.0.0.5:22", Key: "ssh-ed25519 AAAA", CreatedAt: now})
		}, "", map[string]int{"PutItem": 1}},
		{"AddKnownHost of a known address", func() error {
			return s.AddKnownHost(ctx, &sshdeck.KnownHost{Owner: "usr_a", Addr: "10.0.0.5:22", Key: "ssh-ed25519 BBBB", CreatedAt: now})
		}, sshdeck.Conflict, map[string]int{"PutItem": 1}},
		{"KnownHost", func() error { _, err := s.KnownHost(ctx, "usr_a", "10.0.0.5:22"); return err }, "", map[string]int{"GetItem": 1}},
		{"KnownHost absent", func() error { _, err := s.KnownHost(ctx, "usr_a", "10.0.0.6:22"); return err }, sshdeck.NotFound, map[string]int{"GetItem": 1}},
	}
	stepped := map[string]bool{}
	for _, step := range steps {
		srv.ResetCalls()
		err := step.run()
		if step.code == "" && err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := sshdeck.ErrorCode(err); step.code != "" && got != step.code {
			t.Fatalf("%s: got error %v, want code %s", step.name, err, step.code)
		}
		if got := srv.Calls(); !maps.Equal(got, step.want) {
			t.Errorf("%s: got calls %v, want %v", step.name, got, step.want)
		}
		method, _, _ := strings.Cut(step.name, " ")
		for _, who := range callers[method] {
			srv.CheckPolicy(t, step.name+" in "+who, granted(t, who))
		}
		stepped[method] = true
	}
	for method := range callers {
		if !stepped[method] {
			t.Errorf("callers names %s, which no step calls", method)
		}
	}
}

// TestPagination lists more items than fit in a page: every list follows
// LastEvaluatedKey to the end, in order.
func TestPagination(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	dynamo.SetPageSize(s, 2)
	mustCreateHosts(t, s, "alice", 5)
	for i := range 5 {
		u := &sshdeck.User{ID: fmt.Sprintf("u-%d", i), Name: fmt.Sprintf("user-%d", i), CreatedAt: time.Now()}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		k := &sshdeck.Token{ID: fmt.Sprintf("t-%d", i), UserID: "u-0", Hash: fmt.Sprintf("h-%d", i), CreatedAt: time.Now()}
		if err := s.CreateToken(ctx, k); err != nil {
			t.Fatal(err)
		}
	}

	srv.ResetCalls()
	hosts, err := s.Hosts(ctx, "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, h := range hosts {
		ids = append(ids, h.ID)
	}
	if got := fmt.Sprint(ids); got != "[1 2 3 4 5]" {
		t.Errorf("Hosts: got ids %s, want [1 2 3 4 5]", got)
	}
	// Pages of 2, 2 and 1 host: the last one is short, so it is the last.
	if n := srv.Calls()["Query"]; n != 3 {
		t.Errorf("Hosts made %d Query calls, want 3", n)
	}

	users, err := s.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := s.Tokens(ctx, "u-0")
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 5 || len(tokens) != 5 {
		t.Errorf("got %d users and %d tokens, want 5 of each", len(users), len(tokens))
	}

	// Tunnels and RunnableTunnels read every page, in order; the filter of
	// RunnableTunnels leaves pages short or empty, which are not the last
	// for that. (minidyn pages a filtered Query its own way, so only the
	// tunnels are checked there, not the calls.)
	for i := range 5 {
		for _, owner := range []string{"usr_a", "usr_b"} {
			tn := newTunnel(owner, fmt.Sprintf("t%d", i), 1)
			tn.Run = i%2 == 0
			if err := s.PutTunnel(ctx, tn); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv.ResetCalls()
	tunnels, err := s.Tunnels(ctx, "usr_b")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tunnelNames(tunnels)); got != "[usr_b/t0 usr_b/t1 usr_b/t2 usr_b/t3 usr_b/t4]" {
		t.Errorf("Tunnels: got %s", got)
	}
	if n := srv.Calls()["Query"]; n != 3 {
		t.Errorf("Tunnels made %d Query calls, want 3", n)
	}
	tunnels, err = s.RunnableTunnels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tunnelNames(tunnels)); got != "[usr_a/t0 usr_a/t2 usr_a/t4 usr_b/t0 usr_b/t2 usr_b/t4]" {
		t.Errorf("RunnableTunnels: got %s", got)
	}

	// The trim of recent entries reads them all: it keeps 3 of 5, not of the
	// first page's 2. Files returns them all.
	start := time.Now()
	for i := range 5 {
		e := newEntry("alice", 1, sshdeck.RecentFile, fmt.Sprintf("/r%d", i))
		e.LastOpened = start.Add(time.Duration(i) * time.Minute)
		if err := s.PutRecentFile(ctx, e, 3); err != nil {
			t.Fatal(err)
		}
	}
	recent, err := s.Files(ctx, "alice", 1, sshdeck.RecentFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(filePaths(recent)); got != "[/r4 /r3 /r2]" {
		t.Errorf("recent entries after 5 puts keeping 3: got %s, want [/r4 /r3 /r2]", got)
	}
	// AddShortcut counts them all: the sixth of at most 5 is refused.
	for i := range 5 {
		if added, err := s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, fmt.Sprintf("/s%d", i)), 5); err != nil || !added {
			t.Fatalf("AddShortcut %d of 5: got %t, %v", i, added, err)
		}
	}
	_, err = s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, "/s5"), 5)
	if code := sshdeck.ErrorCode(err); code != sshdeck.LimitExceeded {
		t.Errorf("AddShortcut 6 of 5: got %v, want limit_exceeded", err)
	}
	if shortcuts, err := s.Files(ctx, "alice", 1, sshdeck.Shortcut); err != nil || len(shortcuts) != 5 {
		t.Errorf("shortcuts: got %d, %v; want 5", len(shortcuts), err)
	}

	// DeleteHost takes 50 entries: every page of them, 25 per batch.
	plain := dynamo.New(srv.Client, srv.Table)
	for i := range 30 {
		if err := plain.PutRecentFile(ctx, newEntry("alice", 2, sshdeck.RecentFile, fmt.Sprintf("/r%d", i)), 100); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		if _, err := plain.AddShortcut(ctx, newEntry("alice", 2, sshdeck.Shortcut, fmt.Sprintf("/s%d", i)), 100); err != nil {
			t.Fatal(err)
		}
	}
	srv.ResetCalls()
	if err := s.DeleteHost(ctx, "alice", 2, 0); err != nil {
		t.Fatal(err)
	}
	// 50 entries and the count of shortcuts: 25 full pages of 2, then a
	// page of 1. Three batches: two full, one of 1.
	want := map[string]int{"TransactWriteItems": 1, "Query": 26, "BatchWriteItem": 3}
	if got := srv.Calls(); !maps.Equal(got, want) {
		t.Errorf("DeleteHost of a host with 50 entries: got calls %v, want %v", got, want)
	}
	if n := countItems(t, srv, "OWNER#alice", "FILE#0000000000000000002#"); n != 0 {
		t.Errorf("DeleteHost left %d of its 50 entries", n)
	}
	if n := countItems(t, srv, "OWNER#alice", "FILE#0000000000000000001#"); n != 9 {
		t.Errorf("host 1 has %d entries (and its count) after deleting host 2, want 8 and 1", n)
	}
}

func tunnelNames(ts []*sshdeck.Tunnel) []string {
	var names []string
	for _, t := range ts {
		names = append(names, t.Owner+"/"+t.Name)
	}
	return names
}

func filePaths(es []*sshdeck.FileEntry) []string {
	var ps []string
	for _, e := range es {
		ps = append(ps, e.Path)
	}
	return ps
}

// countItems counts the items of a partition whose sort key begins with
// prefix, straight from the table.
func countItems(t *testing.T, srv *dynamotest.Server, pk, prefix string) int {
	t.Helper()
	out, err := srv.Client.Query(t.Context(), &dynamodb.QueryInput{
		TableName:                 &srv.Table,
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :prefix)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}, ":prefix": &types.AttributeValueMemberS{Value: prefix}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

// reads records whether each read asked for strong consistency, which
// minidyn, always consistent, cannot show.
type reads struct {
	dynamo.API
	consistent []bool
}

func (r *reads) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.consistent = append(r.consistent, aws.ToBool(in.ConsistentRead))
	return r.API.GetItem(ctx, in, optFns...)
}

func (r *reads) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.consistent = append(r.consistent, aws.ToBool(in.ConsistentRead))
	return r.API.Query(ctx, in, optFns...)
}

// TestConsistentReads checks that every read of the base table is strongly
// consistent, so that a write is seen by the next request: only Ping (which
// reads nothing), Tokens (an index cannot be read consistently) and
// CacheEntry (a cache may be a moment stale) are not.
func TestConsistentReads(t *testing.T) {
	ctx := t.Context()
	_, srv := start(t)
	r := &reads{API: srv.Client}
	s := dynamo.New(r, srv.Table)
	mustCreateHosts(t, s, "alice", 2)
	// Host 2 has an entry of each kind for DeleteHost to query and delete.
	if err := s.PutRecentFile(ctx, newEntry("alice", 2, sshdeck.RecentFile, "/r"), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddShortcut(ctx, newEntry("alice", 2, sshdeck.Shortcut, "/s"), 1); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"User":        func() error { _, err := s.User(ctx, "u-1"); return err },
		"UserByName":  func() error { _, err := s.UserByName(ctx, "alice"); return err },
		"Users":       func() error { _, err := s.Users(ctx); return err },
		"TokenByHash": func() error { _, err := s.TokenByHash(ctx, "h-1"); return err },
		"RevokeToken": func() error { _, err := s.RevokeToken(ctx, "t-1", time.Now()); return err },
		"Host":        func() error { _, err := s.Host(ctx, "alice", 1); return err },
		"Hosts":       func() error { _, err := s.Hosts(ctx, "alice", 0, 0); return err },
		// Refused by the count: the read of the counter (host 1 is always
		// there: its DeleteHost below names another version).
		"CreateHost": func() error { return s.CreateHost(ctx, newHost("alice", 99, 1), 1) },
		"UpdateHost": func() error { return s.UpdateHost(ctx, newHost("alice", 1, 5)) },
		"DeleteHost": func() error { return s.DeleteHost(ctx, "alice", 1, 5) },
		"DeleteHost with entries": func() error {
			// The query after the delete, which must see every entry.
			if err := s.DeleteHost(ctx, "alice", 2, 0); err != nil || len(r.consistent) != 1 {
				t.Errorf("DeleteHost with entries: got %v after %d reads, want success after 1", err, len(r.consistent))
			}
			return nil
		},
		"PutRecentFile": func() error {
			return s.PutRecentFile(ctx, newEntry("alice", 1, sshdeck.RecentFile, "/a"), 1)
		},
		"AddShortcut at max": func() error {
			// The reads of the counter and of the entry (the first add
			// fills host 1 up to 1, unless it is full already).
			s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, "/a"), 1)
			r.consistent = nil
			_, err := s.AddShortcut(ctx, newEntry("alice", 1, sshdeck.Shortcut, "/b"), 1)
			if sshdeck.ErrorCode(err) != sshdeck.LimitExceeded || len(r.consistent) != 2 {
				t.Errorf("AddShortcut at max: got %v after %d reads, want limit_exceeded after 2", err, len(r.consistent))
			}
			return nil
		},
		"Tunnel":          func() error { _, err := s.Tunnel(ctx, "alice", "db"); return err },
		"Tunnels":         func() error { _, err := s.Tunnels(ctx, "alice"); return err },
		"RunnableTunnels": func() error { _, err := s.RunnableTunnels(ctx); return err },
		"StoppedTunnels":  func() error { _, err := s.StoppedTunnels(ctx, time.Now()); return err },
		"KnownHost":       func() error { _, err := s.KnownHost(ctx, "alice", "10.0.0.5:22"); return err },
		"Files":           func() error { _, err := s.Files(ctx, "alice", 1, sshdeck.RecentFile); return err },
		"Alerts":          func() error { _, err := s.Alerts(ctx, time.Now()); return err },
		"LoginSecrets":    func() error { _, err := s.LoginSecrets(ctx, "u-1"); return err },
		"Failures":        func() error { _, _, err := s.Failures(ctx, "name:a", time.Now()); return err },
		"Dismissals":      func() error { _, err := s.Dismissals(ctx, "u-1", time.Now()); return err },
	}
	for name, read := range calls {
		r.consistent = nil
		read() // the outcome does not matter, only the reads made
		if len(r.consistent) == 0 || slices.Contains(r.consistent, false) {
			t.Errorf("%s: reads' ConsistentRead: %v, want all true", name, r.consistent)
		}
	}

	// The cache's one read is eventually consistent: half the read units.
	if err := s.PutCacheEntry(ctx, newCacheEntry("k", time.Now())); err != nil {
		t.Fatal(err)
	}
	r.consistent = nil
	if _, err := s.CacheEntry(ctx, "k", time.Now()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.consistent, []bool{false}) {
		t.Errorf("CacheEntry: reads' ConsistentRead: %v, want one eventually consistent read", r.consistent)
	}
}
