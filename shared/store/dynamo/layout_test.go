package dynamo_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The tests in this file read and write items as stored: the layout is what
// README.md documents and the CDK stack's TTL setting relies on.

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
}

func rawItem(t *testing.T, srv *dynamotest.Server, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := srv.Client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &srv.Table, Key: key(pk, sk)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item == nil {
		t.Fatalf("no item at %s / %s", pk, sk)
	}
	return out.Item
}

func putRaw(t *testing.T, srv *dynamotest.Server, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := srv.Client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: &srv.Table, Item: item}); err != nil {
		t.Fatal(err)
	}
}

// attr returns the item's attribute as text: "S:x", "N:1", "BOOL:true",
// "B:<hex>", or "-" when absent.
func attr(item map[string]types.AttributeValue, name string) string {
	switch v := item[name].(type) {
	case nil:
		return "-"
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf("BOOL:%t", v.Value)
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("B:%x", v.Value)
	default:
		return fmt.Sprintf("%T", v)
	}
}

func TestHostItem(t *testing.T) {
	s, srv := start(t)
	h := newHost("alice", 1, 1)
	h.CreatedAt = time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.FixedZone("UTC+2", 2*3600))
	h.Sealed.Key = []byte{0xff, 0x00}
	h.JumpHosts = []sshdeck.JumpHost{{HostID: 7}, {HostID: 1 << 40}}
	if _, err := s.NextHostID(t.Context(), "alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateHost(t.Context(), h, 1000); err != nil {
		t.Fatal(err)
	}

	item := rawItem(t, srv, "OWNER#alice", "HOST#0000000000000000001")
	for name, want := range map[string]string{
		"id": "N:1", "version": "N:1", "owner": "S:alice", "name": "S:web",
		"createdAt": "S:2025-03-14T13:09:26.535Z", "gsi1pk": "-", "ttl": "-",
	} {
		if got := attr(item, name); got != want {
			t.Errorf("host item's %s: got %s, want %s", name, got, want)
		}
	}
	sealed, ok := item["sealed"].(*types.AttributeValueMemberM)
	if !ok {
		t.Fatalf("host item's sealed: got %T, want a map", item["sealed"])
	}
	for name, want := range map[string]string{"password": "B:000102", "key": "B:ff00", "keyPassword": "-"} {
		if got := attr(sealed.Value, name); got != want {
			t.Errorf("host item's sealed.%s: got %s, want %s", name, got, want)
		}
	}
	// jumpHosts is an L of N, in the chain's order.
	var hops []string
	if l, ok := item["jumpHosts"].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			hops = append(hops, attr(map[string]types.AttributeValue{"v": v}, "v"))
		}
	}
	if got := strings.Join(hops, " "); got != "N:7 N:1099511627776" {
		t.Errorf("host item's jumpHosts: got %#v, want an L of N:7, N:1099511627776", item["jumpHosts"])
	}
	if got, err := s.Host(t.Context(), "alice", 1); err != nil || len(got.JumpHosts) != 2 || got.JumpHosts[1].HostID != 1<<40 {
		t.Errorf("the host read back: %+v, %v", got, err)
	}
	if got := attr(rawItem(t, srv, "OWNER#alice", "SEQ#HOST"), "n"); got != "N:1" {
		t.Errorf("counter item's n: got %s, want N:1", got)
	}
}

func TestTokenItems(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	created := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	forever := &sshdeck.Token{ID: "t-1", UserID: "u-1", Hash: "h-1", CreatedAt: created}
	expiring := &sshdeck.Token{ID: "t-2", UserID: "u-1", Hash: "h-2", CreatedAt: created, ExpiresAt: created.Add(time.Hour)}
	for _, k := range []*sshdeck.Token{forever, expiring} {
		if err := s.CreateToken(ctx, k); err != nil {
			t.Fatal(err)
		}
	}

	item := rawItem(t, srv, "TOKEN#h-1", "TOKEN")
	for name, want := range map[string]string{
		"gsi1pk": "S:USER#u-1", "gsi1sk": "S:TOKEN#2025-03-14T15:09:26.535000000Z#t-1",
		"revoked": "BOOL:false", "expiresAt": "-", "revokedAt": "-", "ttl": "-",
	} {
		if got := attr(item, name); got != want {
			t.Errorf("never-expiring token's %s: got %s, want %s", name, got, want)
		}
	}
	if got := attr(rawItem(t, srv, "TOKENID#t-1", "TOKENID"), "ttl"); got != "-" {
		t.Errorf("never-expiring token's pointer has ttl %s", got)
	}

	// Purgeable 30 days after expiry, both items.
	wantTTL := fmt.Sprintf("N:%d", expiring.ExpiresAt.Add(30*24*time.Hour).Unix())
	for _, item := range []map[string]types.AttributeValue{
		rawItem(t, srv, "TOKEN#h-2", "TOKEN"), rawItem(t, srv, "TOKENID#t-2", "TOKENID"),
	} {
		if got := attr(item, "ttl"); got != wantTTL {
			t.Errorf("expiring token's %s ttl: got %s, want %s", attr(item, "sk"), got, wantTTL)
		}
	}

	if _, err := s.RevokeToken(ctx, "t-1", created.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	item = rawItem(t, srv, "TOKEN#h-1", "TOKEN")
	if got := attr(item, "revoked") + " " + attr(item, "revokedAt"); got != "BOOL:true S:2025-03-14T15:10:26.535Z" {
		t.Errorf("revoked token: got %s", got)
	}
	// Neither made with scopes nor used: no scopes, no lastUsedAt.
	for _, name := range []string{"scopes", "lastUsedAt"} {
		if got := attr(item, name); got != "-" {
			t.Errorf("token without scopes, never used: %s %s", name, got)
		}
	}
}

// TestTokenScopesAndUse checks a token's scopes (a List of String in the
// token's order) and lastUsedAt (fixed-width UTC, which TouchToken's
// condition compares as text), and that a touch names no other attribute:
// a revoked token keeps revoked, revokedAt, ttl and sv.
func TestTokenScopesAndUse(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	created := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	k := &sshdeck.Token{
		ID: "t-1", UserID: "u-1", Hash: "h-1", CreatedAt: created, ExpiresAt: created.Add(time.Hour),
		Scopes: []sshdeck.Scope{sshdeck.ScopeTokens, sshdeck.ScopeHostsRead}, LastUsedAt: created.Add(time.Second),
	}
	if err := s.CreateToken(ctx, k); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, srv, "TOKEN#h-1", "TOKEN")
	if got := strings.Join(listAttr(t, item, "scopes"), " "); got != "S:tokens S:hosts:read" {
		t.Errorf("token's scopes: got %s", got)
	}
	if got := attr(item, "lastUsedAt"); got != "S:2025-03-14T15:09:27.535000000Z" {
		t.Errorf("token's lastUsedAt: got %s", got)
	}
	if _, err := s.RevokeToken(ctx, "t-1", created.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	before := rawItem(t, srv, "TOKEN#h-1", "TOKEN")
	if err := s.TouchToken(ctx, "h-1", created.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	after := rawItem(t, srv, "TOKEN#h-1", "TOKEN")
	if got := attr(after, "lastUsedAt"); got != "S:2025-03-14T15:11:26.535000000Z" {
		t.Errorf("touched token's lastUsedAt: got %s", got)
	}
	after["lastUsedAt"] = before["lastUsedAt"]
	if got, want := itemJSON(t, after), itemJSON(t, before); got != want {
		t.Errorf("TouchToken changed more than lastUsedAt:\n got  %s\n want %s", got, want)
	}
}

// listAttr returns the elements of the item's List attribute name as attr
// shows them, failing the test if it is no list.
func listAttr(t *testing.T, item map[string]types.AttributeValue, name string) []string {
	t.Helper()
	l, ok := item[name].(*types.AttributeValueMemberL)
	if !ok {
		t.Fatalf("%s: got %T, want a list", name, item[name])
	}
	var out []string
	for _, e := range l.Value {
		out = append(out, attr(map[string]types.AttributeValue{"e": e}, "e"))
	}
	return out
}

// TestHostsSelectOnlyHosts puts other kinds of items into the owner's
// partition, around the hosts' sort keys: Hosts returns the hosts alone.
func TestHostsSelectOnlyHosts(t *testing.T) {
	s, srv := start(t)
	mustCreateHosts(t, s, "alice", 2)
	for _, sk := range []string{"FILE#0000000000000000001#/etc/hosts", "HOST", "HOSTS", "TUNNEL#1", "KNOWNHOST#10.0.0.5:22", "~"} {
		item := key("OWNER#alice", sk)
		item["id"] = &types.AttributeValueMemberN{Value: "7"}
		putRaw(t, srv, item)
	}
	hosts, err := s.Hosts(t.Context(), "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 2 || hosts[0].ID != 1 || hosts[1].ID != 2 {
		t.Fatalf("Hosts: got %d hosts (%+v), want hosts 1 and 2", len(hosts), hosts)
	}
}

// TestUndecodableItem checks that an item that does not decode is an
// internal error which does not quote the item.
func TestUndecodableItem(t *testing.T) {
	s, srv := start(t)
	item := key("OWNER#alice", "HOST#0000000000000000001")
	item["id"] = &types.AttributeValueMemberN{Value: "1"}
	item["createdAt"] = &types.AttributeValueMemberS{Value: "secret-value"}
	putRaw(t, srv, item)

	_, err := s.Host(t.Context(), "alice", 1)
	if code := sshdeck.ErrorCode(err); code != sshdeck.Internal {
		t.Fatalf("Host of an undecodable item: got %v (code %q), want an internal error", err, code)
	}
	if strings.Contains(err.Error(), "secret-value") {
		t.Fatalf("the error quotes the item: %v", err)
	}
	_, err = s.Hosts(t.Context(), "alice", 0, 0)
	if err == nil || strings.Contains(err.Error(), "secret-value") {
		t.Fatalf("Hosts of an undecodable item: got %v", err)
	}
}

// TestUserItems checks the two items of a user: one at its id (User), one
// at its name in the USERNAMES partition (UserByName, Users).
func TestUserItems(t *testing.T) {
	s, srv := start(t)
	u := &sshdeck.User{ID: "u-1", Name: "alice", Admin: true, CreatedAt: time.Now()}
	if err := s.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	for _, item := range []map[string]types.AttributeValue{
		rawItem(t, srv, "USER#u-1", "USER"), rawItem(t, srv, "USERNAMES", "alice"),
	} {
		if got := attr(item, "id") + " " + attr(item, "name") + " " + attr(item, "admin"); got != "S:u-1 S:alice BOOL:true" {
			t.Errorf("user item at %s: got %s", attr(item, "pk"), got)
		}
	}
}

// TestEmptyAndNil round-trips hosts as the service makes them, with empty
// tags and tunnelConnections and no credentials, and with nil ones: they come
// back empty (nil), and their items hold no empty list or map.
func TestEmptyAndNil(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	empty := newHost("alice", 1, 1)
	empty.Tags, empty.TunnelConnections, empty.JumpHosts, empty.Sealed = []string{}, []sshdeck.TunnelConnection{}, []sshdeck.JumpHost{}, sshdeck.SealedCredentials{}
	null := newHost("alice", 2, 1)
	null.Tags, null.TunnelConnections, null.JumpHosts = nil, nil, nil
	for _, h := range []*sshdeck.Host{empty, null} {
		if err := s.CreateHost(ctx, h, 1000); err != nil {
			t.Fatal(err)
		}
	}
	listed, err := s.Hosts(ctx, "alice", 0, 0)
	if err != nil || len(listed) != 2 {
		t.Fatalf("Hosts: got %d hosts, %v; want 2", len(listed), err)
	}
	got, err := s.Host(ctx, "alice", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*sshdeck.Host{got, listed[0], listed[1]} {
		if len(h.Tags) != 0 || len(h.TunnelConnections) != 0 || len(h.JumpHosts) != 0 {
			t.Errorf("host %d with empty lists: got tags %#v, tunnelConnections %#v, jumpHosts %#v", h.ID, h.Tags, h.TunnelConnections, h.JumpHosts)
		}
	}
	if got.Sealed.Password != nil || got.Sealed.Key != nil || got.Sealed.KeyPassword != nil {
		t.Errorf("host without credentials: got %+v", got.Sealed)
	}
	item := rawItem(t, srv, "OWNER#alice", fmt.Sprintf("HOST#%019d", 1))
	for _, name := range []string{"tags", "tunnelConnections", "jumpHosts", "sealed"} {
		if _, ok := item[name]; ok {
			t.Errorf("the item of a host with empty %s stores it: %v", name, item[name])
		}
	}
}

// TestFileItems checks the items of file-manager entries: in the host's
// partition, at the SHA-256 of the path (which may be longer than a sort
// key), with the path and the rest as attributes.
func TestFileItems(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	mustCreateHosts(t, s, "alice", 1)
	at := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.FixedZone("UTC+2", 2*3600))
	path := "/srv/" + strings.Repeat("é", 4090)
	recent := &sshdeck.FileEntry{
		Owner: "alice", HostID: 1, Kind: sshdeck.RecentFile, Path: path, Name: "é",
		IsSSH: true, SSHSessionID: "sess-1", CreatedAt: at, LastOpened: at.Add(time.Minute),
	}
	if err := s.PutRecentFile(ctx, recent, 100); err != nil {
		t.Fatal(err)
	}
	shortcut := &sshdeck.FileEntry{Owner: "alice", HostID: 1, Kind: sshdeck.Shortcut, Path: "/etc", Name: "etc", CreatedAt: at}
	if _, err := s.AddShortcut(ctx, shortcut, 100); err != nil {
		t.Fatal(err)
	}

	sum := sha256.Sum256([]byte(path))
	item := rawItem(t, srv, "OWNER#alice", "FILE#0000000000000000001#RECENT#"+hex.EncodeToString(sum[:]))
	for name, want := range map[string]string{
		"owner": "S:alice", "hostId": "N:1", "kind": "S:recent", "path": "S:" + path, "name": "S:é",
		"isSSH": "BOOL:true", "sshSessionId": "S:sess-1",
		"createdAt": "S:2025-03-14T13:09:26.535Z", "lastOpened": "S:2025-03-14T13:10:26.535Z", "ttl": "-",
	} {
		if got := attr(item, name); got != want {
			t.Errorf("recent entry's %s: got %.80s, want %.80s", name, got, want)
		}
	}
	sum = sha256.Sum256([]byte("/etc"))
	item = rawItem(t, srv, "OWNER#alice", "FILE#0000000000000000001#SHORTCUT#"+hex.EncodeToString(sum[:]))
	for name, want := range map[string]string{
		"kind": "S:shortcut", "path": "S:/etc", "isSSH": "BOOL:false", "sshSessionId": "S:",
		"createdAt": "S:2025-03-14T13:09:26.535Z", "lastOpened": "-",
	} {
		if got := attr(item, name); got != want {
			t.Errorf("shortcut's %s: got %s, want %s", name, got, want)
		}
	}
}

// TestAlertItems checks an alert, in the ALERTS partition, and a dismissal,
// in its user's: both carry ttl, their expiry, for DynamoDB's TTL.
func TestAlertItems(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	at := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	a := &sshdeck.Alert{
		ID: "alr_1", Title: "Maintenance", Message: "Soon.", ExpiresAt: at.Add(time.Hour),
		Priority: sshdeck.PriorityHigh, Type: sshdeck.AlertWarning, ActionURL: "https://example.com", ActionText: "More",
		CreatedAt: at,
	}
	if err := s.CreateAlert(ctx, a); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, srv, "ALERTS", "ALERT#alr_1")
	for name, want := range map[string]string{
		"id": "S:alr_1", "title": "S:Maintenance", "message": "S:Soon.", "priority": "S:high", "type": "S:warning",
		"actionUrl": "S:https://example.com", "actionText": "S:More",
		"expiresAt": "S:2025-03-14T16:09:26.535Z", "createdAt": "S:2025-03-14T15:09:26.535Z",
		"ttl": fmt.Sprintf("N:%d", a.ExpiresAt.Unix()),
	} {
		if got := attr(item, name); got != want {
			t.Errorf("alert's %s: got %s, want %s", name, got, want)
		}
	}

	d := &sshdeck.Dismissal{UserID: "u-1", AlertID: "alr_1", At: at, Until: a.ExpiresAt}
	if err := s.DismissAlert(ctx, d); err != nil {
		t.Fatal(err)
	}
	item = rawItem(t, srv, "USER#u-1", "DISMISSED#alr_1")
	for name, want := range map[string]string{
		"userId": "S:u-1", "alertId": "S:alr_1", "at": "S:2025-03-14T15:09:26.535Z",
		"until": "S:2025-03-14T16:09:26.535Z", "ttl": fmt.Sprintf("N:%d", d.Until.Unix()),
	} {
		if got := attr(item, name); got != want {
			t.Errorf("dismissal's %s: got %s, want %s", name, got, want)
		}
	}
}

// TestCacheItem checks a cache entry: its own partition, the value as
// Binary, ttl its KeepUntil.
func TestCacheItem(t *testing.T) {
	s, srv := start(t)
	at := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	e := &sshdeck.CacheEntry{Key: "releases/o/r.js/1/20", Value: []byte{0x1f, 0x8b, 0x00}, StoredAt: at, KeepUntil: at.Add(24 * time.Hour)}
	if err := s.PutCacheEntry(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, srv, "CACHE#releases/o/r.js/1/20", "CACHE")
	for name, want := range map[string]string{
		"key": "S:releases/o/r.js/1/20", "value": "B:1f8b00",
		"storedAt": "S:2025-03-14T15:09:26.535Z", "keepUntil": "S:2025-03-15T15:09:26.535Z",
		"ttl": fmt.Sprintf("N:%d", e.KeepUntil.Unix()),
	} {
		if got := attr(item, name); got != want {
			t.Errorf("cache entry's %s: got %s, want %s", name, got, want)
		}
	}
}

// mapAttr returns the item's attribute name, a map, failing the test if it
// is anything else.
func mapAttr(t *testing.T, item map[string]types.AttributeValue, name string) map[string]types.AttributeValue {
	t.Helper()
	m, ok := item[name].(*types.AttributeValueMemberM)
	if !ok {
		t.Fatalf("%s: got %T, want a map", name, item[name])
	}
	return m.Value
}

// TestTunnelItems checks a tunnel's item through its life: in the TUNNELS
// partition at <owner>#<name>, the record's attributes but its lease, and
// the lease as leaseHolder and leaseUntil (fixed-width UTC, which
// conditions compare as text), the empty string once released.
func TestTunnelItems(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	at := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.FixedZone("UTC+2", 2*3600))
	tn := newTunnel("usr_a", "db.prod#1", 1)
	tn.CreatedAt, tn.UpdatedAt = at, at.Add(time.Second)
	tn.Spec.RetryInterval = 5 * time.Second
	tn.Lease = sshdeck.TunnelLease{Holder: "intruder", Until: at}
	if err := s.PutTunnel(ctx, tn); err != nil {
		t.Fatal(err)
	}
	const pk, sk = "TUNNELS", "usr_a#db.prod#1"
	item := rawItem(t, srv, pk, sk)
	for name, want := range map[string]string{
		"owner": "S:usr_a", "name": "S:db.prod#1", "generation": "N:1", "run": "BOOL:true",
		"createdAt": "S:2025-03-14T13:09:26.535Z", "updatedAt": "S:2025-03-14T13:09:27.535Z",
		"lease": "-", "leaseHolder": "-", "leaseUntil": "-", "gsi1pk": "-", "ttl": "-",
	} {
		if got := attr(item, name); got != want {
			t.Errorf("new tunnel's %s: got %s, want %s", name, got, want)
		}
	}
	spec := mapAttr(t, item, "spec")
	if got := attr(spec, "retryInterval") + " " + attr(mapAttr(t, spec, "source"), "ip"); got != "N:5000000000 S:10.0.0.5" {
		t.Errorf("tunnel's spec.retryInterval and spec.source.ip: got %s", got)
	}
	sealed := mapAttr(t, item, "sealed")
	if got := attr(mapAttr(t, sealed, "source"), "password") + " " + attr(sealed, "endpoint"); got != "B:000102 -" {
		t.Errorf("tunnel's sealed.source.password and sealed.endpoint: got %s", got)
	}
	status := mapAttr(t, item, "status")
	if got := attr(status, "state") + " " + attr(status, "nextRetryAt"); got != "S:connecting -" {
		t.Errorf("tunnel's status.state and status.nextRetryAt: got %s", got)
	}

	if _, err := s.AcquireTunnelLease(ctx, "usr_a", "db.prod#1", "replica-1", at, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	item = rawItem(t, srv, pk, sk)
	if got := attr(item, "leaseHolder") + " " + attr(item, "leaseUntil"); got != "S:replica-1 S:2025-03-14T13:10:26.535000000Z" {
		t.Errorf("leased tunnel: got %s", got)
	}
	if err := s.ReleaseTunnelLease(ctx, "usr_a", "db.prod#1", "replica-1"); err != nil {
		t.Fatal(err)
	}
	item = rawItem(t, srv, pk, sk)
	if got := attr(item, "leaseHolder") + " " + attr(item, "leaseUntil") + " " + attr(item, "lease"); got != "S: S: -" {
		t.Errorf("released tunnel: got %s", got)
	}
}

// TestKnownHostItem checks a known host: in its owner's partition, at
// KNOWNHOST#<address>.
func TestKnownHostItem(t *testing.T) {
	s, srv := start(t)
	at := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	k := &sshdeck.KnownHost{Owner: "usr_a", Addr: "10.0.0.5:22", Key: "ssh-ed25519 AAAA", CreatedAt: at}
	if err := s.AddKnownHost(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, srv, "OWNER#usr_a", "KNOWNHOST#10.0.0.5:22")
	for name, want := range map[string]string{
		"owner": "S:usr_a", "addr": "S:10.0.0.5:22", "key": "S:ssh-ed25519 AAAA",
		"createdAt": "S:2025-03-14T15:09:26.535Z", "ttl": "-",
	} {
		if got := attr(item, name); got != want {
			t.Errorf("known host's %s: got %s, want %s", name, got, want)
		}
	}

	// An address that would make the sort key longer than 1024 bytes is
	// keyed by its hash, and kept whole in addr; one byte less is not.
	for _, n := range []int{1014, 1015} {
		addr := strings.Repeat("h", n-3) + ":22"
		k := &sshdeck.KnownHost{Owner: "usr_a", Addr: addr, Key: "ssh-ed25519 BBBB", CreatedAt: at}
		if err := s.AddKnownHost(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		sk := "KNOWNHOST#" + addr
		if n > 1014 {
			sum := sha256.Sum256([]byte(addr))
			sk = "KNOWNHOST##" + hex.EncodeToString(sum[:])
		}
		if got := attr(rawItem(t, srv, "OWNER#usr_a", sk), "addr"); got != "S:"+addr {
			t.Errorf("known host of a %d-byte address: addr %.40s…", n, got)
		}
	}
}

// TestLoginSecretsItem checks a user's login secrets: in a partition of
// their own (LOGIN#<user id>, not the user's, which more roles may read),
// the sealed secrets as Binary, no ttl.
func TestLoginSecretsItem(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	at := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.FixedZone("UTC+2", 2*3600))
	ls := &sshdeck.LoginSecrets{
		UserID: "usr_a", PasswordHash: "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA",
		TOTP: []byte{0x00, 0xff}, PendingTOTP: []byte{0x01}, TOTPStep: 58_000_000, Version: 1, UpdatedAt: at,
	}
	if err := s.PutLoginSecrets(ctx, ls); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, srv, "LOGIN#usr_a", "LOGIN")
	for name, want := range map[string]string{
		"userId": "S:usr_a", "passwordHash": "S:" + ls.PasswordHash, "totp": "B:00ff", "pendingTotp": "B:01",
		"totpStep": "N:58000000", "version": "N:1", "updatedAt": "S:2025-03-14T13:09:26.535Z",
		"sv": "N:2", "ttl": "-", "gsi1pk": "-",
	} {
		if got := attr(item, name); got != want {
			t.Errorf("login secrets' %s: got %s, want %s", name, got, want)
		}
	}
	// Emptied, each is left out.
	if err := s.PutLoginSecrets(ctx, &sshdeck.LoginSecrets{UserID: "usr_a", Version: 2}); err != nil {
		t.Fatal(err)
	}
	item = rawItem(t, srv, "LOGIN#usr_a", "LOGIN")
	for _, name := range []string{"passwordHash", "totp", "pendingTotp", "totpStep", "updatedAt"} {
		if got := attr(item, name); got != "-" {
			t.Errorf("emptied login secrets' %s: got %s, want none", name, got)
		}
	}
	if got := attr(item, "version"); got != "N:2" {
		t.Errorf("login secrets' version: got %s, want N:2", got)
	}
}

// TestFailureItem checks a window of failed logins: its own partition at
// the caller's key, until as fixed-width UTC (which AddFailure's conditions
// compare as text), ttl the epoch second of until; the next window's put
// replaces the item whole.
func TestFailureItem(t *testing.T) {
	ctx := t.Context()
	s, srv := start(t)
	at := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.FixedZone("UTC+2", 2*3600))
	const k = "addr:10.0.0.5"
	for range 2 {
		if _, _, err := s.AddFailure(ctx, k, at, 15*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	item := rawItem(t, srv, "LOGINFAIL#"+k, "LOGINFAIL")
	until := at.Add(15 * time.Minute)
	for name, want := range map[string]string{
		"n": "N:2", "until": "S:2025-03-14T13:24:26.535000000Z", "ttl": fmt.Sprintf("N:%d", until.Unix()),
		"sv": "N:2", "gsi1pk": "-",
	} {
		if got := attr(item, name); got != want {
			t.Errorf("failure window's %s: got %s, want %s", name, got, want)
		}
	}
	if len(item) != 6 {
		t.Errorf("failure window: got %d attributes, want pk, sk, n, until, ttl and sv: %s", len(item), itemJSON(t, item))
	}
	later := until.Add(time.Hour)
	if _, _, err := s.AddFailure(ctx, k, later, time.Minute); err != nil {
		t.Fatal(err)
	}
	item = rawItem(t, srv, "LOGINFAIL#"+k, "LOGINFAIL")
	if got := attr(item, "n") + " " + attr(item, "until") + " " + attr(item, "ttl"); got != fmt.Sprintf("N:1 S:2025-03-14T14:25:26.535000000Z N:%d", later.Add(time.Minute).Unix()) {
		t.Errorf("the next failure window: got %s", got)
	}
}
