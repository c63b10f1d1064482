package tunnel

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
)

func connect(t testing.TB, m *Manager, req *ConnectRequest) {
	t.Helper()
	if err := m.Connect(context.Background(), owner, req); err != nil {
		t.Fatalf("Connect %q: %v", req.Name, err)
	}
}

func failedWith(kind sshdeck.TunnelError) func(Status) bool {
	return func(st Status) bool {
		return st.Status == sshdeck.TunnelFailed && st.ErrorType != nil && *st.ErrorType == kind
	}
}

// TestPasswordAndEncryptedKey: a password login on the source, an
// encrypted key with its passphrase on the endpoint.
func TestPasswordAndEncryptedKey(t *testing.T) {
	w := newWorld(t)
	sshdtest.EnsureUser(t, "sshdeck-test", "right horse battery")
	key, pub := sshdtest.NewKey(t, "staple")
	w.endpoint = sshdtest.Start(t, sshdtest.Config{AuthorizedKeys: []ssh.PublicKey{pub}})
	m := w.manager("a")
	port := sshdtest.FreePort(t)
	req := w.request("mixed", port)
	req.SourceUsername, req.SourceSSHKey, req.SourcePassword = "sshdeck-test", "", "right horse battery"
	req.EndpointSSHKey, req.EndpointKeyPassword = key, "staple"
	connect(t, m, req)
	waitFor(t, m, "mixed", "connected", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestEndpointRestart: the endpoint's sshd dies with every session; the
// tunnel retries, and carries traffic again once sshd is back.
func TestEndpointRestart(t *testing.T) {
	w := newWorld(t)
	m := w.manager("a")
	port := sshdtest.FreePort(t)
	req := w.request("restart", port)
	req.MaxRetries, req.RetryInterval = ptr(100), ptr(100)
	connect(t, m, req)
	waitFor(t, m, "restart", "connected", state(sshdeck.TunnelConnected))

	w.endpoint.Kill()
	st := waitFor(t, m, "restart", "retrying or waiting", func(st Status) bool {
		return st.Status == sshdeck.TunnelRetrying || st.Status == sshdeck.TunnelWaiting
	})
	if st.RetryCount < 1 || st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrNetwork {
		t.Errorf("after the kill: %+v, want a network failure counted", st)
	}
	w.endpoint.Restart()
	waitFor(t, m, "restart", "connected again", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestSourceRestart: the source's sshd dies; the endpoint's session, which
// rides in it, dies too, the port closes, and the tunnel comes back.
func TestSourceRestart(t *testing.T) {
	w := newWorld(t)
	m := w.manager("a")
	port := sshdtest.FreePort(t)
	req := w.request("source", port)
	req.MaxRetries = ptr(100)
	connect(t, m, req)
	waitFor(t, m, "source", "connected", state(sshdeck.TunnelConnected))
	w.source.Kill()
	waitFor(t, m, "source", "retrying or waiting", func(st Status) bool { return st.Status != sshdeck.TunnelConnected })
	w.source.Restart()
	waitFor(t, m, "source", "connected again", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestEndpointHangs: an endpoint that stops answering, its connections
// still open (its sshd frozen), is found dead by the keepalives alone,
// and the tunnel comes back once the endpoint answers again.
func TestEndpointHangs(t *testing.T) {
	w := newWorld(t)
	m := w.manager("a")
	port := sshdtest.FreePort(t)
	req := w.request("hang", port)
	req.MaxRetries, req.RetryInterval = ptr(100), ptr(200)
	connect(t, m, req)
	waitFor(t, m, "hang", "connected", state(sshdeck.TunnelConnected))

	w.endpoint.Freeze()
	thawed := false
	defer func() {
		if !thawed {
			w.endpoint.Thaw()
		}
	}()
	st := waitFor(t, m, "hang", "failed by its keepalives", func(st Status) bool {
		return st.ErrorType != nil && *st.ErrorType == sshdeck.TunnelErrTimeout && strings.Contains(st.Reason, "keepalives unanswered")
	})
	if !strings.HasPrefix(st.Reason, "endpoint ") {
		t.Errorf("reason %q: the endpoint hung, not the source", st.Reason)
	}
	w.endpoint.Thaw()
	thawed = true
	waitFor(t, m, "hang", "connected again", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestWrongPassword fails at once, without a retry.
func TestWrongPassword(t *testing.T) {
	w := newWorld(t)
	sshdtest.EnsureUser(t, "sshdeck-test", "right horse battery")
	m := w.manager("a")
	req := w.request("password", sshdtest.FreePort(t))
	req.EndpointUsername, req.EndpointSSHKey, req.EndpointPassword = "sshdeck-test", "", "wrong"
	req.MaxRetries = ptr(5)
	connect(t, m, req)
	st := waitFor(t, m, "password", "failed", failedWith(sshdeck.TunnelErrAuthentication))
	if st.RetryCount != 0 || st.RetryExhausted {
		t.Errorf("status %+v: an authentication failure must not be retried", st)
	}
}

// TestHostKeyChanged: the first key seen is remembered; a host that comes
// back with another key fails the tunnel, without a retry. A pin that does
// not match fails the same way; one that matches connects.
func TestHostKeyChanged(t *testing.T) {
	w := newWorld(t)
	m := w.manager("a")
	port := sshdtest.FreePort(t)
	connect(t, m, w.request("hostkey", port))
	waitFor(t, m, "hostkey", "connected", state(sshdeck.TunnelConnected))
	if err := m.Disconnect(context.Background(), owner, "hostkey", false); err != nil {
		t.Fatal(err)
	}

	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, pub := sshdtest.NewKey(t, "")
	w.endpoint.Kill()
	replaced := sshdtest.Start(t, sshdtest.Config{Port: w.endpoint.Port, HostKey: other, AuthorizedKeys: []ssh.PublicKey{pub}})
	connect(t, m, w.request("hostkey", port))
	st := waitFor(t, m, "hostkey", "failed", failedWith(sshdeck.TunnelErrHostKey))
	if st.RetryCount != 0 {
		t.Errorf("status %+v: a host key failure must not be retried", st)
	}

	t.Run("pins", func(t *testing.T) {
		req := w.request("pinned", sshdtest.FreePort(t))
		req.EndpointHostKey = ssh.FingerprintSHA256(w.source.HostKey)
		connect(t, m, req)
		waitFor(t, m, "pinned", "failed", failedWith(sshdeck.TunnelErrHostKey))

		req.SourceHostKey = string(ssh.MarshalAuthorizedKey(w.source.HostKey))
		req.EndpointHostKey = ssh.FingerprintSHA256(replaced.HostKey)
		req.EndpointSSHKey = w.key
		connect(t, m, req)
		// The pin overrides the remembered key; the login still needs a
		// key the replaced host knows, which root's is not: authentication.
		waitFor(t, m, "pinned", "past the host key", func(st Status) bool {
			return st.Status == sshdeck.TunnelFailed && st.ErrorType != nil && *st.ErrorType == sshdeck.TunnelErrAuthentication
		})
	})
}

// TestPortConflict: the endpoint refuses to listen on a port in use.
func TestPortConflict(t *testing.T) {
	w := newWorld(t)
	m := w.manager("a")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	req := w.request("conflict", taken.Addr().(*net.TCPAddr).Port)
	req.MaxRetries = ptr(0)
	connect(t, m, req)
	st := waitFor(t, m, "conflict", "failed", failedWith(sshdeck.TunnelErrPortConflict))
	if !st.RetryExhausted {
		t.Errorf("status %+v: with maxRetries 0 the retries are exhausted at once", st)
	}
}

// TestRetriesExhausted: an endpoint that never answers is retried
// maxRetries times, then the tunnel fails with retryExhausted.
func TestRetriesExhausted(t *testing.T) {
	w := newWorld(t)
	m := w.manager("a")
	req := w.request("exhausted", sshdtest.FreePort(t))
	req.EndpointSSHPort = ptr(sshdtest.FreePort(t)) // nothing listens there
	req.MaxRetries, req.RetryInterval = ptr(2), ptr(100)
	connect(t, m, req)
	st := waitFor(t, m, "exhausted", "failed", failedWith(sshdeck.TunnelErrNetwork))
	if !st.RetryExhausted || st.RetryCount != 2 || st.MaxRetries != 2 {
		t.Errorf("status %+v: want retryExhausted after 2 retries", st)
	}
}

// TestDisconnectAndCancel: both close the endpoint port, from connected
// and (cancel) from waiting for a retry.
func TestDisconnectAndCancel(t *testing.T) {
	w := newWorld(t)
	m := w.manager("a")
	for _, cancelled := range []bool{false, true} {
		port := sshdtest.FreePort(t)
		connect(t, m, w.request("stop", port))
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

	t.Run("cancel while waiting", func(t *testing.T) {
		req := w.request("waiting", sshdtest.FreePort(t))
		req.EndpointSSHPort = ptr(sshdtest.FreePort(t))
		req.MaxRetries, req.RetryInterval = ptr(1000), ptr(3_600_000)
		connect(t, m, req)
		st := waitFor(t, m, "waiting", "waiting", state(sshdeck.TunnelWaiting))
		if st.NextRetryIn < 3590 || st.NextRetryIn > 3600 {
			t.Errorf("nextRetryIn %d s, want about an hour", st.NextRetryIn)
		}
		if err := m.Disconnect(context.Background(), owner, "waiting", true); err != nil {
			t.Fatal(err)
		}
		waitFor(t, m, "waiting", "disconnected", state(sshdeck.TunnelDisconnected))
		if m.running(tunnelKey{owner, "waiting"}) {
			t.Error("the cancelled tunnel still runs")
		}
	})
}
