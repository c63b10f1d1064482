package tunnel_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
)

// directUser is the source user of the direct tests that log in to the
// source with a password: a user with a shell and a home of its own.
const directUser = "sshdeck-direct"

// eachMode runs test in a World of its own for each tunnel mode: the
// fault tests hold for relay and direct tunnels alike.
func eachMode(t *testing.T, test func(t *testing.T, w *tunneltest.World)) {
	for _, mode := range []string{"relay", "direct"} {
		t.Run(mode, func(t *testing.T) {
			w := tunneltest.NewWorld(t)
			w.Mode = mode
			test(t, w)
		})
	}
}

// TestDirectCarries: a direct tunnel's bytes go through OpenSSH's client
// on the source.
func TestDirectCarries(t *testing.T) {
	w := tunneltest.NewWorld(t)
	w.Mode = "direct"
	m := w.Manager("a")
	port := sshdtest.FreePort(t)
	connect(t, m, w.Request("direct", port))
	st := waitFor(t, m, "direct", "connected", state(sshdeck.TunnelConnected))
	if st.Mode != sshdeck.TunnelDirect {
		t.Errorf("status mode %q, want direct", st.Mode)
	}
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestDirectNoSecretOnSource: while a direct tunnel with a password
// endpoint runs (its source user logged in with a password too, and with
// a home of its own), no process on this machine, the source, shows the
// password in its command line or environment, and nothing under the
// source user's home changed. After the disconnect no client of the
// tunnel is left.
func TestDirectNoSecretOnSource(t *testing.T) {
	w := tunneltest.NewWorld(t)
	w.Mode = "direct"
	const password = "endpoint-Secret-7f3a9"
	sshdtest.EnsureUser(t, "sshdeck-test", password)
	home := sshdtest.EnsureShellUser(t, directUser, "source pass")
	before := snapshot(t, home)
	m := w.Manager("a")
	port := sshdtest.FreePort(t)
	req := w.Request("secret", port)
	req.SourceUsername, req.SourceSSHKey, req.SourcePassword = directUser, "", "source pass"
	req.EndpointUsername, req.EndpointSSHKey, req.EndpointPassword = "sshdeck-test", "", password
	connect(t, m, req)
	waitFor(t, m, "secret", "connected", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
	if len(sshClients(t, port)) == 0 {
		t.Fatalf("no ssh client forwarding port %d runs on the source", port)
	}
	for _, f := range []string{"cmdline", "environ"} {
		paths, _ := filepath.Glob("/proc/[0-9]*/" + f)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err == nil && bytes.Contains(b, []byte(password)) {
				t.Errorf("%s shows the endpoint's password", p)
			}
		}
	}
	if after := snapshot(t, home); !maps.Equal(before, after) {
		t.Errorf("the source user's home changed: %v, then %v", before, after)
	}
	if err := m.Disconnect(context.Background(), owner, "secret", false); err != nil {
		t.Fatal(err)
	}
	sshdtest.WaitPort(t, port, true)
	if left := sshClients(t, port); len(left) > 0 {
		t.Errorf("ssh clients of the tunnel left after disconnect: %v", left)
	}
}

// TestDirectKeysShareSource: direct tunnels with key logins on one shared
// source connection each log in with their own key through the one agent
// sshd forwards per connection.
func TestDirectKeysShareSource(t *testing.T) {
	w := tunneltest.NewWorld(t)
	w.Mode = "direct"
	m := w.Manager("a")
	var ports []int
	for i := range 4 {
		port := sshdtest.FreePort(t)
		ports = append(ports, port)
		connect(t, m, w.Request(fmt.Sprintf("k%d", i), port))
	}
	for i, port := range ports {
		waitFor(t, m, fmt.Sprintf("k%d", i), "connected", state(sshdeck.TunnelConnected))
		if err := sshdtest.RoundTrip(port, 1<<16); err != nil {
			t.Fatal(err)
		}
	}
	for i, port := range ports {
		if err := m.Delete(context.Background(), owner, fmt.Sprintf("k%d", i)); err != nil {
			t.Fatal(err)
		}
		sshdtest.WaitPort(t, port, true)
		if left := sshClients(t, port); len(left) > 0 {
			t.Errorf("ssh clients of the deleted tunnel left: %v", left)
		}
	}
}

// TestDirectSourceWithoutSSH: a source whose user has no ssh on its PATH
// is a 400 at connect time, naming what is missing.
func TestDirectSourceWithoutSSH(t *testing.T) {
	w := tunneltest.NewWorld(t)
	w.Mode = "direct"
	signer, err := ssh.ParsePrivateKey([]byte(w.Key))
	if err != nil {
		t.Fatal(err)
	}
	bare := sshdtest.Start(t, sshdtest.Config{
		AuthorizedKeys: []ssh.PublicKey{signer.PublicKey()},
		Options:        []string{"SetEnv PATH=/nonexistent"},
	})
	m := w.Manager("a")
	req := w.Request("nossh", sshdtest.FreePort(t))
	req.SourceSSHPort = &bare.Port
	err = m.Connect(context.Background(), owner, req)
	if sshdeck.ErrorCode(err) != sshdeck.Invalid || !strings.Contains(err.Error(), "no ssh command") {
		t.Fatalf("Connect: %v, want invalid naming the missing ssh", err)
	}
	req.Mode = "sideways"
	if err := m.Connect(context.Background(), owner, req); sshdeck.ErrorCode(err) != sshdeck.Invalid || !strings.Contains(err.Error(), "mode") {
		t.Fatalf("Connect with mode sideways: %v, want invalid naming mode", err)
	}
}

// sshClients returns the pids of the ssh clients on this machine that
// forward the endpoint's port (their -R argument names it).
func sshClients(t *testing.T, endpointPort int) []string {
	t.Helper()
	spec := fmt.Sprintf("127.0.0.1:%d:", endpointPort)
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == "ssh" && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, spec) }) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// snapshot is every file under dir with its size and modification time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%d %s", info.Size(), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
