package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// hostEnv is the environment of the host commands against srv: HOME is
// home, SSHDECK_URL the server's, SSHDECK_TOKEN token (none when "").
func hostEnv(srv *server, home, token string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SSHDECK_URL=" + srv.url}
	if token != "" {
		env = append(env, "SSHDECK_TOKEN="+token)
	}
	return env
}

// writeKey writes a new unencrypted ed25519 key in OpenSSH's format to
// path and returns its content.
func writeKey(t *testing.T, path string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(block)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return string(data)
}

type importedHost struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	IP           string `json:"ip"`
	Port         int    `json:"port"`
	Username     string `json:"username"`
	AuthType     string `json:"authType"`
	IdentityFile string `json:"identityFile"`
	Key          string `json:"key"`
	JumpHosts    []struct {
		HostID int64 `json:"hostId"`
	} `json:"jumpHosts"`
}

func getJSON(t *testing.T, srv *server, token, path string, v any) {
	t.Helper()
	status, body := srv.get(t, token, path)
	if status != 200 {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

// TestHostImportUploadsIdentityFiles imports an ssh_config of a host
// behind another with the CLI: the key of the IdentityFile is stored, the
// jump host is the other imported host, and the export is what the API
// answers and what ssh reads.
func TestHostImportUploadsIdentityFiles(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	srv := serve(t, dir)
	token := srv.bootstrapToken(t)
	env := hostEnv(srv, home, token)
	key := writeKey(t, filepath.Join(home, ".ssh", "id_web"))
	config := filepath.Join(dir, "config")
	os.WriteFile(config, []byte(`Host bastion
  HostName 10.0.0.1
  User ops

Host web
  HostName 10.0.0.2
  User deploy
  Port 2222
  IdentityFile ~/.ssh/id_web
  ProxyJump bastion

Match user nobody
  User other
`), 0o600)

	stdout, stderr := runCLIEnv(t, dir, env, true, "host", "import", config)
	if stdout != "imported bastion as host 1\nimported web as host 2\n" {
		t.Fatalf("stdout: %q", stdout)
	}
	if !strings.Contains(stderr, "line 12: Match: skipped: ") {
		t.Errorf("stderr lacks the skipped Match block: %q", stderr)
	}
	if strings.Contains(stdout+stderr, "PRIVATE KEY") {
		t.Fatal("the key was printed")
	}
	var web, bastion importedHost
	getJSON(t, srv, token, "/ssh/db/host/2", &web)
	getJSON(t, srv, token, "/ssh/db/host/1", &bastion)
	if web.Key != key || web.AuthType != "key" || web.IdentityFile != "~/.ssh/id_web" {
		t.Errorf("web: authType %q, identityFile %q, key stored %v", web.AuthType, web.IdentityFile, web.Key == key)
	}
	if web.Name != "web" || web.IP != "10.0.0.2" || web.Port != 2222 || web.Username != "deploy" {
		t.Errorf("web: %+v", web)
	}
	if len(web.JumpHosts) != 1 || web.JumpHosts[0].HostID != bastion.ID || bastion.Name != "bastion" {
		t.Errorf("web's jump hosts %+v, bastion is %d %q", web.JumpHosts, bastion.ID, bastion.Name)
	}

	// The export, from the CLI as from the API.
	exported, _ := runCLIEnv(t, dir, env, true, "host", "export")
	if _, body := srv.get(t, token, "/ssh/db/host/export?format=ssh_config"); exported != body {
		t.Errorf("host export:\n%s\nthe API:\n%s", exported, body)
	}
	path := filepath.Join(dir, "exported")
	os.WriteFile(path, []byte(exported), 0o600)
	if _, err := exec.LookPath("ssh"); err == nil {
		out, err := exec.Command("ssh", "-G", "-F", path, "web").CombinedOutput()
		if err != nil {
			t.Fatalf("ssh -G: %v\n%s", err, out)
		}
		for _, want := range []string{"hostname 10.0.0.2\n", "user deploy\n", "port 2222\n", "proxyjump bastion\n"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("ssh -G lacks %q:\n%s", want, out)
			}
		}
	}
	asJSON, _ := runCLIEnv(t, dir, env, true, "host", "export", "--format", "json")
	var list []importedHost
	if err := json.Unmarshal([]byte(asJSON), &list); err != nil || len(list) != 2 || list[1].Key != "" {
		t.Errorf("export --format json without --credentials: %v %s", err, asJSON)
	}
	withCreds, _ := runCLIEnv(t, dir, env, true, "host", "export", "--format", "json", "--credentials")
	if err := json.Unmarshal([]byte(withCreds), &list); err != nil || len(list) != 2 || list[1].Key != key {
		t.Errorf("export --format json --credentials: %v", err)
	}

	// A second import from stdin: a ProxyJump naming a stored host is
	// that host, as in the server's ssh_config import.
	cmd := exec.Command(binary, "host", "import", "-")
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader("Host db\n  User pg\n  ProxyJump bastion\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "imported db as host 3\n" {
		t.Fatalf("import from stdin: %v %q", err, out)
	}
	var db importedHost
	getJSON(t, srv, token, "/ssh/db/host/3", &db)
	if len(db.JumpHosts) != 1 || db.JumpHosts[0].HostID != bastion.ID {
		t.Errorf("db's jump hosts %+v, want bastion %d", db.JumpHosts, bastion.ID)
	}
}

// TestHostImportRefusesBeforeSending: a missing identity file, a %-token
// in one, and a host without User are each their item's error, and
// nothing is sent.
func TestHostImportRefusesBeforeSending(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	srv := serve(t, dir)
	token := srv.bootstrapToken(t)
	env := hostEnv(srv, home, token)
	writeKey(t, filepath.Join(home, ".ssh", "id_ok"))
	config := filepath.Join(dir, "config")
	os.WriteFile(config, []byte(`Host ok
  User a
  IdentityFile ~/.ssh/id_ok

Host gone
  User b
  IdentityFile ~/.ssh/id_missing
  ProxyJump ok

Host token
  User c
  IdentityFile ~/.ssh/%h

Host nouser
  HostName 10.0.0.9
`), 0o600)
	stdout, stderr := runCLIEnv(t, dir, env, false, "host", "import", config)
	missing := filepath.Join(home, ".ssh", "id_missing")
	for _, want := range []string{
		"items[1]: line 5 (Host gone): IdentityFile ~/.ssh/id_missing: " + missing + ": no such file or directory\n",
		"items[2]: line 10 (Host token): IdentityFile ~/.ssh/%h: sshdeck host import does not expand %-tokens or ${VAR}",
		"items[3]: line 14 (Host nouser): User is required",
		"sshdeck: nothing was imported: 3 of 4 hosts have errors\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if stdout != "" {
		t.Errorf("stdout: %q", stdout)
	}
	if _, body := srv.get(t, token, "/ssh/db/host"); strings.TrimSpace(body) != "[]" {
		t.Errorf("hosts after a refused import: %s", body)
	}
}

// TestHostImportRefusedByTheServer: an item the server refuses (an
// encrypted key, which the CLI cannot decrypt) prints its error with its
// Host line, and nothing is imported.
func TestHostImportRefusedByTheServer(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	srv := serve(t, dir)
	token := srv.bootstrapToken(t)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, "id_enc"), pem.EncodeToMemory(block), 0o600)
	config := filepath.Join(dir, "config")
	os.WriteFile(config, []byte("Host plain\n  User a\n\nHost enc\n  User b\n  IdentityFile "+filepath.Join(home, "id_enc")+"\n"), 0o600)
	_, stderr := runCLIEnv(t, dir, hostEnv(srv, home, token), false, "host", "import", config)
	if !strings.Contains(stderr, "items[1]: line 4 (Host enc): key is encrypted") ||
		!strings.Contains(stderr, "nothing was imported: 1 of 2 hosts have errors") {
		t.Errorf("stderr: %s", stderr)
	}
	if _, body := srv.get(t, token, "/ssh/db/host"); strings.TrimSpace(body) != "[]" {
		t.Errorf("hosts after a refused import: %s", body)
	}
}

// TestHostCommandsNeedAToken: without a token, or with one the server
// does not know, the commands say so in one line.
func TestHostCommandsNeedAToken(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	srv := serve(t, dir)
	config := filepath.Join(dir, "config")
	os.WriteFile(config, []byte("Host a\n  User u\n"), 0o600)
	want := map[string]string{
		"":                                   "sshdeck: no token: log in with sshdeck login --url URL, or set SSHDECK_TOKEN to a token of yours (sshdeck token create)\n",
		"sshdeck_" + strings.Repeat("A", 43): "sshdeck: the token in SSHDECK_TOKEN is expired or revoked: set it to a valid token, or unset it to use the profile of sshdeck login\n",
	}
	for token, want := range want {
		for _, args := range [][]string{{"host", "export"}, {"host", "import", config}} {
			_, stderr := runCLIEnv(t, dir, hostEnv(srv, home, token), false, args...)
			if stderr != want {
				t.Errorf("token %q, sshdeck %v: stderr %q", token, args, stderr)
			}
		}
	}
	// --url wins over SSHDECK_URL.
	env := append(hostEnv(srv, home, "x"), "SSHDECK_URL=http://127.0.0.1:1")
	if _, stderr := runCLIEnv(t, dir, env, false, "host", "export", "--url", srv.url); !strings.Contains(stderr, "the token in SSHDECK_TOKEN is expired or revoked") {
		t.Errorf("--url: %q", stderr)
	}
	if _, stderr := runCLIEnv(t, dir, nil, false, "host", "import"); !strings.Contains(stderr, "Usage:") {
		t.Errorf("host import without FILE: %q", stderr)
	}
}
