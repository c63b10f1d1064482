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

// TestDirectSourceCannot: a source that cannot run a direct tunnel's
// client for another reason than a missing ssh is a 400 at connect time too,
// naming what is missing: an OpenSSH too old for KnownHostsCommand (an ssh
// on the PATH that says it is 7.4), and an sshd that grants no session
// (MaxSessions 0: forwarding only) to run it in.
func TestDirectSourceCannot(t *testing.T) {
	w := tunneltest.NewWorld(t)
	w.Mode = "direct"
	signer, err := ssh.ParsePrivateKey([]byte(w.Key))
	if err != nil {
		t.Fatal(err)
	}
	m := w.Manager("a")
	old := t.TempDir()
	// What ssh -V of OpenSSH 7.4 writes, on stderr; sshd runs it as root,
	// which reads this directory whoever made it.
	script := "#!/bin/sh\necho 'OpenSSH_7.4p1, OpenSSL 1.0.2k-fips  26 Jan 2017' >&2\n"
	if err := os.WriteFile(filepath.Join(old, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		options []string
		want    []string // what the error names
	}{
		{"old OpenSSH", []string{"SetEnv PATH=" + old + ":/usr/bin:/bin"}, []string{"OpenSSH 7.4", "8.5"}},
		{"no session", []string{"MaxSessions 0"}, []string{"refused a session"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			source := sshdtest.Start(t, sshdtest.Config{AuthorizedKeys: []ssh.PublicKey{signer.PublicKey()}, Options: c.options})
			req := w.Request(strings.ReplaceAll(c.name, " ", "-"), sshdtest.FreePort(t))
			req.SourceSSHPort = &source.Port
			err := m.Connect(context.Background(), owner, req)
			if sshdeck.ErrorCode(err) != sshdeck.Invalid {
				t.Fatalf("Connect: %v, want invalid", err)
			}
			for _, s := range c.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Connect: %v, want it to name %q", err, s)
				}
			}
		})
	}
}
