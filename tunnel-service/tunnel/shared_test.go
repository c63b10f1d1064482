package tunnel_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// Shared connections (pool.go), proven on the sshd side: the kernel says
// how many TCP connections each sshd has, and from which process
// (sshdtest's Clients).

// clients returns the connections to s, each by the pid holding it.
func clients(t *testing.T, s *sshdtest.Server) []int {
	t.Helper()
	pids, err := s.Clients()
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// waitClients waits until s has n connections.
func waitClients(t *testing.T, s *sshdtest.Server, n int) {
	t.Helper()
	sshdtest.WaitUntil(t, fmt.Sprintf("%s to have %d connections", s.Addr, n), func() bool {
		pids, err := s.Clients()
		return err == nil && len(pids) == n
	})
}

// roundTrips carries bytes through every port at once.
func roundTrips(t *testing.T, ports []int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(ports))
	for _, p := range ports {
		wg.Go(func() { errs <- sshdtest.RoundTrip(p, 16<<10) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestSharedConnection: 50 tunnels from one source to one endpoint with
// the same logins ride one SSH connection to each (dialled once, though
// all ask at once); the source's sshd dies and every tunnel retries on
// its own, then all come back on one connection again; disconnected one
// by one, the others keep working, and the last closes the connections.
func TestSharedConnection(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	const tunnels = 50
	names, ports := make([]string, tunnels), make([]int, tunnels)
	var wg sync.WaitGroup
	for i := range tunnels {
		names[i], ports[i] = fmt.Sprintf("shared-%d", i), sshdtest.FreePort(t)
		req := w.Request(names[i], ports[i])
		req.MaxRetries, req.RetryInterval = tunneltest.Ptr(1000), tunneltest.Ptr(100)
		wg.Go(func() { connect(t, m, req) })
	}
	wg.Wait()
	for _, name := range names {
		waitFor(t, m, name, "connected", state(sshdeck.TunnelConnected))
	}
	roundTrips(t, ports)
	if got := m.Dials(); got != 2 {
		t.Errorf("%d connections dialled for %d tunnels, want 2 (the source's, the endpoint's)", got, tunnels)
	}
	oneConnection := func() {
		t.Helper()
		if pids := clients(t, w.Source); len(pids) != 1 || pids[0] != os.Getpid() {
			t.Errorf("the source's sshd has connections from %v, want one from this process (%d)", pids, os.Getpid())
		}
		if pids := clients(t, w.Endpoint); len(pids) != 1 || !w.Source.Holds(pids[0]) {
			t.Errorf("the endpoint's sshd has connections from %v, want one from the source's sshd", pids)
		}
		if n := m.Conns(); n != 2 {
			t.Errorf("the pool holds %d connections, want 2", n)
		}
	}
	oneConnection()

	w.Source.Kill()
	for _, name := range names {
		st := waitFor(t, m, name, "retrying or waiting", func(st tunnel.Status) bool {
			return (st.Status == sshdeck.TunnelRetrying || st.Status == sshdeck.TunnelWaiting) && st.RetryCount >= 1
		})
		if st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrNetwork {
			t.Errorf("%s after the source died: %+v, want a network failure", name, st)
		}
	}
	w.Source.Restart()
	for _, name := range names {
		waitFor(t, m, name, "connected again", state(sshdeck.TunnelConnected))
	}
	roundTrips(t, ports)
	oneConnection()

	for i, name := range names {
		if err := m.Disconnect(context.Background(), owner, name, false); err != nil {
			t.Fatal(err)
		}
		sshdtest.WaitPort(t, ports[i], true)
		if rest := ports[i+1:]; len(rest) > 0 && (i%10 == 0 || len(rest) == 1) {
			roundTrips(t, rest)
			if pids := clients(t, w.Source); len(pids) != 1 {
				t.Errorf("with %d tunnels left the source's sshd has %d connections, want 1", len(rest), len(pids))
			}
		}
	}
	waitClients(t, w.Source, 0)
	waitClients(t, w.Endpoint, 0)
	if n := m.Conns(); n != 0 {
		t.Errorf("the pool holds %d connections with no tunnel", n)
	}
}

// TestSharedOnlyAlike: tunnels with other credentials on the same host, or
// of another owner, never share a connection.
func TestSharedOnlyAlike(t *testing.T) {
	w := tunneltest.NewWorld(t)
	sshdtest.EnsureUser(t, "sshdeck-test", "right horse battery")
	m := w.Manager("a")
	up := func(who, name string, req *tunnel.ConnectRequest) {
		t.Helper()
		if err := m.Connect(context.Background(), who, req); err != nil {
			t.Fatal(err)
		}
		sshdtest.WaitUntil(t, name+" connected", func() bool {
			st, err := m.Status(context.Background(), who, name)
			return err == nil && st.Status == sshdeck.TunnelConnected
		})
		if err := sshdtest.RoundTrip(*req.EndpointPort, 1<<10); err != nil {
			t.Fatal(err)
		}
	}
	key := w.Request("key", sshdtest.FreePort(t))
	up(owner, "key", key)
	password := w.Request("password", sshdtest.FreePort(t))
	password.SourceUsername, password.SourceSSHKey, password.SourcePassword = "sshdeck-test", "", "right horse battery"
	up(owner, "password", password)
	if n := len(clients(t, w.Source)); n != 2 {
		t.Errorf("two logins to the source: %d connections, want 2", n)
	}
	// The endpoint's login is the same, but it is reached through
	// another connection to the source: another connection too.
	if n := len(clients(t, w.Endpoint)); n != 2 {
		t.Errorf("the endpoint through two source connections: %d connections, want 2", n)
	}

	bob := w.Request("bob", sshdtest.FreePort(t))
	up("usr_bob", "bob", bob)
	if n := len(clients(t, w.Source)); n != 3 {
		t.Errorf("another owner's tunnel, with the first's logins: %d connections to the source, want 3", n)
	}
	same := w.Request("same", sshdtest.FreePort(t))
	up(owner, "same", same)
	if n := len(clients(t, w.Source)); n != 3 {
		t.Errorf("a tunnel like the first: %d connections to the source, want still 3", n)
	}
}

// TestSharedPortConflict: a tunnel whose endpoint port is taken fails
// alone, whether another process or another tunnel on the same
// connection has the port; the tunnels on the connection stay up.
func TestSharedPortConflict(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	ports := []int{sshdtest.FreePort(t), sshdtest.FreePort(t)}
	for i, p := range ports {
		connect(t, m, w.Request(fmt.Sprintf("ok-%d", i), p))
		waitFor(t, m, fmt.Sprintf("ok-%d", i), "connected", state(sshdeck.TunnelConnected))
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for name, port := range map[string]int{"taken": taken.Addr().(*net.TCPAddr).Port, "twice": ports[0]} {
		req := w.Request(name, port)
		req.MaxRetries = tunneltest.Ptr(0)
		connect(t, m, req)
		st := waitFor(t, m, name, "failed", failedWith(sshdeck.TunnelErrPortConflict))
		t.Logf("%s: %s", name, st.Reason)
	}
	roundTrips(t, ports)
	for i := range ports {
		if st, err := m.Status(context.Background(), owner, fmt.Sprintf("ok-%d", i)); err != nil || st.Status != sshdeck.TunnelConnected {
			t.Errorf("ok-%d: %+v, %v: want still connected", i, st, err)
		}
	}
	if n := len(clients(t, w.Source)); n != 1 {
		t.Errorf("%d connections to the source, want 1", n)
	}
}
