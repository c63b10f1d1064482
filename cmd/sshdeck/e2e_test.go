package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/internal/gobuild"
	"github.com/sshdeck/sshdeck/internal/upstreamtest"
	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// binary is the sshdeck command built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	var remove func()
	binary, remove = gobuild.Command("sshdeck")
	code := m.Run()
	remove()
	os.Exit(code)
}

type server struct {
	cmd       *exec.Cmd
	url       string // the API
	tunnelURL string // the tunnel service
	stdout    chan string
	done      chan error
	// startLogs are the log lines serve wrote before it served.
	startLogs []string
}

// serve starts `sshdeck serve` in dir on a free port and waits until it
// logs that it serves: readiness is that line, never a sleep. The wait has
// no deadline (a process starting on a busy machine takes what it takes);
// the server exiting ends it.
func serve(t *testing.T, dir string) *server {
	t.Helper()
	return serveAt(t, dir, "127.0.0.1:0", "127.0.0.1:0")
}

// serveAt is serve on the given addresses: a server restarted where its
// clients know it.
func serveAt(t *testing.T, dir, addr, tunnelAddr string) *server {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--addr", addr, "--tunnel-addr", tunnelAddr)
	cmd.Dir = dir
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, stdout: lines(stdout), done: make(chan error, 1)}
	logs := lines(stderr)
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-s.done })
	for s.url == "" {
		line, ok := <-logs
		if !ok {
			t.Fatal("serve exited before serving")
		}
		var entry struct {
			Msg, API string
			Tunnel   string `json:"tunnel_service"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "serving" {
			s.url, s.tunnelURL = entry.API, entry.Tunnel
		}
		s.startLogs = append(s.startLogs, line)
	}
	go func() {
		for range logs {
		}
	}()
	return s
}

func lines(r io.Reader) chan string {
	ch := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
		close(ch)
	}()
	return ch
}

// bootstrapToken waits for the token a first start prints on stdout. serve
// prints it before its "serving" line, so once serve has returned the token
// is in the pipe: the wait is for this test's reader goroutine, not for the
// server's work, and a minute is far beyond it (it fails a server that
// printed none without waiting for go test's timeout).
func (s *server) bootstrapToken(t *testing.T) string {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case line, ok := <-s.stdout:
			if !ok {
				t.Fatal("serve printed no bootstrap token")
			}
			if m := tokenLine.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-deadline:
			t.Fatal("serve printed no bootstrap token")
		}
	}
}

// stop sends SIGTERM and returns the exit error (nil for a clean exit). It
// waits for the exit with no deadline of its own: serve bounds its shutdown
// itself (10 s for requests in flight), and how long closing takes on a busy
// machine is the machine's.
func (s *server) stop(t *testing.T) error {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	err := <-s.done
	s.done <- err
	return err
}

func (s *server) status(t *testing.T, token, path string) int {
	t.Helper()
	status, _ := s.get(t, token, path)
	return status
}

// get answers GET path with the token: its status and body.
func (s *server) get(t *testing.T, token, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// runCLI runs an sshdeck command in dir and returns its stdout and stderr.
func runCLI(t *testing.T, dir string, wantOK bool, args ...string) (string, string) {
	t.Helper()
	return runCLIEnv(t, dir, nil, wantOK, args...)
}

// runCLIEnv is runCLI with the environment env (nil: this process's).
func runCLIEnv(t *testing.T, dir string, env []string, wantOK bool, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if (err == nil) != wantOK {
		t.Fatalf("sshdeck %v: %v\nstdout: %s\nstderr: %s", args, err, &stdout, &stderr)
	}
	return stdout.String(), stderr.String()
}

var tokenLine = regexp.MustCompile(`^\s*(sshdeck_[A-Za-z0-9_-]{43})$`)

func TestServeBootstrapsAndIsAdministeredWhileRunning(t *testing.T) {
	dir := t.TempDir()
	srv := serve(t, dir)
	adminToken := srv.bootstrapToken(t)
	if got := srv.status(t, "", "/healthz"); got != 200 {
		t.Fatalf("healthz: %d", got)
	}
	if got := srv.status(t, adminToken, "/ssh/db/host"); got != 200 {
		t.Fatalf("bootstrap token: %d", got)
	}

	// The admin commands reach the store through the running server.
	runCLI(t, dir, true, "user", "add", "bob")
	_, stderr := runCLI(t, dir, false, "user", "add", "--admin", "bob")
	if !strings.Contains(stderr, `"bob" is taken`) {
		t.Fatalf("duplicate user: %s", stderr)
	}
	out, info := runCLI(t, dir, true, "token", "create", "--user", "bob", "--name", "laptop", "--ttl", "1h")
	bob := strings.TrimSpace(out)
	if !tokenLine.MatchString(bob) {
		t.Fatalf("token create printed %q", out)
	}
	if got := srv.status(t, bob, "/ssh/db/host"); got != 200 {
		t.Fatalf("bob's token: %d", got)
	}
	id := regexp.MustCompile(`tok_[0-9a-f]+`).FindString(info)
	out, _ = runCLI(t, dir, true, "token", "revoke", id)
	if !strings.Contains(out, "revoked token "+id) {
		t.Fatalf("revoke printed %q", out)
	}
	if got := srv.status(t, bob, "/ssh/db/host"); got != 401 {
		t.Fatalf("revoked token still works: %d", got)
	}
	_, stderr = runCLI(t, dir, false, "token", "create", "--user", "nobody")
	if !strings.Contains(stderr, "not found") {
		t.Fatalf("token for a missing user: %s", stderr)
	}

	if err := srv.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".sshdeck", "admin.sock")); !os.IsNotExist(err) {
		t.Fatal("admin socket left behind")
	}
	for line := range srv.stdout {
		if tokenLine.MatchString(line) {
			t.Fatal("a second token was printed")
		}
	}

	// Without a server, the commands open the store themselves; a restarted
	// server prints no token and honours the ones made meanwhile.
	out, _ = runCLI(t, dir, true, "token", "create", "--user", "admin")
	srv = serve(t, dir)
	if got := srv.status(t, strings.TrimSpace(out), "/ssh/db/host"); got != 200 {
		t.Fatalf("token made while stopped: %d", got)
	}

	// Each command left its audit record, through the socket or not: the
	// OS user's, from "local"; the first start's admin is the system's.
	status, export := srv.get(t, adminToken, "/audit/export")
	if status != 200 {
		t.Fatalf("audit export: %d %s", status, export)
	}
	var got []string
	for line := range strings.Lines(export) {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.SourceIP == "local" {
			got = append(got, fmt.Sprintf("%s %s %s %s", r.Actor, r.Action, r.Outcome, r.Code))
		}
	}
	me := cliActor()
	want := []string{
		"system bootstrap success ",
		me + " user-add success ", me + " user-add failure conflict",
		me + " token-create success ", me + " token-revoke success ", me + " token-create failure not_found",
		me + " token-create success ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the admin commands' records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	srv.stop(t)
	for line := range srv.stdout {
		if tokenLine.MatchString(line) {
			t.Fatal("a restarted server printed a token")
		}
	}
}

// TestAlertCommands publishes, lists and deletes alerts through a running
// server's admin socket, and directly on the store when none runs.
func TestAlertCommands(t *testing.T) {
	dir := t.TempDir()
	srv := serve(t, dir)
	token := srv.bootstrapToken(t)
	id, info := runCLI(t, dir, true, "alert", "publish", "--title", "Maintenance tonight", "--priority", "high", "--type", "warning", "--expires", "2h",
		"--action-url", "https://status.example.com", "--action-text", "Status")
	id = strings.TrimSpace(id)
	if !regexp.MustCompile(`^alr_[0-9a-f]{16}$`).MatchString(id) || !strings.Contains(info, "published alert "+id+" (high)") {
		t.Fatalf("alert publish printed %q and %q", id, info)
	}
	status, body := srv.get(t, token, "/alerts")
	if status != 200 || !strings.Contains(body, `"id":"`+id+`","title":"Maintenance tonight"`) || !strings.Contains(body, `"priority":"high","type":"warning","actionUrl":"https://status.example.com","actionText":"Status"`) {
		t.Fatalf("GET /alerts: %d %s", status, body)
	}
	if out, _ := runCLI(t, dir, true, "alert", "list"); !strings.Contains(out, id+"  high      warning") || !strings.Contains(out, "Maintenance tonight") {
		t.Fatalf("alert list printed:\n%s", out)
	}
	if _, stderr := runCLI(t, dir, false, "alert", "publish", "--title", "x", "--priority", "urgent"); !strings.Contains(stderr, "priority: must be") {
		t.Fatalf("a bad priority: %s", stderr)
	}
	if _, stderr := runCLI(t, dir, false, "alert", "publish", "--title", "x", "--expires-at", "2000-01-01T00:00:00Z"); !strings.Contains(stderr, "must be in the future") {
		t.Fatalf("an expiry in the past: %s", stderr)
	}
	if out, _ := runCLI(t, dir, true, "alert", "delete", id); !strings.Contains(out, "deleted alert "+id) {
		t.Fatalf("alert delete printed %q", out)
	}
	if _, body := srv.get(t, token, "/alerts"); strings.TrimSpace(body) != "[]" {
		t.Fatalf("GET /alerts after delete: %s", body)
	}
	if _, stderr := runCLI(t, dir, false, "alert", "delete", id); !strings.Contains(stderr, "not found") {
		t.Fatalf("deleting twice: %s", stderr)
	}
	srv.stop(t)

	// No server: straight to the store, and a restarted server shows it.
	id, _ = runCLI(t, dir, true, "alert", "publish", "--title", "Written offline")
	srv = serve(t, dir)
	if _, body := srv.get(t, token, "/alerts"); !strings.Contains(body, strings.TrimSpace(id)) {
		t.Fatalf("an alert published while stopped: %s", body)
	}
}

func TestSecondServerOnTheSameDataFails(t *testing.T) {
	dir := t.TempDir()
	serve(t, dir)
	_, stderr := runCLI(t, dir, false, "serve", "--addr", "127.0.0.1:0", "--tunnel-addr", "127.0.0.1:0")
	if !strings.Contains(stderr, "in use by another process") {
		t.Fatalf("second serve: %s", stderr)
	}
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{}, {"frobnicate"}, {"user"}, {"user", "add"}, {"token", "create"}, {"serve", "extra"}, {"serve", "--nope"}} {
		_, stderr := runCLI(t, dir, false, args...)
		if !strings.Contains(stderr, "Usage:") {
			t.Fatalf("sshdeck %v: no usage in %q", args, stderr)
		}
	}
	if out, _ := runCLI(t, dir, true, "help"); !strings.Contains(out, "sshdeck token create") {
		t.Fatalf("help: %s", out)
	}
}

// TestReadmeWalkthrough runs the README's walk-through, as written, against
// a server started the way `make run` starts it (bin/sshdeck in the current
// directory, default data directory).
func TestReadmeWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by the walk-through (make test installs it): %v", tool, err)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(readme), "<!-- walkthrough:begin -->")
	block, _, ok := strings.Cut(rest, "<!-- walkthrough:end -->")
	if !ok {
		t.Fatal("README has no walk-through markers")
	}
	script := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(block), "```sh"), "```")
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "bin"), 0o755)
	if err := os.Symlink(binary, filepath.Join(dir, "bin", "sshdeck")); err != nil {
		t.Fatal(err)
	}
	// The feed's repository, on a GitHub served here: CI has no internet.
	t.Setenv("SSHDECK_RELEASES_REPO", "acme/deck")
	t.Setenv("SSHDECK_RELEASES_API_URL", upstreamtest.StartGitHub(t).URL)
	srv := serve(t, dir)
	script = strings.ReplaceAll(script, "http://127.0.0.1:8080", srv.url)
	script = strings.ReplaceAll(script, "http://127.0.0.1:8081", srv.tunnelURL)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	// sshdeck login writes the user's config directory: this test's.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("walk-through failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"set the password of user admin", `"name":"inventory","scopes":["hosts:read"]`,
		`lacks the scope \"hosts:write\" that POST /ssh/db/host needs","code":"forbidden"}`,
		"created host 1", `"tags":["prod","eu"]`, "\n412\n", `{"message":"SSH host deleted"}`, "\n404\n400\n",
		`{"message":"File added to recent"}`, `{"message":"Shortcut added"}`,
		`[{"name":"nginx.conf","path":"/etc/nginx/nginx.conf","isSSH":true,"sshSessionId":"","hostId":1,`,
		`[{"name":"nginx","path":"/var/log/nginx/"`,
		`"title":"Maintenance tonight"`, `"priority":"high"`, `{"message":"Alert dismissed"}` + "\n[]\n",
		`"title":"acme/deck releases"`, `"total_count":2,"page":1,"per_page":2,"cached":false,"cache_age":0}`,
		`"per_page":2,"cached":true,`,
		`{"message":"Connection request received"}`, `{"demo":{"name":"demo","status":"failed"`, `"errorType":"network"`,
		"sshdeck_tunnels{state=\"connected\"} 0\n",
		`"code":"forbidden"}`,
		"imported bastion as host 2\nimported app as host 3\n", "line 11: Match: skipped",
		"Host app\n", "ProxyJump bastion\n", `"name":"by-id","status":"failed"`, "jump host 1",
		`as admin: profile "default" (current)`, "2   bastion  127.0.0.1:1",
		"sshdeck: forwarding 127.0.0.1:15432 → localhost:5432 via app",
		`localhost:5432: refused: via host "app": jump host 1 (127.0.0.1:1): connection refused or unreachable`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("walk-through output lacks %q:\n%s", want, out)
		}
	}
}

// TestAdminCommandsOnADynamoDBTable runs the admin commands against a
// deployment's table (minidyn here), as an operator does after `make deploy`.
func TestAdminCommandsOnADynamoDBTable(t *testing.T) {
	srv := dynamotest.Start(t)
	env := append(os.Environ(), srv.Env()...)
	dir := t.TempDir()
	run := func(wantOK bool, args ...string) (string, string) {
		t.Helper()
		return runCLIEnv(t, dir, env, wantOK, args...)
	}

	run(true, "user", "add", "ops", "--admin")
	out, _ := run(true, "token", "create", "--user", "ops", "--ttl", "1h")
	m := tokenLine.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		t.Fatalf("token create printed %q", out)
	}
	store := dynamo.New(srv.Client, srv.Table)
	tok, err := store.TokenByHash(t.Context(), auth.HashToken(m[1]))
	if err != nil {
		t.Fatalf("the token is not in the table: %v", err)
	}
	if u, err := store.User(t.Context(), tok.UserID); err != nil || u.Name != "ops" || !u.Admin {
		t.Fatalf("token's user: %+v, %v", u, err)
	}
	run(true, "token", "revoke", tok.ID)
	if tok, err := store.TokenByHash(t.Context(), tok.Hash); err != nil || !tok.Revoked {
		t.Fatalf("after revoke: %+v, %v", tok, err)
	}
	if _, stderr := run(false, "user", "add", "ops"); !strings.Contains(stderr, "taken") {
		t.Fatalf("a taken name: %s", stderr)
	}
	// The user and token commands of the table: a listing, revoke --all,
	// disable (which refuses new tokens), enable, set-admin.
	run(true, "token", "create", "--user", "ops", "--name", "ci")
	// A token with chosen scopes; an unknown one is refused, naming it.
	scoped, _ := run(true, "token", "create", "--user", "ops", "--name", "inventory", "--scope", "hosts:read,files:read")
	if st, err := store.TokenByHash(t.Context(), auth.HashToken(strings.TrimSpace(scoped))); err != nil ||
		sshdeck.JoinScopes(st.Scopes, " ") != "hosts:read files:read" {
		t.Fatalf("token create --scope: %+v, %v", st, err)
	}
	if _, stderr := run(false, "token", "create", "--user", "ops", "--scope", "hosts:read,hosts:delete"); !strings.Contains(stderr, `"hosts:delete"`) {
		t.Fatalf("an unknown scope: %s", stderr)
	}
	if out, _ := run(true, "token", "list", "--user", "ops"); !strings.Contains(out, tok.ID) || !strings.Contains(out, "  ci  ") {
		t.Fatalf("token list on the table:\n%s", out)
	}
	if out, _ := run(true, "token", "revoke", "--all", "--user", "ops"); !strings.Contains(out, "revoked 2 token(s) of user ops") {
		t.Fatalf("revoke --all on the table: %s", out)
	}
	run(true, "user", "disable", "ops")
	if _, stderr := run(false, "token", "create", "--user", "ops"); !strings.Contains(stderr, "disabled") {
		t.Fatalf("a token for a disabled user on the table: %s", stderr)
	}
	run(true, "user", "enable", "ops")
	run(true, "user", "set-admin", "ops", "--admin=false")
	if out, _ := run(true, "user", "list"); !regexp.MustCompile(`(?m)^ops +usr_[0-9a-f]+ +false +false `).MatchString(out) {
		t.Fatalf("user list on the table:\n%s", out)
	}
	alertID, _ := run(true, "alert", "publish", "--title", "Deployed", "--expires", "1h")
	alertID = strings.TrimSpace(alertID)
	if as, err := store.Alerts(t.Context(), time.Now()); err != nil || len(as) != 1 || as[0].ID != alertID {
		t.Fatalf("alerts in the table: %+v, %v", as, err)
	}
	if out, _ := run(true, "alert", "list"); !strings.Contains(out, alertID) {
		t.Fatalf("alert list: %s", out)
	}
	run(true, "alert", "delete", alertID)
	if as, err := store.Alerts(t.Context(), time.Now()); err != nil || len(as) != 0 {
		t.Fatalf("alerts in the table after delete: %+v, %v", as, err)
	}
	// Nothing was written locally.
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the admin commands on a table wrote %d files locally", len(entries))
	}
}

// TestUserPasswd: `sshdeck user passwd` reads the password from stdin (the
// first line, never an argument) and stores its argon2id hash, against the
// local store directly and against a deployment's table; a blank stdin is
// refused with a sentence saying what to do, and nothing is stored.
func TestUserPasswd(t *testing.T) {
	passwd := func(t *testing.T, dir string, env []string, stdin string, wantOK bool, args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"user", "passwd"}, args...)...)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("user passwd %v: %v\n%s", args, err, out)
		}
		if strings.Contains(string(out), "hunter22hunter22") {
			t.Fatalf("user passwd printed the password: %s", out)
		}
		return string(out)
	}
	check := func(t *testing.T, store sshdeck.Store, name string) {
		t.Helper()
		u, err := store.UserByName(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := store.LoginSecrets(t.Context(), u.ID)
		if err != nil {
			t.Fatalf("no login secrets after user passwd: %v", err)
		}
		if ok, err := auth.VerifyPassword(t.Context(), ls.PasswordHash, "hunter22hunter22"); !ok || err != nil {
			t.Fatalf("the stored hash does not verify the password: %v, %v", ok, err)
		}
	}

	t.Run("local store", func(t *testing.T) {
		dir := t.TempDir()
		runCLI(t, dir, true, "user", "add", "ops")
		if out := passwd(t, dir, nil, "\n", false, "ops"); !strings.Contains(out, "no password on stdin") {
			t.Fatalf("a blank stdin: %s", out)
		}
		if out := passwd(t, dir, nil, "short\n", false, "ops"); !strings.Contains(out, "at least 8") {
			t.Fatalf("a short password: %s", out)
		}
		passwd(t, dir, nil, "hunter22hunter22\r\n", true, "ops")
		store, err := embedded.Open(filepath.Join(dir, ".sshdeck", "sshdeck.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		check(t, store, "ops")
	})
	t.Run("table", func(t *testing.T) {
		srv := dynamotest.Start(t)
		env := append(os.Environ(), srv.Env()...)
		dir := t.TempDir()
		runCLIEnv(t, dir, env, true, "user", "add", "ops")
		passwd(t, dir, env, "hunter22hunter22\n", true, "ops")
		if out := passwd(t, dir, env, "hunter22hunter22\n", false, "nobody"); !strings.Contains(out, "not found") {
			t.Fatalf("an unknown user: %s", out)
		}
		check(t, dynamo.New(srv.Client, srv.Table), "ops")
	})
}
