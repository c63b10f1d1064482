package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/sshdeck/sshdeck/shared/auth"
)

// bootstrapLine is serve's line that names the bootstrap token's id.
var bootstrapLine = regexp.MustCompile(`Its bearer token (tok_[0-9a-f]+), shown this once`)

// bootstrapID returns the id serve printed beside the bootstrap token
// (bootstrapToken has read the lines up to the token).
func (s *server) bootstrapTokenAndID(t *testing.T) (string, string) {
	t.Helper()
	var id string
	for id == "" {
		line, ok := <-s.stdout
		if !ok {
			t.Fatal("serve printed no bootstrap token id")
		}
		if m := bootstrapLine.FindStringSubmatch(line); m != nil {
			id = m[1]
		}
	}
	token := s.bootstrapToken(t)
	for line := range s.stdout {
		if strings.Contains(line, "sshdeck token revoke "+id) {
			return token, id
		}
	}
	t.Fatal("serve did not say how to revoke the bootstrap token")
	return "", ""
}

var tokenID = regexp.MustCompile(`tok_[0-9a-f]+`)

// TestUserAndTokenCommands runs the user and token commands through a
// running server's admin socket (under a token limit of 3), then on the
// store directly.
func TestUserAndTokenCommands(t *testing.T) {
	t.Setenv("SSHDECK_LIMIT_TOKENS", "3")
	dir := t.TempDir()
	srv := serve(t, dir)
	adminToken, adminID := srv.bootstrapTokenAndID(t)

	runCLI(t, dir, true, "user", "add", "bob")
	out, info := runCLI(t, dir, true, "token", "create", "--user", "bob", "--name", "laptop")
	bob := strings.TrimSpace(out)
	bobID := tokenID.FindString(info)
	out, info = runCLI(t, dir, true, "token", "create", "--user", "bob", "--name", "ci", "--ttl", "0")
	bob2, bob2ID := strings.TrimSpace(out), tokenID.FindString(info)
	runCLI(t, dir, true, "token", "create", "--user", "bob")
	_, stderr := runCLI(t, dir, false, "token", "create", "--user", "bob")
	if !strings.Contains(stderr, "tokens per user") {
		t.Fatalf("a fourth token under a limit of 3: %s", stderr)
	}

	out, _ = runCLI(t, dir, true, "token", "list")
	for _, want := range []string{"ID  ", "NAME", "USER", "CREATED", "EXPIRES", "REVOKED", adminID + "  bootstrap  admin", bobID + "  laptop", bob2ID + "  ci", "never"} {
		if !strings.Contains(out, want) {
			t.Errorf("token list lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{adminToken, bob, auth.HashToken(bob), auth.HashToken(adminToken)} {
		if strings.Contains(out, secret) {
			t.Fatalf("token list shows a secret or a hash:\n%s", out)
		}
	}
	if out, _ := runCLI(t, dir, true, "token", "list", "--user", "bob"); strings.Contains(out, adminID) || strings.Count(out, "\n") != 4 {
		t.Fatalf("token list --user bob:\n%s", out)
	}
	if _, stderr := runCLI(t, dir, false, "token", "list", "--user", "nobody"); !strings.Contains(stderr, "not found") {
		t.Fatalf("token list of a missing user: %s", stderr)
	}

	if out, _ := runCLI(t, dir, true, "user", "list"); !regexp.MustCompile(`(?m)^admin +usr_[0-9a-f]+ +true +false `).MatchString(out) || !regexp.MustCompile(`(?m)^bob +usr_[0-9a-f]+ +false +false `).MatchString(out) {
		t.Fatalf("user list:\n%s", out)
	}
	if out, _ := runCLI(t, dir, true, "user", "set-admin", "bob"); !strings.Contains(out, "admin true") {
		t.Fatalf("set-admin: %s", out)
	}
	if out, _ := runCLI(t, dir, true, "user", "set-admin", "bob", "--admin=false"); !strings.Contains(out, "admin false") {
		t.Fatalf("set-admin --admin=false: %s", out)
	}

	// Disabling refuses the user's tokens at once, and revokes them.
	if got := srv.status(t, bob, "/ssh/db/host"); got != 200 {
		t.Fatalf("bob's token: %d", got)
	}
	if out, _ := runCLI(t, dir, true, "user", "disable", "bob"); !strings.Contains(out, "disabled user bob") || !strings.Contains(out, "revoked its 3 token(s)") {
		t.Fatalf("user disable: %s", out)
	}
	if got := srv.status(t, bob, "/ssh/db/host"); got != 401 {
		t.Fatalf("a disabled user's token: %d", got)
	}
	if out, _ := runCLI(t, dir, true, "user", "list"); !regexp.MustCompile(`(?m)^bob +usr_[0-9a-f]+ +false +true `).MatchString(out) {
		t.Fatalf("user list after disable:\n%s", out)
	}
	if _, stderr := runCLI(t, dir, false, "token", "create", "--user", "bob"); !strings.Contains(stderr, "disabled") {
		t.Fatalf("a token for a disabled user: %s", stderr)
	}
	if out, _ := runCLI(t, dir, true, "token", "list", "--user", "bob"); strings.Contains(out, "  no\n") {
		t.Fatalf("bob's tokens after disable are not all revoked:\n%s", out)
	}
	if out, _ := runCLI(t, dir, true, "user", "enable", "bob"); !strings.Contains(out, "enabled user bob") {
		t.Fatalf("user enable: %s", out)
	}
	if got := srv.status(t, bob2, "/ssh/db/host"); got != 401 {
		t.Fatalf("a token revoked by the disable works after the enable: %d", got)
	}
	out, _ = runCLI(t, dir, true, "token", "create", "--user", "bob")
	bob = strings.TrimSpace(out)
	if got := srv.status(t, bob, "/ssh/db/host"); got != 200 {
		t.Fatalf("a new token after the enable: %d", got)
	}

	// revoke --all, and its usage.
	for _, args := range [][]string{{"token", "revoke"}, {"token", "revoke", "--all"}, {"token", "revoke", "--all", "--user", "bob", bobID}, {"token", "revoke", bobID, "--user", "bob"}} {
		if _, stderr := runCLI(t, dir, false, args...); !strings.Contains(stderr, "Usage:") {
			t.Fatalf("sshdeck %v: %s", args, stderr)
		}
	}
	if out, _ := runCLI(t, dir, true, "token", "revoke", "--all", "--user", "bob"); !strings.Contains(out, "revoked 1 token(s) of user bob") {
		t.Fatalf("revoke --all: %s", out)
	}
	if got := srv.status(t, bob, "/ssh/db/host"); got != 401 {
		t.Fatalf("a token after revoke --all: %d", got)
	}
	if _, stderr := runCLI(t, dir, false, "user", "disable", "nobody"); !strings.Contains(stderr, "not found") {
		t.Fatalf("disabling a missing user: %s", stderr)
	}

	// The bootstrap token can be revoked by the id serve printed.
	if out, _ := runCLI(t, dir, true, "token", "revoke", adminID); !strings.Contains(out, "revoked token "+adminID) {
		t.Fatalf("revoking the bootstrap token: %s", out)
	}
	if got := srv.status(t, adminToken, "/ssh/db/host"); got != 401 {
		t.Fatalf("the revoked bootstrap token: %d", got)
	}
	srv.stop(t)

	// Without a server: the store directly.
	if out, _ := runCLI(t, dir, true, "user", "disable", "admin"); !strings.Contains(out, "disabled user admin") {
		t.Fatalf("user disable without a server: %s", out)
	}
	if out, _ := runCLI(t, dir, true, "user", "list"); !regexp.MustCompile(`(?m)^admin +usr_[0-9a-f]+ +true +true `).MatchString(out) {
		t.Fatalf("user list without a server:\n%s", out)
	}
	if out, _ := runCLI(t, dir, true, "token", "list"); !strings.Contains(out, adminID) {
		t.Fatalf("token list without a server:\n%s", out)
	}
}

// TestServeOnABusyPortCreatesNothing: serve binds both addresses before it
// creates anything: a port in use stops it with no data directory, no
// admin user and no token printed.
func TestServeOnABusyPortCreatesNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, args := range [][]string{
		{"serve", "--addr", busy.Addr().String(), "--tunnel-addr", "127.0.0.1:0"},
		{"serve", "--addr", "127.0.0.1:0", "--tunnel-addr", busy.Addr().String()},
	} {
		dir := t.TempDir()
		stdout, stderr := runCLI(t, dir, false, args...)
		if !strings.Contains(stderr, "address already in use") {
			t.Fatalf("sshdeck %v: %s", args, stderr)
		}
		if strings.Contains(stdout, "sshdeck_") || strings.Contains(stdout, "admin") {
			t.Fatalf("sshdeck %v printed %q", args, stdout)
		}
		if _, err := os.Stat(filepath.Join(dir, ".sshdeck")); !os.IsNotExist(err) {
			t.Fatalf("sshdeck %v made the data directory (%v)", args, err)
		}
		// The next start, on free ports, is the first: it bootstraps.
		srv := serve(t, dir)
		srv.bootstrapToken(t)
		srv.stop(t)
	}
}

// TestServeMakesTheDataDirectoryPrivate: an existing data directory open
// to others is made 0700, and serve says so; the admin socket is 0600.
func TestServeMakesTheDataDirectoryPrivate(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, ".sshdeck")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, dir)
	fi, err := os.Stat(data)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	said := false
	for _, line := range srv.startLogs {
		said = said || strings.Contains(line, "made it private") && strings.Contains(line, `"mode_was":"0755"`)
	}
	if !said {
		t.Fatalf("serve did not say it made the data directory private: %q", srv.startLogs)
	}
	fi, err = os.Stat(filepath.Join(data, "admin.sock"))
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket: %v, %v; want a socket of mode 0600", fi.Mode(), err)
	}
	srv.stop(t)
	// A private directory is left alone, silently.
	srv = serve(t, dir)
	for _, line := range srv.startLogs {
		if strings.Contains(line, "made it private") {
			t.Fatalf("serve changed a private directory: %s", line)
		}
	}
}

// TestAdminSocketCreatedPrivate: the socket is created under the umask
// 077 whatever the process's umask (here 0, which would make it 0777), so
// that no chmod after it closes a window; the process's umask is restored.
func TestAdminSocketCreatedPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "admin.sock")
	l, err := listenPrivate(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.Fatalf("socket created with mode %#o: open to others", perm)
	}
	if got := syscall.Umask(0); got != 0 {
		t.Fatalf("umask %#o after listenPrivate, want the process's (0) back", got)
	}
}
