package tunnel_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
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

// connectAll connects the requests at once, so that their attempts ask
// the pool for the same connections together, and waits until every one
// is connected.
func connectAll(t *testing.T, m *tunnel.Manager, reqs []*tunnel.ConnectRequest) {
	t.Helper()
	var wg sync.WaitGroup
	for _, req := range reqs {
		wg.Go(func() { connect(t, m, req) })
	}
	wg.Wait()
	for _, req := range reqs {
		waitFor(t, m, req.Name, "connected", state(sshdeck.TunnelConnected))
	}
}

// retryingAfter waits until the tunnel has failed since it was connected
// and waits for, or makes, its next attempt; its status then still says
// why it failed.
func retryingAfter(t *testing.T, m *tunnel.Manager, name, what string) tunnel.Status {
	t.Helper()
	return waitFor(t, m, name, "retrying or waiting after "+what, func(st tunnel.Status) bool {
		return (st.Status == sshdeck.TunnelRetrying || st.Status == sshdeck.TunnelWaiting) && st.RetryCount >= 1
	})
}

// holdsOne checks that s has one connection, held by the process holding
// it (this test, or the sshd of the hop before it) as Holds says.
func holdsOne(t *testing.T, s *sshdtest.Server, what string, heldBy func(pid int) bool) {
	t.Helper()
	if pids := clients(t, s); len(pids) != 1 || !heldBy(pids[0]) {
		t.Errorf("%s (%s) has connections from %v, want one from the hop before it", what, s.Addr, pids)
	}
}

// TestSharedJumpHost: tunnels whose sources sit behind one bastion ride
// one connection to it (and one to the source inside it, and one to the
// endpoint inside that); the bastion dies, and every tunnel fails naming
// it and retries on its own; it comes back, and so do they, on one
// connection again.
func TestSharedJumpHost(t *testing.T) {
	w := newChainWorld(t)
	m := w.Manager("a")
	const tunnels = 10
	reqs, ports := make([]*tunnel.ConnectRequest, tunnels), make([]int, tunnels)
	for i := range reqs {
		ports[i] = sshdtest.FreePort(t)
		reqs[i] = w.request(fmt.Sprintf("bastion-%d", i), 1, ports[i])
		// Retries enough to outlast the bastion's restart on a busy
		// machine: this test is about sharing, not running out.
		reqs[i].MaxRetries = tunneltest.Ptr(1000)
	}
	connectAll(t, m, reqs)
	roundTrips(t, ports)
	if got := m.Dials(); got != 3 {
		t.Errorf("%d connections dialled for %d tunnels, want 3 (the bastion's, the source's, the endpoint's)", got, tunnels)
	}
	bastion := w.jumps[0]
	oneConnection := func() {
		t.Helper()
		holdsOne(t, bastion, "the bastion", func(pid int) bool { return pid == os.Getpid() })
		holdsOne(t, w.source, "the source", bastion.Holds)
		holdsOne(t, w.Endpoint, "the endpoint", w.source.Holds)
		if n := m.Conns(); n != 3 {
			t.Errorf("the pool holds %d connections, want 3", n)
		}
	}
	oneConnection()

	bastion.Kill()
	prefix := fmt.Sprintf("jump host 1 (%s): ", bastion.Addr)
	for _, req := range reqs {
		st := retryingAfter(t, m, req.Name, "the bastion died")
		if st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrNetwork || !strings.HasPrefix(st.Reason, prefix) {
			t.Errorf("%s after the bastion died: %+v, want a network failure naming it (%q…)", req.Name, st, prefix)
		}
	}
	bastion.Restart()
	for _, req := range reqs {
		waitFor(t, m, req.Name, "connected again", state(sshdeck.TunnelConnected))
	}
	roundTrips(t, ports)
	oneConnection()
}

// TestSharedEndpointRestart: the endpoint's sshd dies alone under 20
// tunnels on one shared connection to it; the source's stays up, every
// tunnel retries, and all come back on one connection to each.
func TestSharedEndpointRestart(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	const tunnels = 20
	reqs, ports := make([]*tunnel.ConnectRequest, tunnels), make([]int, tunnels)
	for i := range reqs {
		ports[i] = sshdtest.FreePort(t)
		reqs[i] = w.Request(fmt.Sprintf("endpoint-%d", i), ports[i])
		reqs[i].MaxRetries, reqs[i].RetryInterval = tunneltest.Ptr(1000), tunneltest.Ptr(100)
	}
	connectAll(t, m, reqs)
	roundTrips(t, ports)
	holdsOne(t, w.Source, "the source", func(pid int) bool { return pid == os.Getpid() })
	holdsOne(t, w.Endpoint, "the endpoint", w.Source.Holds)

	w.Endpoint.Kill()
	prefix := "endpoint " + w.Endpoint.Addr + ": "
	for _, req := range reqs {
		st := retryingAfter(t, m, req.Name, "the endpoint died")
		if st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrNetwork || !strings.HasPrefix(st.Reason, prefix) {
			t.Errorf("%s after the endpoint died: %+v, want a network failure naming it (%q…)", req.Name, st, prefix)
		}
	}
	w.Endpoint.Restart()
	for _, req := range reqs {
		waitFor(t, m, req.Name, "connected again", state(sshdeck.TunnelConnected))
	}
	roundTrips(t, ports)
	holdsOne(t, w.Source, "the source", func(pid int) bool { return pid == os.Getpid() })
	holdsOne(t, w.Endpoint, "the endpoint", w.Source.Holds)
}

// TestSharedSourceHangs: the source stops answering (its sshd and every
// session of it frozen) under several tunnels on one connection to it.
// Its keepalives find it dead, naming it, not the endpoint inside it whose
// keepalives go unanswered too; every tunnel retries, and all come back
// once it answers again.
func TestSharedSourceHangs(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a") // keepalives every 500 ms, 3 misses: dead in 1.5 s
	const tunnels = 8
	reqs, ports := make([]*tunnel.ConnectRequest, tunnels), make([]int, tunnels)
	for i := range reqs {
		ports[i] = sshdtest.FreePort(t)
		reqs[i] = w.Request(fmt.Sprintf("hang-%d", i), ports[i])
		reqs[i].MaxRetries, reqs[i].RetryInterval = tunneltest.Ptr(1000), tunneltest.Ptr(200)
	}
	connectAll(t, m, reqs)
	roundTrips(t, ports)

	w.Source.Freeze()
	thawed := false
	defer func() {
		if !thawed {
			w.Source.Thaw()
		}
	}()
	// The first failure is the keepalives'; a retry meanwhile, whose
	// handshake the frozen sshd never answers, fails on its own timeout
	// and may be what a later tunnel's status says, naming the source too.
	prefix := "source " + w.Source.Addr
	keepalives := 0
	for _, req := range reqs {
		st := retryingAfter(t, m, req.Name, "the source froze")
		t.Logf("%s: %s", req.Name, st.Reason)
		if st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrTimeout || !strings.HasPrefix(st.Reason, prefix) {
			t.Errorf("%s after the source froze: %+v, want a timeout naming it (%q…)", req.Name, st, prefix)
		}
		if strings.Contains(st.Reason, "keepalives unanswered") {
			keepalives++
		}
	}
	if keepalives == 0 {
		t.Error("no tunnel's failure was the source's keepalives")
	}
	w.Source.Thaw()
	thawed = true
	for _, req := range reqs {
		waitFor(t, m, req.Name, "connected again", state(sshdeck.TunnelConnected))
	}
	roundTrips(t, ports)
	holdsOne(t, w.Source, "the source", func(pid int) bool { return pid == os.Getpid() })
	holdsOne(t, w.Endpoint, "the endpoint", w.Source.Holds)
}
