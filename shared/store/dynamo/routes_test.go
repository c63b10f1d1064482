package dynamo_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// TestRouteCalls counts the calls of the route paths that the sample events
// do not take (functions/replay_test.go pins those, through the functions):
// the authorizer's, and the conditional update and delete. Together they are
// the table "Calls per route" of README.md. Each step's calls must need
// only the IAM actions of its route (shared/store/dynamo/iam).
func TestRouteCalls(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	keyring, err := secret.NewLocalKeyring(make([]byte, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	svc := hosts.NewService(s, s, secret.NewSealer(keyring), nil)
	authn := auth.NewAuthenticator(s, s, nil)

	token, hash := auth.NewToken()
	if err := s.CreateUser(ctx, &sshdeck.User{ID: "u-1", Name: "alice", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, &sshdeck.Token{ID: "t-1", UserID: "u-1", Hash: hash, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	password := "hunter2"
	in := &hosts.Input{IP: "10.0.0.5", Username: "deploy", Password: &password}
	rec, err := svc.Create(ctx, "u-1", in)
	if err != nil {
		t.Fatal(err)
	}
	several := &hosts.Precondition{Versions: []int64{2, 3}}
	// A host behind rec, and a body naming it: the route is rec, hop.
	hop, err := svc.Create(ctx, "u-1", &hosts.Input{IP: "10.0.0.6", Username: "deploy", JumpHosts: []sshdeck.JumpHost{{HostID: rec.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	chained := &hosts.Input{IP: "10.0.0.7", Username: "deploy", JumpHosts: []sshdeck.JumpHost{{HostID: hop.ID}}}
	var behind *hosts.Record
	// A host with a tunnelConnection whose tunnel is running.
	newPassword := "hunter3"
	withTunnel := &hosts.Input{IP: "10.0.0.8", Username: "deploy", Password: &password,
		TunnelConnections: []hosts.TunnelInput{{SourcePort: 80, EndpointPort: 8080, EndpointHost: "web", AutoStart: true}}}
	var tunneled *hosts.Record

	steps := []struct {
		route string
		run   func() error
		want  map[string]int
	}{
		// A token never used: the miss touches it (TouchToken).
		{"authorizer, cache miss", func() error { _, err := authn.Authenticate(ctx, "Bearer "+token); return err }, map[string]int{"GetItem": 2, "UpdateItem": 1}},
		{"authorizer, cache hit", func() error { _, err := authn.Authenticate(ctx, "Bearer "+token); return err }, map[string]int{}},
		// Another authorizer's miss (an empty cache), within the minute of
		// the touch: no touch.
		{"authorizer, cache miss of a token used within the minute", func() error {
			_, err := auth.NewAuthenticator(s, s, nil).Authenticate(ctx, "Bearer "+token)
			return err
		}, map[string]int{"GetItem": 2}},
		// Every save lists the owner's tunnels (Query) for those it
		// concerns (shared/hosts, tunnels.go).
		{"update-host", func() error { _, err := svc.Update(ctx, "u-1", rec.ID, in, nil); return err }, map[string]int{"GetItem": 1, "PutItem": 1, "Query": 1}},
		{"update-host, a stale If-Match", func() error {
			_, err := svc.Update(ctx, "u-1", rec.ID, in, &hosts.Precondition{Versions: []int64{1}})
			if sshdeck.ErrorCode(err) == sshdeck.PreconditionFailed {
				return nil
			}
			return fmt.Errorf("a stale If-Match: %v, want PreconditionFailed", err)
		}, map[string]int{"GetItem": 1}},
		{"update-host, If-Match naming several versions", func() error { _, err := svc.Update(ctx, "u-1", rec.ID, in, several); return err }, map[string]int{"GetItem": 1, "PutItem": 1, "Query": 1}},
		// Each host of the route is read once: hop, then rec.
		{"create-host, behind a hop behind another", func() error { behind, err = svc.Create(ctx, "u-1", chained); return err },
			map[string]int{"GetItem": 2, "UpdateItem": 1, "TransactWriteItems": 1, "Query": 1}},
		{"update-host, behind a hop behind another", func() error { _, err := svc.Update(ctx, "u-1", behind.ID, chained, nil); return err },
			map[string]int{"GetItem": 3, "PutItem": 1, "Query": 1}},
		// A tunnelConnection: its tunnel read (GetItem) and created with
		// the owner's count (TransactWriteItems), named by the host's id;
		// the owner's first tunnel makes their count first (GetItem,
		// Query, TransactWriteItems: "Counted kinds"); having written a
		// tunnel of the host, the save reads the host again (GetItem) in
		// case a concurrent save of it committed since (shared/hosts).
		{"create-host, with a tunnelConnection", func() error { tunneled, err = svc.Create(ctx, "u-1", withTunnel); return err },
			map[string]int{"GetItem": 3, "UpdateItem": 1, "TransactWriteItems": 3, "Query": 2}},
		// The host's password changes: the tunnel restarts (GetItem,
		// UpdateItem), its own item unchanged and not written (GetItem).
		{"update-host, new credentials of a tunnel's source", func() error {
			withTunnel.Password = &newPassword
			_, err := svc.Update(ctx, "u-1", tunneled.ID, withTunnel, nil)
			return err
		}, map[string]int{"GetItem": 3, "PutItem": 1, "Query": 1, "UpdateItem": 1}},
		// Its item removed: the tunnel is deleted with the count.
		{"update-host, a tunnelConnection removed", func() error {
			withTunnel.TunnelConnections = nil
			_, err := svc.Update(ctx, "u-1", tunneled.ID, withTunnel, nil)
			return err
		}, map[string]int{"GetItem": 2, "PutItem": 1, "Query": 1, "TransactWriteItems": 1}}, // the host again, having deleted its tunnel
		// The host goes with its count of shortcuts (a BatchWriteItem).
		// The host is read once (its name tells the tunnels that name it),
		// and the owner's tunnels listed.
		{"delete-host, If-Match naming several versions", func() error { return svc.Delete(ctx, "u-1", rec.ID, several) }, map[string]int{"GetItem": 1, "TransactWriteItems": 1, "Query": 2, "BatchWriteItem": 1}},
	}
	for _, step := range steps {
		srv.ResetCalls()
		if err := step.run(); err != nil {
			t.Fatalf("%s: %v", step.route, err)
		}
		if got := srv.Calls(); !maps.Equal(got, step.want) {
			t.Errorf("%s: got calls %v, want %v", step.route, got, step.want)
		}
		who, _, _ := strings.Cut(step.route, ",")
		srv.CheckPolicy(t, step.route, granted(t, who))
	}
}

// callers names, per store method, the functions that call it (README.md,
// "Calls per route"): TestCallCounts checks each step's calls against the
// IAM policy of each. CreateToken serves the admin tooling alone (and
// fixtures), which has no policy of its own here.
var callers = map[string][]string{
	"Ping": {"healthz", "tunnel service"},
	"User": {"authorizer", "tunnel service", "get-me", "change-password", "create-totp", "enable-totp", "disable-totp",
		"update-user", "list-tokens", "create-token"},
	"TokenByHash": {"authorizer", "tunnel service"},
	// The authenticator's, on a miss, at most once a minute per token.
	"TouchToken": {"authorizer", "tunnel service"},

	// The accounts' (shared/accounts, shared/auth.Admin).
	"UserByName": {"login", "update-user"},
	"Users":      {"list-users"},
	"CreateUser": {"create-user"},
	"UpdateUser": {"update-user"},
	// Issue, of a login's token and of POST /tokens.
	"CreateTokenWithin": {"login", "create-token"},
	// gsi1: the caller's list, and the older tokens a revocation of all
	// finds there.
	"Tokens":           {"list-tokens", "change-password", "update-user"},
	"Token":            {"delete-token"},
	"RevokeToken":      {"delete-token", "change-password", "update-user"},
	"RevokeUserTokens": {"change-password", "update-user"},
	"LoginSecrets": {"login", "get-me", "change-password", "create-totp", "enable-totp", "disable-totp",
		"list-users", "update-user"},
	"PutLoginSecrets": {"login", "change-password", "create-totp", "enable-totp", "disable-totp", "create-user"},
	// The lockout: login's, and that of the routes that take a password
	// or a TOTP code.
	"Failures":   {"login", "change-password", "enable-totp", "disable-totp"},
	"AddFailure": {"login", "change-password", "enable-totp", "disable-totp"},

	"Host":       {"get-host", "update-host", "delete-host", "list-recent-files", "delete-recent-file", "list-shortcuts", "delete-shortcut"},
	"Hosts":      {"list-hosts"},
	"NextHostID": {"create-host"},
	"CreateHost": {"create-host"},
	"UpdateHost": {"update-host"},
	"DeleteHost": {"delete-host"},

	"PutRecentFile": {"add-recent-file"},
	"AddShortcut":   {"add-shortcut"},
	"Files":         {"list-recent-files", "list-shortcuts"},
	"DeleteFile":    {"delete-recent-file"},
	// DeleteFile of a shortcut, which only delete-shortcut makes.
	"DeleteFile(shortcut)": {"delete-shortcut"},

	"CreateAlert":  {"publish-alert"},
	"Alerts":       {"list-alerts", "dismiss-alert"},
	"DismissAlert": {"dismiss-alert"},
	"Dismissals":   {"list-alerts"},
	"DeleteAlert":  {"delete-alert"},

	"PutCacheEntry": {"releases-feed"},
	"CacheEntry":    {"releases-feed"},
	"CountBelow":    {"releases-feed"},

	// A host's save writes its owner's tunnels (shared/hosts, tunnels.go).
	// delete-host's PutTunnel restarts an existing tunnel (generation > 1:
	// UpdateItem, which it has), never creates one (PutItem, which it has
	// not): it is not held to every path of the method here.
	"PutTunnel":          {"tunnel service", "create-host", "update-host"},
	"CreateTunnel":       {"tunnel service", "create-host", "update-host"},
	"DeleteTunnel":       {"tunnel service", "update-host", "delete-host"},
	"StoppedTunnels":     {"tunnel service"},
	"Tunnel":             {"tunnel service", "create-host", "update-host", "delete-host"},
	"Tunnels":            {"tunnel service", "create-host", "update-host", "delete-host"},
	"RunnableTunnels":    {"tunnel service"},
	"SetTunnelStatus":    {"tunnel service"},
	"AcquireTunnelLease": {"tunnel service"},
	"ReleaseTunnelLease": {"tunnel service"},
	"KnownHost":          {"tunnel service"},
	"AddKnownHost":       {"tunnel service"},
}

// granted returns the IAM policy of who: a route, the authorizer or the
// tunnel service.
func granted(t *testing.T, who string) iam.Policy {
	t.Helper()
	return policyOf(t, who)
}

// policyOf is who's policy as shared/store/dynamo/iam has it.
func policyOf(t *testing.T, who string) iam.Policy {
	t.Helper()
	switch who {
	case "authorizer":
		return iam.AuthorizerPolicy()
	case "tunnel service":
		return iam.TunnelServicePolicy()
	}
	policy, ok := iam.RoutePolicy(who)
	if !ok {
		t.Fatalf("%s is neither a route nor the authorizer nor the tunnel service", who)
	}
	return policy
}

// TestTokenIndex: the index iam grants is the table's.
func TestTokenIndex(t *testing.T) {
	if iam.TokenIndex != schema.Index {
		t.Errorf("iam.TokenIndex %q, the table's index %q", iam.TokenIndex, schema.Index)
	}
}
