package dynamo_test

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

// The tests in this file check "read old, write new": items as the store
// wrote them before the schema version (testdata/schema1-items.json, see
// testdata/README.md) read as they did, and the store's writes carry sv 2.

// schemaAt is the instant of every time in testdata/schema1-items.json.
var schemaAt = time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// everyKind is what testdata/schema1-items.json holds, as domain values:
// what its dump wrote (testdata/schema1-dump_test.go.txt), each record in
// its last state.
type everyKind struct {
	user      *sshdeck.User
	tokens    []*sshdeck.Token // h1, h2
	hosts     []*sshdeck.Host  // usr_a's 1, 2, 3; usr_b's 5
	recent    *sshdeck.FileEntry
	shortcut  *sshdeck.FileEntry
	alerts    []*sshdeck.Alert // by id
	dismissal *sshdeck.Dismissal
	caches    []*sshdeck.CacheEntry // with a value, without
	tunnels   []*sshdeck.Tunnel     // usr_a's db and web, usr_b's old
	knownHost *sshdeck.KnownHost
}

func schema1Values() everyKind {
	at := schemaAt
	full := &sshdeck.Host{Owner: "usr_a", ID: 1, Version: 2, CreatedAt: at, UpdatedAt: at.Add(time.Second)}
	full.HostConfig = sshdeck.HostConfig{
		Name: "web", IP: "10.0.0.5", Port: 2222, Username: "root", Folder: "prod",
		Tags: []string{"a", "b"}, Pin: true, AuthType: sshdeck.AuthKey, KeyType: "ssh-ed25519",
		EnableTerminal: true, EnableTunnel: true, EnableFileManager: true, DefaultPath: "/srv",
		TunnelConnections: []sshdeck.TunnelConnection{
			{SourcePort: 8080, EndpointPort: 80, EndpointHost: "db", MaxRetries: 3, RetryInterval: 10, AutoStart: true},
			{SourcePort: 5432, EndpointPort: 5432, EndpointHost: "pg"},
		},
	}
	full.Sealed = sshdeck.SealedCredentials{Password: []byte{1, 2}, Key: []byte{3, 4}, KeyPassword: []byte{5, 6}}
	null := &sshdeck.Host{Owner: "usr_a", ID: 2, Version: 1, CreatedAt: at, UpdatedAt: at}
	null.Name, null.AuthType = "nil", sshdeck.AuthNone
	empty := &sshdeck.Host{Owner: "usr_a", ID: 3, Version: 1, CreatedAt: at, UpdatedAt: at}
	empty.Name, empty.AuthType = "empty", sshdeck.AuthPassword

	db := &sshdeck.Tunnel{
		Owner: "usr_a", Name: "db", Generation: 2, Run: true, CreatedAt: at, UpdatedAt: at.Add(time.Second),
		Spec: sshdeck.TunnelSpec{
			HostName: "web",
			Source: sshdeck.TunnelHop{
				IP: "10.0.0.5", SSHPort: 22, Username: "root", Auth: sshdeck.AuthKey, KeyType: "ssh-ed25519",
				HostKey: "ssh-ed25519 AAAA",
			},
			Endpoint:   sshdeck.TunnelHop{IP: "10.0.0.6", SSHPort: 2222, Username: "pg", Auth: sshdeck.AuthPassword},
			SourcePort: 5432, EndpointPort: 5433, MaxRetries: 3, RetryInterval: 10 * time.Second,
			AutoStart: true, IsPinned: true,
		},
		Sealed: sshdeck.SealedTunnelCredentials{
			Source:   sshdeck.SealedCredentials{Key: []byte{7}, KeyPassword: []byte{8}},
			Endpoint: sshdeck.SealedCredentials{Password: []byte{9}},
		},
		Status: sshdeck.TunnelStatus{
			State: sshdeck.TunnelConnected, RetryExhausted: true, ManualDisconnect: true, UpdatedAt: at.Add(2 * time.Second),
		},
		Lease: sshdeck.TunnelLease{Holder: "replica-1", Until: at.Add(time.Minute)},
	}
	web := &sshdeck.Tunnel{Owner: "usr_a", Name: "web", Generation: 1, CreatedAt: at, UpdatedAt: at}
	web.Spec.Source.IP, web.Spec.Endpoint.IP = "10.0.0.7", "10.0.0.8"
	web.Status.State = sshdeck.TunnelDisconnected
	old := &sshdeck.Tunnel{Owner: "usr_b", Name: "old", Generation: 1, Run: true, CreatedAt: at, UpdatedAt: at}
	old.Status.State = sshdeck.TunnelConnecting

	return everyKind{
		user: &sshdeck.User{ID: "usr_a", Name: "alice", Admin: true, CreatedAt: at},
		tokens: []*sshdeck.Token{
			{ID: "tok_1", UserID: "usr_a", Name: "laptop", Hash: "h1", CreatedAt: at},
			{
				ID: "tok_2", UserID: "usr_a", Name: "ci", Hash: "h2", CreatedAt: at, ExpiresAt: at.Add(time.Hour),
				Revoked: true, RevokedAt: at.Add(time.Minute),
			},
		},
		hosts: []*sshdeck.Host{full, null, empty, {Owner: "usr_b", ID: 5, Version: 1, CreatedAt: at, UpdatedAt: at}},
		recent: &sshdeck.FileEntry{
			Owner: "usr_a", HostID: 1, Kind: sshdeck.RecentFile, Path: "/etc/hosts", Name: "hosts",
			IsSSH: true, SSHSessionID: "sess-1", CreatedAt: at, LastOpened: at.Add(time.Minute),
		},
		shortcut: &sshdeck.FileEntry{Owner: "usr_a", HostID: 1, Kind: sshdeck.Shortcut, Path: "/var/log", Name: "logs", CreatedAt: at},
		alerts: []*sshdeck.Alert{
			{
				ID: "alr_1", Title: "Maintenance", Message: "Soon.", ExpiresAt: at.Add(time.Hour),
				Priority: sshdeck.PriorityHigh, Type: sshdeck.AlertWarning, ActionURL: "https://example.com/m", ActionText: "More",
				CreatedAt: at,
			},
			{ID: "remote-7", Title: "Release", ExpiresAt: at.Add(2 * time.Hour), Priority: sshdeck.PriorityLow, Type: sshdeck.AlertInfo},
		},
		dismissal: &sshdeck.Dismissal{UserID: "usr_a", AlertID: "alr_1", At: at, Until: at.Add(time.Hour)},
		caches: []*sshdeck.CacheEntry{
			{Key: "releases/o/r/1/20", Value: []byte{0x1f, 0x8b, 0}, StoredAt: at, KeepUntil: at.Add(24 * time.Hour)},
			{Key: "empty", StoredAt: at, KeepUntil: at.Add(24 * time.Hour)},
		},
		tunnels:   []*sshdeck.Tunnel{db, web, old},
		knownHost: &sshdeck.KnownHost{Owner: "usr_a", Addr: "10.0.0.5:22", Key: "ssh-ed25519 AAAA", CreatedAt: at},
	}
}

// writeEveryKind makes the store write what the dump of schema 1 wrote,
// call by call, so that the items of both stores compare.
func writeEveryKind(t *testing.T, s *dynamo.Store, v everyKind) {
	t.Helper()
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	at := schemaAt
	must(s.CreateUser(ctx, v.user))
	unrevoked := *v.tokens[1]
	unrevoked.Revoked, unrevoked.RevokedAt = false, time.Time{}
	must(s.CreateToken(ctx, v.tokens[0]))
	must(s.CreateToken(ctx, &unrevoked))
	_, err := s.RevokeToken(ctx, unrevoked.ID, v.tokens[1].RevokedAt)
	must(err)

	for range 3 {
		_, err := s.NextHostID(ctx, "usr_a")
		must(err)
	}
	first := *v.hosts[0]
	first.Version, first.UpdatedAt = 1, at
	must(s.CreateHost(ctx, &first, 1000))
	must(s.UpdateHost(ctx, v.hosts[0]))
	null := *v.hosts[1] // nil lists, as the dump's
	must(s.CreateHost(ctx, &null, 1000))
	empty := *v.hosts[2]
	empty.Tags, empty.TunnelConnections = []string{}, []sshdeck.TunnelConnection{}
	empty.Sealed = sshdeck.SealedCredentials{Password: []byte{}, Key: []byte{}, KeyPassword: []byte{}}
	must(s.CreateHost(ctx, &empty, 1000))
	must(s.CreateHost(ctx, v.hosts[3], 1000))

	must(s.PutRecentFile(ctx, v.recent, 100))
	_, err = s.AddShortcut(ctx, v.shortcut, 100)
	must(err)

	for _, a := range v.alerts {
		must(s.CreateAlert(ctx, a))
	}
	must(s.DismissAlert(ctx, v.dismissal))
	for _, e := range v.caches {
		must(s.PutCacheEntry(ctx, e))
	}

	db := *v.tunnels[0]
	db.Generation, db.UpdatedAt, db.Lease = 1, at, sshdeck.TunnelLease{}
	db.Status = sshdeck.TunnelStatus{
		State: sshdeck.TunnelWaiting, RetryCount: 2, NextRetryAt: at.Add(time.Minute), Reason: "refused",
		Error: sshdeck.TunnelErrNetwork, UpdatedAt: at,
	}
	must(s.PutTunnel(ctx, &db))
	db.Generation, db.UpdatedAt = 2, v.tunnels[0].UpdatedAt
	must(s.PutTunnel(ctx, &db))
	_, err = s.AcquireTunnelLease(ctx, "usr_a", "db", "replica-1", at, at.Add(time.Minute))
	must(err)
	must(s.SetTunnelStatus(ctx, "usr_a", "db", 2, "replica-1", &v.tunnels[0].Status))
	must(s.PutTunnel(ctx, v.tunnels[1]))
	must(s.PutTunnel(ctx, v.tunnels[2]))
	_, err = s.AcquireTunnelLease(ctx, "usr_b", "old", "replica-2", at, at.Add(time.Minute))
	must(err)
	must(s.ReleaseTunnelLease(ctx, "usr_b", "old", "replica-2"))

	must(s.AddKnownHost(ctx, v.knownHost))
}

// loadSchema1 returns a server whose table holds testdata/schema1-items.json,
// put as they are.
func loadSchema1(t *testing.T) (*dynamo.Store, *dynamotest.Server, []map[string]types.AttributeValue) {
	t.Helper()
	data, err := os.ReadFile("testdata/schema1-items.json")
	if err != nil {
		t.Fatal(err)
	}
	items, err := parseItems(data)
	if err != nil {
		t.Fatal(err)
	}
	s, srv := start(t)
	for _, item := range items {
		if _, ok := item["sv"]; ok {
			t.Fatalf("a schema-1 item with sv: %s", itemJSON(t, item))
		}
		putRaw(t, srv, item)
	}
	return s, srv, items
}

// sameValue fails the test when got and want differ (reflect.DeepEqual: the
// times are UTC, as the store reads them).
func sameValue[T any](t *testing.T, what string, got T, err error, want T) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %s\n want %s", what, show(got), show(want))
	}
}

// show prints records behind pointers, one by one.
func show(v any) string {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return "nil"
		}
		return fmt.Sprintf("%+v", rv.Elem().Interface())
	case reflect.Slice:
		parts := make([]string, rv.Len())
		for i := range parts {
			parts[i] = show(rv.Index(i).Interface())
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("%+v", v)
}

// TestSchema1Items reads every kind of item of schema 1 through the store:
// each method that reads a kind returns the values the dump wrote.
func TestSchema1Items(t *testing.T) {
	ctx := t.Context()
	s, _, _ := loadSchema1(t)
	want := schema1Values()
	at := schemaAt

	u, err := s.User(ctx, "usr_a")
	sameValue(t, "User", u, err, want.user)
	u, err = s.UserByName(ctx, "alice")
	sameValue(t, "UserByName", u, err, want.user)
	users, err := s.Users(ctx)
	sameValue(t, "Users", users, err, []*sshdeck.User{want.user})

	for _, tok := range want.tokens {
		got, err := s.TokenByHash(ctx, tok.Hash)
		sameValue(t, "TokenByHash "+tok.Hash, got, err, tok)
	}
	tokens, err := s.Tokens(ctx, "usr_a")
	sameValue(t, "Tokens", tokens, err, want.tokens)

	for _, h := range want.hosts {
		got, err := s.Host(ctx, h.Owner, h.ID)
		sameValue(t, fmt.Sprintf("Host %s %d", h.Owner, h.ID), got, err, h)
	}
	hosts, err := s.Hosts(ctx, "usr_a", 0, 0)
	sameValue(t, "Hosts", hosts, err, want.hosts[:3])
	id, err := s.NextHostID(ctx, "usr_a")
	sameValue(t, "NextHostID of usr_a (ADD's counter)", id, err, 4)
	id, err = s.NextHostID(ctx, "usr_b")
	sameValue(t, "NextHostID of usr_b (CreateHost's counter)", id, err, 6)

	files, err := s.Files(ctx, "usr_a", 1, sshdeck.RecentFile)
	sameValue(t, "Files recent", files, err, []*sshdeck.FileEntry{want.recent})
	files, err = s.Files(ctx, "usr_a", 1, sshdeck.Shortcut)
	sameValue(t, "Files shortcut", files, err, []*sshdeck.FileEntry{want.shortcut})

	alerts, err := s.Alerts(ctx, at)
	sameValue(t, "Alerts", alerts, err, want.alerts)
	dismissals, err := s.Dismissals(ctx, "usr_a", at)
	sameValue(t, "Dismissals", dismissals, err, []*sshdeck.Dismissal{want.dismissal})

	for _, e := range want.caches {
		got, err := s.CacheEntry(ctx, e.Key, at)
		sameValue(t, "CacheEntry "+e.Key, got, err, e)
	}

	for _, tn := range want.tunnels {
		got, err := s.Tunnel(ctx, tn.Owner, tn.Name)
		sameValue(t, "Tunnel "+tn.Name, got, err, tn)
	}
	tunnels, err := s.Tunnels(ctx, "usr_a")
	sameValue(t, "Tunnels", tunnels, err, want.tunnels[:2])
	tunnels, err = s.RunnableTunnels(ctx)
	sameValue(t, "RunnableTunnels", tunnels, err, []*sshdeck.Tunnel{want.tunnels[0], want.tunnels[2]})

	k, err := s.KnownHost(ctx, "usr_a", "10.0.0.5:22")
	sameValue(t, "KnownHost", k, err, want.knownHost)
}

// TestSchema1Rewritten writes over schema-1 items: a whole-item write (a
// host's update, a tunnel's next generation) leaves an item of schema 2,
// which reads back as written; an update of some attributes (a revocation,
// a touch, a lease, a status) leaves the item's version as it was.
func TestSchema1Rewritten(t *testing.T) {
	ctx := t.Context()
	s, srv, _ := loadSchema1(t)
	want := schema1Values()
	at := schemaAt

	for _, h := range want.hosts[:2] {
		next := *h
		next.Version++
		next.UpdatedAt = at.Add(time.Hour)
		next.Tags = append(next.Tags, "new")
		if err := s.UpdateHost(ctx, &next); err != nil {
			t.Fatalf("UpdateHost %d: %v", h.ID, err)
		}
		item := rawItem(t, srv, "OWNER#usr_a", fmt.Sprintf("HOST#%019d", h.ID))
		if got := attr(item, "sv"); got != "N:2" {
			t.Errorf("host %d after UpdateHost: sv %s, want N:2", h.ID, got)
		}
		if _, ok := item["tunnelConnections"].(*types.AttributeValueMemberNULL); ok {
			t.Errorf("host %d after UpdateHost: tunnelConnections is still NULL", h.ID)
		}
		got, err := s.Host(ctx, "usr_a", h.ID)
		sameValue(t, fmt.Sprintf("Host %d after UpdateHost", h.ID), got, err, &next)
	}

	db := *want.tunnels[0]
	db.Generation++
	db.Spec.EndpointPort = 6543
	db.Sealed.Endpoint = sshdeck.SealedCredentials{}
	if err := s.PutTunnel(ctx, &db); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, srv, "TUNNELS", "usr_a#db")
	if got := attr(item, "sv") + " " + attr(item, "leaseHolder"); got != "N:2 S:replica-1" {
		t.Errorf("tunnel after PutTunnel: sv and leaseHolder %s, want N:2 S:replica-1", got)
	}
	got, err := s.Tunnel(ctx, "usr_a", "db")
	sameValue(t, "Tunnel after PutTunnel", got, err, &db)

	// Updates of some attributes keep the version of the item.
	if _, err := s.RevokeToken(ctx, "tok_1", at); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchToken(ctx, "h1", at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireTunnelLease(ctx, "usr_a", "web", "replica-3", at, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, k := range [][2]string{{"TOKEN#h1", "TOKEN"}, {"TUNNELS", "usr_a#web"}} {
		if got := attr(rawItem(t, srv, k[0], k[1]), "sv"); got != "-" {
			t.Errorf("schema-1 item %s after an update of some attributes: sv %s, want none", k[1], got)
		}
	}
	tok, err := s.TokenByHash(ctx, "h1")
	if err != nil || !tok.Revoked || !tok.RevokedAt.Equal(at) || !tok.LastUsedAt.Equal(at.Add(time.Minute)) || tok.Scopes != nil {
		t.Errorf("revoked and touched schema-1 token: got %+v, %v", tok, err)
	}
}

// TestSchema2Items writes what the dump of schema 1 wrote, the same calls
// with the same values: the items are those of schema 1, but for sv (2 on
// every item) and the NULLs of schema 1 (nil lists and an empty binary),
// which schema 2 leaves out. So the attributes' names and types are
// unchanged. The counts of quotas, which the dump predates, are additions
// that readers of both versions ignore (README.md, "Counted kinds"): the
// count attributes of the host-id counters and the items of the hosts'
// counts of shortcuts are left out of the comparison, and so is the item
// listing a token in its user's partition (USER#<id>, TOKEN#<token id>),
// which came later within schema 2 and which no reader of schema 1 queries.
func TestSchema2Items(t *testing.T) {
	_, _, old := loadSchema1(t)
	s, srv := start(t)
	writeEveryKind(t, s, schema1Values())
	// Besides the dump's kinds, each owner of tunnels has a count of them
	// and each host a count of its shortcuts, and the host counter counts
	// hosts (counter.go): schema 1 had none of them.
	var items []map[string]types.AttributeValue
	counts := map[string]string{}
	for _, item := range scan(t, srv) {
		if sk, _ := item["sk"].(*types.AttributeValueMemberS); sk != nil && sk.Value == "COUNT#TUNNELS" {
			counts[item["pk"].(*types.AttributeValueMemberS).Value] = item["count"].(*types.AttributeValueMemberN).Value
			continue
		}
		if strings.HasSuffix(attr(item, "sk"), "#COUNT#SHORTCUT") ||
			strings.HasPrefix(attr(item, "pk"), "S:USER#") && strings.HasPrefix(attr(item, "sk"), "S:TOKEN#") {
			continue
		}
		delete(item, "count")
		delete(item, "uncountedDeletes")
		items = append(items, item)
	}
	if got := fmt.Sprint(counts); got != "map[OWNER#usr_a:2 OWNER#usr_b:1]" {
		t.Errorf("tunnel counts: %s, want usr_a's 2 and usr_b's 1", got)
	}
	if len(items) != len(old) {
		t.Errorf("%d items, want %d as in schema 1", len(items), len(old))
	}
	for i := range min(len(items), len(old)) {
		want := old[i]
		for name, v := range want {
			if _, ok := v.(*types.AttributeValueMemberNULL); ok {
				delete(want, name)
			}
		}
		want["sv"] = &types.AttributeValueMemberN{Value: "2"}
		if got, want := itemJSON(t, items[i]), itemJSON(t, want); got != want {
			t.Errorf("item %d:\n got  %s\n want %s", i, got, want)
		}
	}
}

// TestNewerSchema refuses an item of a schema version the store does not
// know: an internal error that does not quote the item.
func TestNewerSchema(t *testing.T) {
	s, srv := start(t)
	mustCreateHosts(t, s, "alice", 1)
	item := rawItem(t, srv, "OWNER#alice", "HOST#0000000000000000001")
	item["sv"] = &types.AttributeValueMemberN{Value: "3"}
	item["name"] = &types.AttributeValueMemberS{Value: "secret-value"}
	putRaw(t, srv, item)

	_, err := s.Host(t.Context(), "alice", 1)
	if code := sshdeck.ErrorCode(err); code != sshdeck.Internal {
		t.Fatalf("Host of schema 3: got %v (code %q), want an internal error", err, code)
	}
	if strings.Contains(err.Error(), "secret-value") {
		t.Fatalf("the error quotes the item: %v", err)
	}
	if _, err := s.Hosts(t.Context(), "alice", 0, 0); err == nil {
		t.Fatal("Hosts with an item of schema 3: no error")
	}
}
