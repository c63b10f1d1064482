package tunnel_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// A chain of real OpenSSH hosts, each at an address of its own: jump
// hosts 1, 2 and 3 at 127.0.0.2, .3 and .4, the source at 127.0.0.5 (the
// world's endpoint and echo stay at 127.0.0.1). Each has its own login:
// root with a key of its own on hosts 1 and 3, a password user on host 2,
// the world's key on the source; no host knows another's credentials.
//
// What OpenSSH can say of the path, each host's config says: a jump host
// allows only local forwarding (AllowTcpForwarding local: no remote
// forward, which only the endpoint is asked for), and only to the hosts
// after it (PermitOpen); the source only local forwarding too. What it
// cannot say is who may connect to an inner host: every loopback
// connection comes from 127.0.0.1, the test's as well as a jump host's, so
// `AllowUsers user@127.0.0.2` on host 2 would refuse host 1 too. The path
// is proven by the kernel instead (provePath): every connection to a hop
// is held by the sshd of the hop before it, and the first hop's by this
// test.

const (
	hopUser     = "sshdeck-hop"
	hopPassword = "jump host two's own password"
)

type chainWorld struct {
	*tunneltest.World
	jumps  [3]*sshdtest.Server
	keys   [3]string // the jump hosts' logins' keys; none for host 2
	source *sshdtest.Server
}

func newChainWorld(t *testing.T) *chainWorld {
	t.Helper()
	w := &chainWorld{World: tunneltest.NewWorld(t)}
	sshdtest.EnsureUser(t, hopUser, hopPassword)
	worldKey, err := ssh.ParsePrivateKey([]byte(w.Key))
	if err != nil {
		t.Fatal(err)
	}
	// The addresses and ports first: each host's PermitOpen names those
	// after it.
	addrs := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	ports := make([]int, len(addrs))
	for i := range ports {
		ports[i] = sshdtest.FreePort(t)
	}
	at := func(i int) string { return fmt.Sprintf("%s:%d", addrs[i], ports[i]) }
	w.source = sshdtest.Start(t, sshdtest.Config{
		ListenAddress: addrs[3], Port: ports[3], AuthorizedKeys: []ssh.PublicKey{worldKey.PublicKey()},
		Options: []string{"AllowTcpForwarding local", "AllowUsers root"},
	})
	for i := 2; i >= 0; i-- {
		cfg := sshdtest.Config{ListenAddress: addrs[i], Port: ports[i]}
		permit := "PermitOpen"
		for j := i + 1; j < len(addrs); j++ {
			permit += " " + at(j)
		}
		cfg.Options = []string{"AllowTcpForwarding local", permit}
		if i == 1 {
			cfg.Options = append(cfg.Options, "AllowUsers "+hopUser)
		} else {
			var pub ssh.PublicKey
			w.keys[i], pub = sshdtest.NewKey(t, "")
			cfg.AuthorizedKeys = []ssh.PublicKey{pub}
			cfg.Options = append(cfg.Options, "AllowUsers root")
		}
		w.jumps[i] = sshdtest.Start(t, cfg)
	}
	return w
}

// request is a connect request to the source through the first n jump
// hosts.
func (w *chainWorld) request(name string, n, endpointPort int) *tunnel.ConnectRequest {
	req := w.Request(name, endpointPort)
	req.SourceIP, req.SourceSSHPort = "127.0.0.5", &w.source.Port
	req.MaxRetries, req.RetryInterval = tunneltest.Ptr(100), tunneltest.Ptr(100)
	for i := range n {
		hop := tunnel.JumpHop{IP: strings.Split(w.jumps[i].Addr, ":")[0], SSHPort: w.jumps[i].Port, Username: "root", SSHKey: w.keys[i]}
		if i == 1 {
			hop.Username, hop.SSHKey, hop.Password = hopUser, "", hopPassword
		}
		req.Jumps = append(req.Jumps, hop)
	}
	return req
}

// path is the hosts a tunnel through n jump hosts goes through, in order.
func (w *chainWorld) path(n int) []*sshdtest.Server {
	return append(append(w.jumps[:n:n], w.source), w.Endpoint)
}

// provePath checks that every connection to each host of the path is held
// by the host before it (this test for the first): nothing reached an
// inner host but through the hosts before it.
func provePath(t *testing.T, path []*sshdtest.Server) {
	t.Helper()
	for i, s := range path {
		clients, err := s.Clients()
		if err != nil {
			t.Fatal(err)
		}
		if len(clients) == 0 {
			t.Errorf("hop %d (%s): no connection", i+1, s.Addr)
		}
		t.Logf("hop %d (%s): connections from processes %v", i+1, s.Addr, clients)
		for _, pid := range clients {
			if i == 0 && pid != os.Getpid() {
				t.Errorf("hop 1 (%s): connected from process %d, not this test (%d)", s.Addr, pid, os.Getpid())
			}
			if i > 0 && !path[i-1].Holds(pid) {
				t.Errorf("hop %d (%s): connected from process %d, not from hop %d's sshd (%s, %d)", i+1, s.Addr, pid, i, path[i-1].Addr, path[i-1].Pid())
			}
		}
	}
}

// knownAs is where the owner's key of path[i] is remembered: its address
// and the path to it.
func knownAs(path []*sshdtest.Server, i int) string {
	s := path[i].Addr
	for j := i - 1; j >= 0; j-- {
		s += " via " + path[j].Addr
	}
	return s
}

// TestJumpChains: chains of 1, 2 and 3 jump hosts reach the source, and
// the tunnel carries bytes end to end, each hop's host key remembered
// under its path.
func TestJumpChains(t *testing.T) {
	w := newChainWorld(t)
	m := w.Manager("a")
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprintf("%d hops", n), func(t *testing.T) {
			name := fmt.Sprintf("chain-%d", n)
			port := sshdtest.FreePort(t)
			connect(t, m, w.request(name, n, port))
			waitFor(t, m, name, "connected", state(sshdeck.TunnelConnected))
			if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
				t.Fatal(err)
			}
			path := w.path(n)
			provePath(t, path)
			for i, s := range path {
				k, err := w.Store.KnownHost(context.Background(), owner, knownAs(path, i))
				if err != nil {
					t.Errorf("hop %d's key: %v", i+1, err)
					continue
				}
				if want := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.HostKey))); k.Key != want {
					t.Errorf("hop %d's key remembered under %q is %s, not %s's", i+1, k.Addr, k.Key, s.Addr)
				}
			}
			if err := m.Disconnect(context.Background(), owner, name, false); err != nil {
				t.Fatal(err)
			}
			waitFor(t, m, name, "disconnected", state(sshdeck.TunnelDisconnected))
		})
	}
}

// TestJumpHostRestart: a jump host dies mid-tunnel; the tunnel retries
// naming it (every connection inside it ends too, the source's and the
// endpoint's, whichever the tunnel sees first), and carries bytes again
// once the host is back. Then the source dies, and is named.
func TestJumpHostRestart(t *testing.T) {
	w := newChainWorld(t)
	m := w.Manager("a")
	port := sshdtest.FreePort(t)
	connect(t, m, w.request("restart", 3, port))
	waitFor(t, m, "restart", "connected", state(sshdeck.TunnelConnected))

	w.jumps[1].Kill()
	prefix := fmt.Sprintf("jump host 2 (%s via %s): ", w.jumps[1].Addr, w.jumps[0].Addr)
	st := waitFor(t, m, "restart", "retrying naming jump host 2", func(st tunnel.Status) bool {
		return (st.Status == sshdeck.TunnelRetrying || st.Status == sshdeck.TunnelWaiting) && st.RetryCount >= 1
	})
	t.Logf("after killing jump host 2: %s", st.Reason)
	if st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrNetwork || !strings.HasPrefix(st.Reason, prefix) {
		t.Errorf("after killing jump host 2: %+v, want a network failure naming it (%q…)", st, prefix)
	}
	// Redialled meanwhile, jump host 1 cannot reach it.
	st = waitFor(t, m, "restart", "a retry refused by jump host 1", func(st tunnel.Status) bool {
		return strings.Contains(st.Reason, "jump host 1 could not connect to it")
	})
	t.Logf("a retry: %s", st.Reason)
	if !strings.HasPrefix(st.Reason, prefix) || st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrNetwork {
		t.Errorf("a retry: %+v, want a network failure naming jump host 2", st)
	}
	w.jumps[1].Restart()
	waitFor(t, m, "restart", "connected again", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
	provePath(t, w.path(3))

	// The source dies behind its jump hosts, which stay up: the source is
	// named, whichever of its connection and the endpoint's (which rides in
	// it) the tunnel sees end first.
	w.source.Kill()
	st = waitFor(t, m, "restart", "retrying after the source died", func(st tunnel.Status) bool {
		return st.Status != sshdeck.TunnelConnected && st.RetryCount >= 1
	})
	t.Logf("after killing the source: %s", st.Reason)
	if !strings.HasPrefix(st.Reason, "source "+w.source.Addr+": ") || st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrNetwork {
		t.Errorf("after killing the source: %+v, want a network failure naming it", st)
	}
	w.source.Restart()
	waitFor(t, m, "restart", "connected once more", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestJumpHostHangs: a jump host that stops answering, its connections
// still open, is found by the keepalives and named, not the hosts behind
// it whose keepalives go unanswered too.
func TestJumpHostHangs(t *testing.T) {
	w := newChainWorld(t)
	m := w.Manager("a")
	port := sshdtest.FreePort(t)
	connect(t, m, w.request("hang", 3, port))
	waitFor(t, m, "hang", "connected", state(sshdeck.TunnelConnected))

	w.jumps[1].Freeze()
	thawed := false
	defer func() {
		if !thawed {
			w.jumps[1].Thaw()
		}
	}()
	st := waitFor(t, m, "hang", "failed by its keepalives", func(st tunnel.Status) bool {
		return st.ErrorType != nil && *st.ErrorType == sshdeck.TunnelErrTimeout && strings.Contains(st.Reason, "keepalives unanswered")
	})
	t.Logf("jump host 2 frozen: %s", st.Reason)
	if prefix := "jump host 2 ("; !strings.HasPrefix(st.Reason, prefix) {
		t.Errorf("reason %q: jump host 2 hung, not another host", st.Reason)
	}
	w.jumps[1].Thaw()
	thawed = true
	waitFor(t, m, "hang", "connected again", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestJumpHostWrongPassword: a wrong password on jump host 2 fails the
// tunnel at once, naming it.
func TestJumpHostWrongPassword(t *testing.T) {
	w := newChainWorld(t)
	m := w.Manager("a")
	req := w.request("password", 3, sshdtest.FreePort(t))
	req.Jumps[1].Password = "not jump host two's password"
	connect(t, m, req)
	st := waitFor(t, m, "password", "failed", failedWith(sshdeck.TunnelErrAuthentication))
	prefix := fmt.Sprintf("jump host 2 (%s via %s) refused the password login of %q", w.jumps[1].Addr, w.jumps[0].Addr, hopUser)
	t.Logf("wrong password: %s", st.Reason)
	if !strings.HasPrefix(st.Reason, prefix) || st.RetryCount != 0 {
		t.Errorf("status %+v, want %q… and no retry", st, prefix)
	}
}

// TestJumpHostKeyChanged: jump host 2 comes back with another host key;
// the key remembered for it (under its path) fails the tunnel, naming it.
func TestJumpHostKeyChanged(t *testing.T) {
	w := newChainWorld(t)
	m := w.Manager("a")
	port := sshdtest.FreePort(t)
	connect(t, m, w.request("hostkey", 2, port))
	waitFor(t, m, "hostkey", "connected", state(sshdeck.TunnelConnected))
	if err := m.Disconnect(context.Background(), owner, "hostkey", false); err != nil {
		t.Fatal(err)
	}

	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	old := w.jumps[1]
	old.Kill()
	sshdtest.Start(t, sshdtest.Config{
		ListenAddress: "127.0.0.3", Port: old.Port, HostKey: other,
		Options: []string{"AllowTcpForwarding local", "AllowUsers " + hopUser},
	})
	connect(t, m, w.request("hostkey", 2, port))
	st := waitFor(t, m, "hostkey", "failed", failedWith(sshdeck.TunnelErrHostKey))
	prefix := fmt.Sprintf("jump host 2 (%s via %s) presented host key %s", old.Addr, w.jumps[0].Addr, ssh.FingerprintSHA256(mustPublic(t, other)))
	t.Logf("host key changed: %s", st.Reason)
	if !strings.HasPrefix(st.Reason, prefix) || st.RetryCount != 0 {
		t.Errorf("status %+v, want %q… and no retry", st, prefix)
	}
}

func mustPublic(t *testing.T, k ed25519.PrivateKey) ssh.PublicKey {
	t.Helper()
	pub, err := ssh.NewPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pub
}
