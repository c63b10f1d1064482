package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base32"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/client"
	"github.com/sshdeck/sshdeck/shared/accounts"
	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/auth"
)

// clientEnv is the environment of the client commands: a home of their
// own and the config file at config; no SSHDECK_URL or SSHDECK_TOKEN, so
// that the profiles are what is tested.
func clientEnv(home, config string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SSHDECK_CONFIG=" + config}
}

// runStdin runs sshdeck with env and stdin.
func runStdin(t *testing.T, env []string, stdin string, wantOK bool, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); (err == nil) != wantOK {
		t.Fatalf("sshdeck %v: %v\nstdout: %s\nstderr: %s", args, err, &stdout, &stderr)
	}
	return stdout.String(), stderr.String()
}

// withUser starts serve and adds a user with a password, through the
// client with the bootstrap token.
func withUser(t *testing.T, name, password string) (*server, *client.Client) {
	t.Helper()
	srv := serve(t, t.TempDir())
	admin := &client.Client{BaseURL: srv.url, TunnelURL: srv.tunnelURL, Token: srv.bootstrapToken(t)}
	if _, err := admin.CreateUser(context.Background(), accounts.NewUser{Username: name, Password: password}); err != nil {
		t.Fatal(err)
	}
	return srv, admin
}

// readProfiles reads the config file.
func readProfiles(t *testing.T, path string) profiles {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ps profiles
	if err := json.Unmarshal(data, &ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestLoginProfilesAndHostCommands logs in with a password and with a
// token on stdin into two profiles, runs the host commands in both, and
// logs out.
func TestLoginProfilesAndHostCommands(t *testing.T) {
	ctx := context.Background()
	srv, admin := withUser(t, "bob", "bob's password")
	home := t.TempDir()
	config := filepath.Join(home, "conf", "sshdeck.json")
	env := clientEnv(home, config)

	out, _ := runStdin(t, env, "bob's password\n", true, "login", "--url", srv.url, "--tunnel-url", srv.tunnelURL, "--user", "bob")
	if !strings.Contains(out, `as bob: profile "default" (current)`) {
		t.Errorf("login: %q", out)
	}
	if fi, err := os.Stat(config); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the config file: %v %v", fi.Mode(), err)
	}
	if fi, _ := os.Stat(filepath.Dir(config)); fi.Mode().Perm() != 0o700 {
		t.Errorf("the config directory: %v", fi.Mode())
	}
	ps := readProfiles(t, config)
	bob := ps.Profiles["default"]
	if ps.Current != "default" || bob == nil || bob.URL != srv.url || bob.TunnelURL != srv.tunnelURL || bob.TokenID == "" || bob.User != "bob" || bob.ExpiresAt.IsZero() {
		t.Fatalf("the profile: %+v", ps)
	}
	if strings.Contains(out, bob.Token) {
		t.Error("login printed the token")
	}

	// host add, ls, get.
	out, _ = runStdin(t, env, "ssh password\n", true, "host", "add", "--name", "web", "--ip", "10.0.0.1", "--user", "ops", "--password-stdin", "--tags", "a,b")
	if out != "1\n" {
		t.Fatalf("host add: %q", out)
	}
	out, _ = runStdin(t, env, "", true, "host", "add", "--name", "db", "--ip", "10.0.0.2", "--port", "2222", "--user", "pg", "--jump", "web")
	if out != "2\n" {
		t.Fatalf("host add --jump: %q", out)
	}
	out, _ = runStdin(t, env, "", true, "host", "ls")
	want := "ID  NAME  ADDRESS        USER  AUTH      JUMPS\n" +
		"1   web   10.0.0.1:22    ops   password  -\n" +
		"2   db    10.0.0.2:2222  pg    none      1\n"
	if out != want {
		t.Errorf("host ls:\n%s\nwant:\n%s", out, want)
	}
	out, _ = runStdin(t, env, "", true, "host", "ls", "--json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 2 || list[0]["name"] != "web" || list[0]["password"] != "" {
		t.Errorf("host ls --json: %v %s", err, out)
	}
	out, _ = runStdin(t, env, "", true, "host", "ls", "--json", "--credentials")
	if !strings.Contains(out, `"password": "ssh password"`) {
		t.Errorf("host ls --json --credentials lacks the password: %s", out)
	}
	out, _ = runStdin(t, env, "", true, "host", "get", "web")
	if !strings.Contains(out, "ADDRESS  10.0.0.1:22\n") || !strings.Contains(out, "TAGS     a,b\n") || strings.Contains(out, "ssh password") {
		t.Errorf("host get:\n%s", out)
	}
	if _, stderr := runStdin(t, env, "", false, "host", "get", "nope"); stderr != "sshdeck: no host is named \"nope\"\n" {
		t.Errorf("host get of no host: %q", stderr)
	}

	// A second profile, of a token given on stdin: it becomes current.
	tok, err := admin.CreateToken(ctx, accounts.NewToken{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	out, _ = runStdin(t, env, tok.Token+"\n", true, "login", "--url", srv.url, "--tunnel-url", srv.tunnelURL, "--profile", "adm", "--token-stdin")
	if !strings.Contains(out, `as admin: profile "adm" (current)`) {
		t.Errorf("login --token-stdin: %q", out)
	}
	if out, _ = runStdin(t, env, "", true, "host", "ls"); out != "ID  NAME  ADDRESS  USER  AUTH  JUMPS\n" {
		t.Errorf("host ls as admin: %q", out)
	}
	if out, _ = runStdin(t, env, "", true, "--profile", "default", "host", "ls"); !strings.Contains(out, "web") {
		t.Errorf("sshdeck --profile default host ls: %q", out)
	}
	if out, _ = runStdin(t, append(env, "SSHDECK_PROFILE=default"), "", true, "host", "ls", "--json"); !strings.Contains(out, "web") {
		t.Errorf("SSHDECK_PROFILE=default host ls: %q", out)
	}
	if _, stderr := runStdin(t, env, "", false, "host", "ls", "--profile", "nope"); !strings.Contains(stderr, `no profile "nope"`) {
		t.Errorf("an unknown profile: %q", stderr)
	}
	if _, stderr := runStdin(t, env, "not a token\n", false, "login", "--url", srv.url, "--profile", "bad", "--token-stdin"); !strings.Contains(stderr, "nothing was stored") {
		t.Errorf("login --token-stdin of a bad token: %q", stderr)
	}

	// host rm, then logout of bob: his login token is revoked.
	if out, _ = runStdin(t, env, "", true, "--profile", "default", "host", "rm", "db"); out != "deleted host 2\n" {
		t.Errorf("host rm: %q", out)
	}
	if out, _ = runStdin(t, env, "", true, "logout", "--profile", "default"); !strings.Contains(out, "revoked its token "+bob.TokenID) {
		t.Errorf("logout: %q", out)
	}
	if _, err := (&client.Client{BaseURL: srv.url, Token: bob.Token}).Me(ctx); !client.IsUnauthorized(err) {
		t.Errorf("bob's token after logout: %v", err)
	}
	if ps := readProfiles(t, config); ps.Profiles["default"] != nil || ps.Current != "adm" {
		t.Errorf("profiles after logout: %+v", ps)
	}
}

// TestLoginWithTOTP: a user with TOTP on is asked for a code after the
// password; both come from stdin, a line each.
func TestLoginWithTOTP(t *testing.T) {
	ctx := context.Background()
	srv, _ := withUser(t, "carol", "carol's password")
	if wait := 30*time.Second - time.Duration(time.Now().UnixNano())%(30*time.Second); wait < 3*time.Second {
		time.Sleep(wait)
	}
	anon := &client.Client{BaseURL: srv.url}
	res, err := anon.Login(ctx, accounts.LoginRequest{Username: "carol", Password: "carol's password"})
	if err != nil {
		t.Fatal(err)
	}
	carol := &client.Client{BaseURL: srv.url, Token: res.Token}
	secret, err := carol.BeginTOTP(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret.Secret)
	now := time.Now()
	if err := carol.EnableTOTP(ctx, auth.TOTPCode(key, now.Add(-30*time.Second))); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := clientEnv(home, filepath.Join(home, "config.json"))
	out, stderr := runStdin(t, env, "carol\ncarol's password\n"+auth.TOTPCode(key, now)+"\n", true, "login", "--url", srv.url)
	if !strings.Contains(out, "as carol") {
		t.Errorf("login with TOTP: %q %q", out, stderr)
	}
	// Without a code on stdin the login fails, saying what is missing.
	if _, stderr := runStdin(t, env, "carol\ncarol's password\n", false, "login", "--url", srv.url); !strings.Contains(stderr, "no TOTP code on stdin") {
		t.Errorf("login without the code: %q", stderr)
	}
}

// TestRevokedTokenSaysWhichProfile: a profile whose token was revoked
// makes every client command print one line naming it.
func TestRevokedTokenSaysWhichProfile(t *testing.T) {
	srv, _ := withUser(t, "dave", "dave's password")
	home := t.TempDir()
	config := filepath.Join(home, "config.json")
	env := clientEnv(home, config)
	runStdin(t, env, "dave's password\n", true, "login", "--url", srv.url, "--tunnel-url", srv.tunnelURL, "--user", "dave", "--profile", "work")
	p := readProfiles(t, config).Profiles["work"]
	if err := (&client.Client{BaseURL: srv.url, Token: p.Token}).DeleteToken(context.Background(), p.TokenID); err != nil {
		t.Fatal(err)
	}
	const want = "sshdeck: the token of profile \"work\" is expired or revoked: run sshdeck login --profile work\n"
	for _, args := range [][]string{{"host", "ls"}, {"tunnel", "ls"}, {"host", "export"}} {
		if _, stderr := runStdin(t, env, "", false, args...); stderr != want {
			t.Errorf("sshdeck %v: %q", args, stderr)
		}
	}
}

// TestTunnelCommands connects a tunnel of two stored hosts (whose SSH
// port refuses, so that it fails and retries), lists it, and watches it
// change until it is deleted.
func TestTunnelCommands(t *testing.T) {
	srv, _ := withUser(t, "erin", "erin's password")
	home := t.TempDir()
	env := clientEnv(home, filepath.Join(home, "config.json"))
	runStdin(t, env, "erin's password\n", true, "login", "--url", srv.url, "--tunnel-url", srv.tunnelURL, "--user", "erin")
	for _, name := range []string{"src", "dst"} {
		runStdin(t, env, "pw\n", true, "host", "add", "--name", name, "--ip", "127.0.0.1", "--port", "1", "--user", "u", "--password-stdin")
	}

	watch := exec.Command(binary, "tunnel", "watch", "db")
	watch.Env = env
	pipe, _ := watch.StdoutPipe()
	var watchErr bytes.Buffer
	watch.Stderr = &watchErr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer watch.Process.Kill()
	lines := bufio.NewScanner(pipe)
	// waitLine reads the watch's lines until one holds want; the watch
	// ending first fails the test.
	waitLine := func(want string) string {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), want) {
				return lines.Text()
			}
		}
		t.Fatalf("the watch ended before a line with %q: %s", want, &watchErr)
		return ""
	}

	out, _ := runStdin(t, env, "", true, "tunnel", "connect", "db", "--source", "src", "--endpoint", "dst", "--source-port", "5432", "--endpoint-port", "15432", "--max-retries", "0")
	if out != "connecting db: follow it with sshdeck tunnel watch db\n" {
		t.Errorf("tunnel connect: %q", out)
	}
	waitLine("  db  ")
	out, _ = runStdin(t, env, "", true, "tunnel", "ls")
	if !strings.HasPrefix(out, "NAME  STATE") || !strings.Contains(out, "relay  ") || !strings.Contains(out, "5432->15432") {
		t.Errorf("tunnel ls:\n%s", out)
	}
	out, _ = runStdin(t, env, "", true, "tunnel", "ls", "--json")
	var all map[string]client.TunnelStatus
	if err := json.Unmarshal([]byte(out), &all); err != nil || all["db"].EndpointPort != 15432 {
		t.Errorf("tunnel ls --json: %v %s", err, out)
	}
	if out, _ = runStdin(t, env, "", true, "tunnel", "disconnect", "db"); out != "db: Tunnel disconnected\n" {
		t.Errorf("tunnel disconnect: %q", out)
	}
	waitLine("db  disconnected")
	if out, _ = runStdin(t, env, "", true, "tunnel", "rm", "db"); out != "db: Tunnel deleted\n" {
		t.Errorf("tunnel rm: %q", out)
	}
	waitLine("db  deleted")
	if _, stderr := runStdin(t, env, "", false, "tunnel", "rm", "db"); !strings.HasPrefix(stderr, "sshdeck: ") {
		t.Errorf("tunnel rm of no tunnel: %q", stderr)
	}

	// ^C ends a watch cleanly.
	watch.Process.Signal(syscall.SIGINT)
	if err := watch.Wait(); err != nil {
		t.Errorf("the watch after SIGINT: %v %s", err, &watchErr)
	}
}

// TestTunnelWatchJSON prints one JSON object per line.
func TestTunnelWatchJSON(t *testing.T) {
	var buf bytes.Buffer
	st := client.TunnelStatus{Name: "db", Status: "connected"}
	printEvent(&buf, client.TunnelEvent{Kind: client.EventStatus, Name: "db", Status: &st}, true)
	printEvent(&buf, client.TunnelEvent{Kind: client.EventDeleted, Name: "db"}, true)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var first, second map[string]any
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[1]), &second) != nil ||
		first["event"] != "status" || first["status"].(map[string]any)["status"] != "connected" || second["event"] != "deleted" || second["name"] != "db" {
		t.Errorf("tunnel watch --json:\n%s", &buf)
	}
}

// TestAuditCommand: a user's own records as a table and as NDJSON, the
// login's first; another user's filter refused, and --since checked.
func TestAuditCommand(t *testing.T) {
	srv, _ := withUser(t, "frank", "frank's password")
	home := t.TempDir()
	env := clientEnv(home, filepath.Join(home, "config.json"))
	runStdin(t, env, "frank's password\n", true, "login", "--url", srv.url, "--tunnel-url", srv.tunnelURL, "--user", "frank")
	runStdin(t, env, "pw\n", true, "host", "add", "--name", "web", "--ip", "10.0.0.9", "--user", "u", "--password-stdin")

	out, _ := runStdin(t, env, "", true, "audit")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(lines[1], " login ") ||
		!strings.Contains(lines[2], " create-host ") || !strings.Contains(lines[2], " host 1 ") || !strings.Contains(lines[2], " success ") {
		t.Errorf("sshdeck audit:\n%s", out)
	}
	out, _ = runStdin(t, env, "", true, "audit", "--json", "--since", "1h")
	var records []audit.Record
	for line := range strings.Lines(out) {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit --json line %q: %v", line, err)
		}
		records = append(records, r)
	}
	if len(records) != 2 || records[1].Action != "create-host" || records[1].Actor != records[0].Actor || records[1].Outcome != "success" {
		t.Errorf("audit --json: %+v", records)
	}
	_, stderr := runStdin(t, env, "", false, "audit", "--actor", "usr_someone")
	if !strings.Contains(stderr, "only an admin reads another user's audit records") {
		t.Errorf("another's records: %s", stderr)
	}
	_, stderr = runStdin(t, env, "", false, "audit", "--since", "yesterday")
	if !strings.Contains(stderr, `"yesterday" is neither a duration`) {
		t.Errorf("a bad --since: %s", stderr)
	}
}
