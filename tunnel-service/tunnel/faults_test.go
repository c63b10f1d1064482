package tunnel_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

func connect(t testing.TB, m *tunnel.Manager, req *tunnel.ConnectRequest) {
	t.Helper()
	if err := m.Connect(context.Background(), owner, req); err != nil {
		t.Fatalf("Connect %q: %v", req.Name, err)
	}
}

func failedWith(kind sshdeck.TunnelError) func(tunnel.Status) bool {
	return func(st tunnel.Status) bool {
		return st.Status == sshdeck.TunnelFailed && st.ErrorType != nil && *st.ErrorType == kind
	}
}

// TestPasswordAndEncryptedKey: a password login on the source, an
// encrypted key with its passphrase on the endpoint.
func TestPasswordAndEncryptedKey(t *testing.T) {
	eachMode(t, func(t *testing.T, w *tunneltest.World) {
		sshdtest.EnsureUser(t, "sshdeck-test", "right horse battery")
		// A direct tunnel runs ssh as its source user, who needs a shell.
		sourceUser := "sshdeck-test"
		if w.Mode == "direct" {
			sourceUser = directUser
			sshdtest.EnsureShellUser(t, directUser, "right horse battery")
		}
		key, pub := sshdtest.NewKey(t, "staple")
		w.Endpoint = sshdtest.Start(t, sshdtest.Config{AuthorizedKeys: []ssh.PublicKey{pub}})
		m := w.Manager("a")
		port := sshdtest.FreePort(t)
		req := w.Request("mixed", port)
		req.SourceUsername, req.SourceSSHKey, req.SourcePassword = sourceUser, "", "right horse battery"
		req.EndpointSSHKey, req.EndpointKeyPassword = key, "staple"
		connect(t, m, req)
		waitFor(t, m, "mixed", "connected", state(sshdeck.TunnelConnected))
		if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
			t.Fatal(err)
		}
	})
}

// TestEndpointRestart: the endpoint's sshd dies with every session; the
// tunnel retries, and carries traffic again once sshd is back.
func TestEndpointRestart(t *testing.T) {
	eachMode(t, func(t *testing.T, w *tunneltest.World) {
		m := w.Manager("a")
		port := sshdtest.FreePort(t)
		req := w.Request("restart", port)
		req.MaxRetries, req.RetryInterval = tunneltest.Ptr(100), tunneltest.Ptr(100)
		connect(t, m, req)
		waitFor(t, m, "restart", "connected", state(sshdeck.TunnelConnected))

		w.Endpoint.Kill()
		st := waitFor(t, m, "restart", "retrying or waiting", func(st tunnel.Status) bool {
			return st.Status == sshdeck.TunnelRetrying || st.Status == sshdeck.TunnelWaiting
		})
		if st.RetryCount < 1 || st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrNetwork {
			t.Errorf("after the kill: %+v, want a network failure counted", st)
		}
		w.Endpoint.Restart()
		waitFor(t, m, "restart", "connected again", state(sshdeck.TunnelConnected))
		if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSourceRestart: the source's sshd dies; the endpoint's session, which
// rides in it, dies too, the port closes, and the tunnel comes back.
func TestSourceRestart(t *testing.T) {
	eachMode(t, func(t *testing.T, w *tunneltest.World) {
		m := w.Manager("a")
		port := sshdtest.FreePort(t)
		req := w.Request("source", port)
		req.MaxRetries = tunneltest.Ptr(100)
		connect(t, m, req)
		waitFor(t, m, "source", "connected", state(sshdeck.TunnelConnected))
		w.Source.Kill()
		waitFor(t, m, "source", "retrying or waiting", func(st tunnel.Status) bool { return st.Status != sshdeck.TunnelConnected })
		w.Source.Restart()
		waitFor(t, m, "source", "connected again", state(sshdeck.TunnelConnected))
		if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
			t.Fatal(err)
		}
	})
}

// TestEndpointHangs: an endpoint that stops answering, its connections
// still open (its sshd frozen), is found dead by the keepalives alone,
// and the tunnel comes back once the endpoint answers again.
func TestEndpointHangs(t *testing.T) {
	eachMode(t, func(t *testing.T, w *tunneltest.World) {
		m := w.Manager("a")
		port := sshdtest.FreePort(t)
		req := w.Request("hang", port)
		req.MaxRetries, req.RetryInterval = tunneltest.Ptr(100), tunneltest.Ptr(200)
		connect(t, m, req)
		waitFor(t, m, "hang", "connected", state(sshdeck.TunnelConnected))

		w.Endpoint.Freeze()
		thawed := false
		defer func() {
			if !thawed {
				w.Endpoint.Thaw()
			}
		}()
		// The service's keepalives find a relay tunnel's endpoint dead; the
		// client's (ServerAlive) a direct one's.
		dead := map[string]string{"relay": "keepalives unanswered", "direct": "not responding"}[w.Mode]
		st := waitFor(t, m, "hang", "failed by its keepalives", func(st tunnel.Status) bool {
			return st.ErrorType != nil && *st.ErrorType == sshdeck.TunnelErrTimeout && strings.Contains(st.Reason, dead)
		})
		if !strings.HasPrefix(st.Reason, "endpoint ") {
			t.Errorf("reason %q: the endpoint hung, not the source", st.Reason)
		}
		w.Endpoint.Thaw()
		thawed = true
		waitFor(t, m, "hang", "connected again", state(sshdeck.TunnelConnected))
		if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWrongPassword fails at once, without a retry.
func TestWrongPassword(t *testing.T) {
	eachMode(t, func(t *testing.T, w *tunneltest.World) {
		sshdtest.EnsureUser(t, "sshdeck-test", "right horse battery")
		m := w.Manager("a")
		req := w.Request("password", sshdtest.FreePort(t))
		req.EndpointUsername, req.EndpointSSHKey, req.EndpointPassword = "sshdeck-test", "", "wrong"
		req.MaxRetries = tunneltest.Ptr(5)
		connect(t, m, req)
		st := waitFor(t, m, "password", "failed", failedWith(sshdeck.TunnelErrAuthentication))
		if st.RetryCount != 0 || st.RetryExhausted {
			t.Errorf("status %+v: an authentication failure must not be retried", st)
		}
	})
}

// TestHostKeyChanged: the first key seen is remembered; a host that comes
// back with another key fails the tunnel, without a retry. A pin that does
// not match fails the same way; one that matches connects.
func TestHostKeyChanged(t *testing.T) {
	eachMode(t, func(t *testing.T, w *tunneltest.World) {
		m := w.Manager("a")
		port := sshdtest.FreePort(t)
		connect(t, m, w.Request("hostkey", port))
		waitFor(t, m, "hostkey", "connected", state(sshdeck.TunnelConnected))
		if err := m.Disconnect(context.Background(), owner, "hostkey", false); err != nil {
			t.Fatal(err)
		}

		_, other, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		_, pub := sshdtest.NewKey(t, "")
		w.Endpoint.Kill()
		replaced := sshdtest.Start(t, sshdtest.Config{Port: w.Endpoint.Port, HostKey: other, AuthorizedKeys: []ssh.PublicKey{pub}})
		connect(t, m, w.Request("hostkey", port))
		st := waitFor(t, m, "hostkey", "failed", failedWith(sshdeck.TunnelErrHostKey))
		if st.RetryCount != 0 {
			t.Errorf("status %+v: a host key failure must not be retried", st)
		}

		t.Run("pins", func(t *testing.T) {
			req := w.Request("pinned", sshdtest.FreePort(t))
			req.EndpointHostKey = ssh.FingerprintSHA256(w.Source.HostKey)
			connect(t, m, req)
			waitFor(t, m, "pinned", "failed", failedWith(sshdeck.TunnelErrHostKey))

			req.SourceHostKey = string(ssh.MarshalAuthorizedKey(w.Source.HostKey))
			req.EndpointHostKey = ssh.FingerprintSHA256(replaced.HostKey)
			req.EndpointSSHKey = w.Key
			connect(t, m, req)
			// The pin overrides the remembered key; the login still needs a
			// key the replaced host knows, which root's is not: authentication.
			waitFor(t, m, "pinned", "past the host key", func(st tunnel.Status) bool {
				return st.Status == sshdeck.TunnelFailed && st.ErrorType != nil && *st.ErrorType == sshdeck.TunnelErrAuthentication
			})
		})
	})
}

// TestEndpointKeyPerSource: an endpoint's remembered key belongs to the
// source it is reached through (API.md): the same private address behind
// two sources is two hosts, and neither's key fails the other; through the
// first source, another key at the address still fails.
func TestEndpointKeyPerSource(t *testing.T) {
	w := tunneltest.NewWorld(t)
	signer, err := ssh.ParsePrivateKey([]byte(w.Key))
	if err != nil {
		t.Fatal(err)
	}
	authorized := []ssh.PublicKey{signer.PublicKey()}
	otherSource := sshdtest.Start(t, sshdtest.Config{AuthorizedKeys: authorized})
	m := w.Manager("a")
	first := w.Request("first", sshdtest.FreePort(t))
	connect(t, m, first)
	waitFor(t, m, "first", "connected", state(sshdeck.TunnelConnected))
	if err := m.Disconnect(context.Background(), owner, "first", false); err != nil {
		t.Fatal(err)
	}

	// Another host at the endpoint's address, as another network behind
	// another source would have.
	_, hostKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	w.Endpoint.Kill()
	sshdtest.Start(t, sshdtest.Config{Port: w.Endpoint.Port, HostKey: hostKey, AuthorizedKeys: authorized})
	second := w.Request("second", sshdtest.FreePort(t))
	second.SourceSSHPort = &otherSource.Port
	connect(t, m, second)
	waitFor(t, m, "second", "connected", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(*second.EndpointPort, 1<<10); err != nil {
		t.Fatal(err)
	}

	connect(t, m, first)
	waitFor(t, m, "first", "failed", failedWith(sshdeck.TunnelErrHostKey))
}

// TestPortConflict: the endpoint refuses to listen on a port in use.
func TestPortConflict(t *testing.T) {
	eachMode(t, func(t *testing.T, w *tunneltest.World) {
		m := w.Manager("a")
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		req := w.Request("conflict", taken.Addr().(*net.TCPAddr).Port)
		req.MaxRetries = tunneltest.Ptr(0)
		connect(t, m, req)
		st := waitFor(t, m, "conflict", "failed", failedWith(sshdeck.TunnelErrPortConflict))
		if !st.RetryExhausted {
			t.Errorf("status %+v: with maxRetries 0 the retries are exhausted at once", st)
		}
	})
}

// TestRetriesExhausted: an endpoint that never answers is retried
// maxRetries times, then the tunnel fails with retryExhausted.
func TestRetriesExhausted(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	req := w.Request("exhausted", sshdtest.FreePort(t))
	req.EndpointSSHPort = tunneltest.Ptr(sshdtest.FreePort(t)) // nothing listens there
	req.MaxRetries, req.RetryInterval = tunneltest.Ptr(2), tunneltest.Ptr(100)
	connect(t, m, req)
	st := waitFor(t, m, "exhausted", "failed", failedWith(sshdeck.TunnelErrNetwork))
	if !st.RetryExhausted || st.RetryCount != 2 || st.MaxRetries != 2 {
		t.Errorf("status %+v: want retryExhausted after 2 retries", st)
	}
}

// TestDisconnectAndCancel: both close the endpoint port, from connected,
// and stop the run from waiting for a retry.
func TestDisconnectAndCancel(t *testing.T) {
	eachMode(t, func(t *testing.T, w *tunneltest.World) {
		m := w.Manager("a")
		for _, cancelled := range []bool{false, true} {
			port := sshdtest.FreePort(t)
			connect(t, m, w.Request("stop", port))
			waitFor(t, m, "stop", "connected", state(sshdeck.TunnelConnected))
			sshdtest.WaitPort(t, port, false)
			if err := m.Disconnect(context.Background(), owner, "stop", cancelled); err != nil {
				t.Fatal(err)
			}
			sshdtest.WaitPort(t, port, true)
			st := waitFor(t, m, "stop", "disconnected", state(sshdeck.TunnelDisconnected))
			if !st.ManualDisconnect {
				t.Errorf("status %+v: manualDisconnect not set", st)
			}
		}

		// Caught waiting for a retry an hour away: the run stops at once.
		whileWaiting := func(t *testing.T, name string, cancelled bool) {
			req := w.Request(name, sshdtest.FreePort(t))
			req.EndpointSSHPort = tunneltest.Ptr(sshdtest.FreePort(t))
			req.MaxRetries, req.RetryInterval = tunneltest.Ptr(1000), tunneltest.Ptr(3_600_000)
			connect(t, m, req)
			st := waitFor(t, m, name, "waiting", state(sshdeck.TunnelWaiting))
			if st.NextRetryIn < 3590 || st.NextRetryIn > 3600 {
				t.Errorf("nextRetryIn %d s, want about an hour", st.NextRetryIn)
			}
			if err := m.Disconnect(context.Background(), owner, name, cancelled); err != nil {
				t.Fatal(err)
			}
			waitFor(t, m, name, "disconnected", state(sshdeck.TunnelDisconnected))
			if m.Running(owner, name) {
				t.Errorf("the %s tunnel still runs", map[bool]string{false: "disconnected", true: "cancelled"}[cancelled])
			}
		}
		t.Run("cancel while waiting", func(t *testing.T) { whileWaiting(t, "waiting", true) })
		t.Run("disconnect while waiting", func(t *testing.T) { whileWaiting(t, "waiting-disconnected", false) })
	})
}
