package client_test

import (
	"context"
	"encoding/base32"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/client"
	"github.com/sshdeck/sshdeck/shared/accounts"
	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/files"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func ptr[T any](v T) *T { return &v }

// hostInput is a password host named name.
func hostInput(name, ip string) *hosts.Input {
	return &hosts.Input{Name: name, IP: ip, Port: ptr(22), Username: "ops", AuthType: ptr("password"), Password: ptr("pw")}
}

// TestClientCallsEveryRoute calls each route of both services through the
// client, checks what it answers, and then that the requests reached every
// route of routes.All and routes.Tunnel.
func TestClientCallsEveryRoute(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	admin := s.client(s.adminToken)

	t.Run("health", func(t *testing.T) {
		if h, err := admin.Health(ctx); err != nil || h.Status != "ok" {
			t.Errorf("Health: %+v %v", h, err)
		}
		if h, err := admin.TunnelHealth(ctx); err != nil || h.Status != "ok" {
			t.Errorf("TunnelHealth: %+v %v", h, err)
		}
	})

	// An account made by the admin, who logs in and sets TOTP up.
	var bob *client.Client
	t.Run("accounts", func(t *testing.T) {
		u, err := admin.CreateUser(ctx, accounts.NewUser{Username: "bob", Password: "correct horse 1"})
		if err != nil || u.Name != "bob" || u.Admin {
			t.Fatalf("CreateUser: %+v %v", u, err)
		}
		anon := s.client("")
		res, err := anon.Login(ctx, accounts.LoginRequest{Username: "bob", Password: "correct horse 1"})
		if err != nil || !strings.HasPrefix(res.Token, "sshdeck_") || res.ID == "" {
			t.Fatalf("Login: %v", err)
		}
		bob = s.client(res.Token)
		if me, err := bob.Me(ctx); err != nil || me.Name != "bob" || me.ID != u.ID {
			t.Fatalf("Me: %+v %v", me, err)
		}
		if err := bob.ChangePassword(ctx, "correct horse 1", "correct horse 2"); err != nil {
			t.Fatalf("ChangePassword: %v", err)
		}

		// TOTP: three codes of three consecutive steps (±1 is accepted,
		// a step once), far enough from a step's end not to cross it.
		if wait := 30*time.Second - time.Duration(time.Now().UnixNano())%(30*time.Second); wait < 3*time.Second {
			time.Sleep(wait)
		}
		secret, err := bob.BeginTOTP(ctx)
		if err != nil || !strings.HasPrefix(secret.URL, "otpauth://") {
			t.Fatalf("BeginTOTP: %v", err)
		}
		key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret.Secret)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if err := bob.EnableTOTP(ctx, auth.TOTPCode(key, now.Add(-30*time.Second))); err != nil {
			t.Fatalf("EnableTOTP: %v", err)
		}
		_, err = anon.Login(ctx, accounts.LoginRequest{Username: "bob", Password: "correct horse 2"})
		if !client.NeedsTOTP(err) {
			t.Fatalf("Login without the code: %v, want NeedsTOTP", err)
		}
		if client.NeedsTOTP(errors.New("x")) {
			t.Error("NeedsTOTP of any error")
		}
		res, err = anon.Login(ctx, accounts.LoginRequest{Username: "bob", Password: "correct horse 2", TOTP: auth.TOTPCode(key, now)})
		if err != nil {
			t.Fatalf("Login with the code: %v", err)
		}
		bob.Token = res.Token // the password change revoked the other
		if err := bob.DisableTOTP(ctx, auth.TOTPCode(key, now.Add(30*time.Second))); err != nil {
			t.Fatalf("DisableTOTP: %v", err)
		}

		users, err := admin.ListUsers(ctx)
		if err != nil || len(users) != 2 {
			t.Fatalf("ListUsers: %+v %v", users, err)
		}
		paged, err := collect(admin.Users(ctx, 1))
		if err != nil || !slices.Equal(names(paged, func(u accounts.UserView) string { return u.ID }), names(users, func(u accounts.UserView) string { return u.ID })) {
			t.Errorf("Users a page of 1 at a time: %+v %v", paged, err)
		}
		if v, err := admin.UpdateUser(ctx, u.ID, accounts.UserChange{Admin: ptr(true)}); err != nil || !v.Admin {
			t.Errorf("UpdateUser: %+v %v", v, err)
		}
	})
	if bob == nil {
		t.FailNow()
	}

	t.Run("tokens", func(t *testing.T) {
		made, err := bob.CreateToken(ctx, accounts.NewToken{Name: "ci", TTL: ptr(int64(3600))})
		if err != nil || made.Token == "" {
			t.Fatalf("CreateToken: %v", err)
		}
		list, err := bob.ListTokens(ctx)
		if err != nil || len(list) < 2 {
			t.Fatalf("ListTokens: %+v %v", list, err)
		}
		paged, err := collect(bob.Tokens(ctx, 1))
		if err != nil || len(paged) != len(list) {
			t.Errorf("Tokens a page of 1: %d of %d, %v", len(paged), len(list), err)
		}
		if err := bob.DeleteToken(ctx, made.ID); err != nil {
			t.Fatalf("DeleteToken: %v", err)
		}
		if _, err := s.client(made.Token).Me(ctx); !client.IsUnauthorized(err) {
			t.Errorf("a deleted token: %v, want a 401", err)
		}
	})

	var web *hosts.Record
	t.Run("hosts", func(t *testing.T) {
		var ids []int64
		for _, name := range []string{"a", "b", "c"} {
			rec, err := bob.CreateHost(ctx, hostInput(name, "10.0.0.1"))
			if err != nil || rec.Name != name || rec.Password != "pw" || rec.Version == 0 {
				t.Fatalf("CreateHost: %+v %v", rec, err)
			}
			ids = append(ids, rec.ID)
		}
		all, err := bob.ListHosts(ctx)
		if err != nil || len(all) != 3 {
			t.Fatalf("ListHosts: %v %v", len(all), err)
		}
		paged, err := collect(bob.Hosts(ctx, 2))
		if err != nil || !slices.Equal(names(paged, hostID), ids) {
			t.Fatalf("Hosts a page of 2 at a time: %v %v", names(paged, hostID), err)
		}
		rec, err := bob.Host(ctx, ids[0])
		if err != nil || rec.Name != "a" {
			t.Fatalf("Host: %+v %v", rec, err)
		}
		stale := rec.Version
		in := hostInput("web", "10.0.0.2")
		in.Password = nil // kept
		if web, err = bob.UpdateHost(ctx, rec.ID, in, rec.Version); err != nil || web.Name != "web" || web.Password != "pw" {
			t.Fatalf("UpdateHost: %+v %v", web, err)
		}
		if _, err := bob.UpdateHost(ctx, rec.ID, in, stale); sshdeck.ErrorCode(err) != sshdeck.PreconditionFailed {
			t.Errorf("UpdateHost with a stale version: %v", err)
		}
		if err := bob.DeleteHost(ctx, ids[2], 0); err != nil {
			t.Fatalf("DeleteHost: %v", err)
		}

		res, err := bob.ImportHosts(ctx, []hosts.JSONItem{{ID: 1, Input: *hostInput("j1", "10.0.1.1")}, {ID: 2, Input: *hostInput("j2", "10.0.1.2")}})
		if err != nil || len(res.Results) != 2 || res.Results[1].ID == 0 {
			t.Fatalf("ImportHosts: %+v %v", res, err)
		}
		res, err = bob.ImportHosts(ctx, []hosts.JSONItem{{ID: 1, Input: *hostInput("ok", "10.0.1.3")}, {ID: 2, Input: hosts.Input{Name: "bad"}}})
		if sshdeck.ErrorCode(err) != sshdeck.Invalid || res == nil || len(res.Results) != 2 || res.Results[1].Error == "" {
			t.Fatalf("a refused ImportHosts: %+v %v", res, err)
		}
		res, err = bob.ImportSSHConfig(ctx, strings.NewReader("Host db\n  HostName 10.0.2.1\n  User pg\n\nHost *\n  User x\n"), "")
		if err != nil || len(res.Results) != 1 || res.Results[0].ID == 0 || len(res.Skipped) == 0 {
			t.Fatalf("ImportSSHConfig: %+v %v", res, err)
		}
		body, err := bob.ExportHosts(ctx, client.ExportOptions{Format: "ssh_config"})
		if err != nil {
			t.Fatalf("ExportHosts: %v", err)
		}
		exported, _ := io.ReadAll(body)
		body.Close()
		if !strings.Contains(string(exported), "Host db\n") {
			t.Errorf("the export lacks Host db:\n%s", exported)
		}
	})
	if web == nil {
		t.FailNow()
	}

	t.Run("files", func(t *testing.T) {
		for _, p := range []string{"/etc/hosts", "/var/log/syslog"} {
			if err := bob.AddRecentFile(ctx, files.Input{Path: p, HostID: &web.ID}); err != nil {
				t.Fatalf("AddRecentFile: %v", err)
			}
			if err := bob.AddShortcut(ctx, files.Input{Path: p, HostID: &web.ID}); err != nil {
				t.Fatalf("AddShortcut: %v", err)
			}
		}
		recent, err := bob.ListRecentFiles(ctx, web.ID)
		if err != nil || len(recent) != 2 || recent[0].Path != "/var/log/syslog" {
			t.Fatalf("ListRecentFiles: %+v %v", recent, err)
		}
		if paged, err := collect(bob.RecentFiles(ctx, web.ID, 1)); err != nil || len(paged) != 2 {
			t.Errorf("RecentFiles a page of 1: %+v %v", paged, err)
		}
		shortcuts, err := bob.ListShortcuts(ctx, web.ID)
		if err != nil || len(shortcuts) != 2 || shortcuts[0].Path != "/etc/hosts" {
			t.Fatalf("ListShortcuts: %+v %v", shortcuts, err)
		}
		if paged, err := collect(bob.Shortcuts(ctx, web.ID, 1)); err != nil || len(paged) != 2 {
			t.Errorf("Shortcuts a page of 1: %+v %v", paged, err)
		}
		if err := bob.DeleteRecentFile(ctx, web.ID, "/etc/hosts"); err != nil {
			t.Errorf("DeleteRecentFile: %v", err)
		}
		if err := bob.DeleteShortcut(ctx, web.ID, "/etc/hosts"); err != nil {
			t.Errorf("DeleteShortcut: %v", err)
		}
		if recent, _ := bob.ListRecentFiles(ctx, web.ID); len(recent) != 1 {
			t.Errorf("recent after a delete: %+v", recent)
		}
	})

	// The changes above left their records: bob's own, and everyone's for
	// the admin, the same through the pages and the export.
	t.Run("audit", func(t *testing.T) {
		mine, err := collect(bob.Audit(ctx, client.AuditQuery{}, 2))
		if err != nil || len(mine) == 0 {
			t.Fatalf("Audit: %d records, %v", len(mine), err)
		}
		for _, r := range mine {
			if r.Actor != mine[0].Actor {
				t.Errorf("bob reads %s's record %+v", r.Actor, r)
			}
		}
		all, err := collect(admin.Audit(ctx, client.AuditQuery{}, 0))
		if err != nil || len(all) <= len(mine) {
			t.Fatalf("the admin's Audit: %d records, %v", len(all), err)
		}
		exported, err := collect(admin.ExportAudit(ctx, client.AuditQuery{Since: all[0].Time}))
		if err != nil || len(exported) < len(all) || exported[0].ID != all[0].ID {
			t.Errorf("ExportAudit: %d records (%v), the pages %d", len(exported), err, len(all))
		}
		if _, err := collect(bob.Audit(ctx, client.AuditQuery{Actor: "usr_somebody"}, 0)); sshdeck.ErrorCode(err) != sshdeck.Forbidden {
			t.Errorf("bob reading another's records: %v", err)
		}
	})

	t.Run("alerts and releases", func(t *testing.T) {
		a, err := admin.PublishAlert(ctx, alerts.Input{Title: "Maintenance", Message: "at noon", ExpiresAt: time.Now().Add(time.Hour).UTC().Format(time.RFC3339), Priority: sshdeck.PriorityHigh, Type: sshdeck.AlertWarning})
		if err != nil || a.ID == "" {
			t.Fatalf("PublishAlert: %v", err)
		}
		list, err := bob.Alerts(ctx)
		if err != nil || len(list) != 1 || list[0].ID != a.ID {
			t.Fatalf("Alerts: %+v %v", list, err)
		}
		if err := bob.DismissAlert(ctx, a.ID); err != nil {
			t.Fatalf("DismissAlert: %v", err)
		}
		if list, _ := bob.Alerts(ctx); len(list) != 0 {
			t.Errorf("Alerts after a dismissal: %+v", list)
		}
		if err := admin.DeleteAlert(ctx, a.ID); err != nil {
			t.Errorf("DeleteAlert: %v", err)
		}
		feed, err := bob.Releases(ctx, 1, 2)
		if err != nil || len(feed.Items) != 2 || feed.Items[0].Version == "" {
			t.Errorf("Releases: %+v %v", feed, err)
		}
	})

	t.Run("tunnels", func(t *testing.T) {
		watchCtx, stop := context.WithCancel(ctx)
		defer stop()
		events := make(chan client.TunnelEvent, 100)
		go func() {
			defer close(events)
			for ev, err := range bob.WatchTunnels(watchCtx) {
				if err != nil {
					return
				}
				events <- ev
			}
		}()
		// Port 1 of 127.0.0.1 refuses: the tunnel fails and retries,
		// which is change enough to watch.
		req := &client.ConnectRequest{Name: "db", SourceHostID: &web.ID, EndpointIP: "127.0.0.1", EndpointSSHPort: ptr(1), EndpointUsername: "x", EndpointPassword: "y", SourcePort: ptr(5432), EndpointPort: ptr(15432), MaxRetries: ptr(0)}
		if err := bob.Connect(ctx, req); err != nil {
			t.Fatalf("Connect: %v", err)
		}
		if ev := waitEvent(t, events, func(ev client.TunnelEvent) bool { return ev.Kind == client.EventStatus && ev.Name == "db" }); ev.Status.SourcePort != 5432 {
			t.Errorf("the status event: %+v", ev.Status)
		}
		all, err := bob.TunnelStatuses(ctx)
		if err != nil || all["db"].EndpointPort != 15432 {
			t.Fatalf("TunnelStatuses: %+v %v", all, err)
		}
		if st, err := bob.TunnelStatus(ctx, "db"); err != nil || st.Name != "db" {
			t.Fatalf("TunnelStatus: %+v %v", st, err)
		}
		// An operator's view of the replica: admin only.
		if text, err := admin.TunnelMetrics(ctx); err != nil || !strings.Contains(text, "# TYPE sshdeck_tunnel_bytes_total counter\n") {
			t.Errorf("TunnelMetrics: %v\n%s", err, text)
		}
		if _, err := bob.TunnelMetrics(ctx); sshdeck.ErrorCode(err) != sshdeck.Forbidden {
			t.Errorf("TunnelMetrics with bob's token: %v, want 403 forbidden", err)
		}
		if err := bob.Cancel(ctx, "db"); err != nil {
			t.Errorf("Cancel: %v", err)
		}
		if err := bob.Disconnect(ctx, "db"); err != nil {
			t.Errorf("Disconnect: %v", err)
		}
		if err := bob.DeleteTunnel(ctx, "db"); err != nil {
			t.Fatalf("DeleteTunnel: %v", err)
		}
		waitEvent(t, events, func(ev client.TunnelEvent) bool { return ev.Kind == client.EventDeleted && ev.Name == "db" })
		if _, err := bob.TunnelStatus(ctx, "db"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
			t.Errorf("TunnelStatus of a deleted tunnel: %v", err)
		}
	})

	// A forward through a host with no SSH server: it starts, and its
	// connection is refused with the service's sentence.
	t.Run("forward", func(t *testing.T) {
		if _, err := bob.CreateHost(ctx, hostInput("nossh", "127.0.0.1")); err != nil {
			t.Fatal(err)
		}
		fctx, stop := context.WithCancel(ctx)
		said := make(chan string, 10)
		ended := make(chan error, 1)
		go func() {
			ended <- bob.ForwardLocal(fctx, "127.0.0.1:0", "127.0.0.1:80", "nossh", func(m string) { said <- m })
		}()
		up := <-said
		addr, ok := strings.CutPrefix(up, "forwarding ")
		if !ok {
			t.Fatalf("the forward said %q first", up)
		}
		addr, _, _ = strings.Cut(addr, " ")
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := conn.Read(make([]byte, 1)); err == nil {
			t.Errorf("read %d bytes through a forward whose host has no SSH server", n)
		}
		conn.Close()
		if got := <-said; !strings.Contains(got, `refused: via host "nossh": source 127.0.0.1:22`) {
			t.Errorf("the refused connection: %q", got)
		}
		stop()
		if err := <-ended; err != nil {
			t.Errorf("the forward ended with %v", err)
		}
		// The service logs the forward's request once its session ends,
		// which the client's end does not wait for.
		waitUntil(t, "the forward's request logged", func() bool { return slices.Contains(s.routes.called(), "tunnel-forward") })
	})

	// Every route was reached, once the requests in flight (the stream)
	// have ended and logged.
	s.close()
	var want []string
	for _, r := range append(slices.Clone(routes.All), routes.Tunnel...) {
		want = append(want, r.Name)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	called := s.routes.called()
	for _, name := range want {
		if !slices.Contains(called, name) {
			t.Errorf("no client call reached route %s", name)
		}
	}
}

// waitEvent reads events until one matches; the stream's end fails the
// test. It waits as long as the test may: the service sends a tunnel's
// changes as they happen, and a missing one is what the test is for.
func waitEvent(t *testing.T, events <-chan client.TunnelEvent, match func(client.TunnelEvent) bool) client.TunnelEvent {
	t.Helper()
	for ev := range events {
		if match(ev) {
			return ev
		}
	}
	t.Fatal("the status stream ended before the event")
	return client.TunnelEvent{}
}

func collect[T any](seq func(func(T, error) bool)) ([]T, error) {
	var all []T
	for item, err := range seq {
		if err != nil {
			return nil, err
		}
		all = append(all, item)
	}
	return all, nil
}

func names[T, K any](list []T, key func(T) K) []K {
	out := make([]K, len(list))
	for i, x := range list {
		out[i] = key(x)
	}
	return out
}

func hostID(r hosts.Record) int64 { return r.ID }

// waitUntil polls ok until it holds, failing after a minute: a wait on
// something the service does once a moment has passed, never on its speed.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
