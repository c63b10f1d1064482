package tunnel_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// A host's tunnelConnections are live (shared/hosts, tunnels.go; refs.go):
// the hosts are saved through the hosts service, wired to the store's
// tunnels as the API wires it, and the tunnels run between real sshd
// hosts through a Manager that only reads the store.

// hostsOf is the hosts service over the world's store, writing tunnels.
func hostsOf(w *tunneltest.World) *hosts.Service {
	return hosts.NewService(w.Store, w.Store, w.Sealer, nil)
}

// item is a tunnelConnection carried to the world's echo service.
func item(w *tunneltest.World, endpointPort int, endpointHost string, autoStart bool) hosts.TunnelInput {
	return hosts.TunnelInput{
		SourcePort: w.EchoPort, EndpointPort: endpointPort, EndpointHost: endpointHost,
		MaxRetries: tunneltest.Ptr(1000), RetryInterval: tunneltest.Ptr(1), AutoStart: autoStart,
	}
}

// rootHost is a host of the world at port, logged in as root with the
// world's key.
func rootHost(w *tunneltest.World, name string, port *int) hosts.Input {
	return hosts.Input{Name: name, IP: "127.0.0.1", Port: port, Username: "root", Key: &w.Key}
}

func update(t *testing.T, svc *hosts.Service, id int64, in hosts.Input) {
	t.Helper()
	if _, err := svc.Update(context.Background(), owner, id, &in, nil); err != nil {
		t.Fatalf("update host %d: %v", id, err)
	}
}

func generation(t *testing.T, w *tunneltest.World, name string) int64 {
	t.Helper()
	tn, err := w.Store.Tunnel(context.Background(), owner, name)
	if err != nil {
		t.Fatalf("tunnel %q: %v", name, err)
	}
	return tn.Generation
}

func gone(t *testing.T, w *tunneltest.World, name string) {
	t.Helper()
	if _, err := w.Store.Tunnel(context.Background(), owner, name); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Errorf("tunnel %q: %v, want it deleted", name, err)
	}
}

// TestHostTunnels: a host saved before its endpoint, with two
// tunnelConnections (the first autoStart, naming the endpoint by a name no
// host has yet; the second not, naming it by id once it exists). The
// first retries with a reason naming the missing host until the endpoint
// is saved, then connects at once and carries bytes; the second is
// disconnected until connected by its name alone. Changing the first's
// endpointPort restarts it on the new port; changing only tags restarts
// nothing; removing the second deletes its tunnel; deleting the host
// stops and forgets the first.
func TestHostTunnels(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	svc := hostsOf(w)
	ctx := context.Background()

	p0, p1, p2 := sshdtest.FreePort(t), sshdtest.FreePort(t), sshdtest.FreePort(t)
	src := rootHost(w, "src", &w.Source.Port)
	src.TunnelConnections = []hosts.TunnelInput{item(w, p0, "web", true)}
	id := saveHost(t, svc, owner, src)
	first, second := sshdeck.HostTunnelName(id, 0), sshdeck.HostTunnelName(id, 1)

	want := `endpointHost "web": no host of yours has this name or id`
	st := waitFor(t, m, first, "retrying without its endpoint", func(st tunnel.Status) bool {
		return st.Reason == want && (st.Status == sshdeck.TunnelWaiting || st.Status == sshdeck.TunnelRetrying)
	})
	if st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrUnknown || !st.AutoStart {
		t.Errorf("status %+v: want errorType unknown, autoStart", st)
	}
	web := saveHost(t, svc, owner, rootHost(w, "web", &w.Endpoint.Port))
	waitFor(t, m, first, "connected once its endpoint is saved", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(p0, 1<<20); err != nil {
		t.Fatal(err)
	}
	rec, err := w.Store.Tunnel(ctx, owner, first)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Spec.SourceHostID != id || rec.Spec.EndpointHost != "web" || !rec.Spec.HostTunnel || rec.Spec.Source.IP != "" ||
		len(rec.Sealed.Source.Key) != 0 {
		t.Errorf("record %+v: want references and no copy", rec.Spec)
	}

	// The second item, by the endpoint's id, is stored stopped.
	src.TunnelConnections = append(src.TunnelConnections, item(w, p1, strconv.FormatInt(web, 10), false))
	update(t, svc, id, src)
	st, err = m.Status(ctx, owner, second)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != sshdeck.TunnelDisconnected || !strings.Contains(st.Reason, `{"name": "`+second+`"} starts it`) {
		t.Errorf("a tunnelConnection without autoStart: %+v", st)
	}
	if err := m.Connect(ctx, owner, &tunnel.ConnectRequest{Name: second}); err != nil {
		t.Fatalf("connect %q by name: %v", second, err)
	}
	waitFor(t, m, second, "connected by name", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(p1, 1<<20); err != nil {
		t.Fatal(err)
	}

	// Only tags: no tunnel restarts.
	g0, g1 := generation(t, w, first), generation(t, w, second)
	src.Tags = []string{"prod"}
	update(t, svc, id, src)
	if a, b := generation(t, w, first), generation(t, w, second); a != g0 || b != g1 {
		t.Errorf("a change of tags restarted tunnels: generations %d, %d; were %d, %d", a, b, g0, g1)
	}

	// The first item's endpointPort changes: it moves; the second runs on.
	src.TunnelConnections[0].EndpointPort = p2
	update(t, svc, id, src)
	if generation(t, w, second) != g1 {
		t.Error("changing the first item restarted the second")
	}
	sshdtest.WaitPort(t, p0, true)
	waitFor(t, m, first, "connected on its new port", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(p2, 1<<20); err != nil {
		t.Fatal(err)
	}

	// The second item goes: its tunnel stops and is forgotten.
	src.TunnelConnections = src.TunnelConnections[:1]
	update(t, svc, id, src)
	gone(t, w, second)
	sshdtest.WaitPort(t, p1, true)
	if err := sshdtest.RoundTrip(p2, 64<<10); err != nil {
		t.Fatalf("the first item after the second went: %v", err)
	}

	// The host goes: so do its tunnels.
	if err := svc.Delete(ctx, owner, id, nil); err != nil {
		t.Fatal(err)
	}
	gone(t, w, first)
	sshdtest.WaitPort(t, p2, true)
	sshdtest.WaitUntil(t, "the tunnel's run ending", func() bool { return !m.Running(owner, first) })

	// A name holding ':' is a host tunnel's: a request with fields may not
	// take it, and a name alone that no host tunnel has is 400.
	req := w.Request("7:0", p0)
	if err := m.Connect(ctx, owner, req); sshdeck.ErrorCode(err) != sshdeck.Invalid || !strings.Contains(err.Error(), "holds ':'") {
		t.Errorf("a request with fields named 7:0: %v", err)
	}
	if err := m.Connect(ctx, owner, &tunnel.ConnectRequest{Name: first}); sshdeck.ErrorCode(err) != sshdeck.Invalid {
		t.Errorf("a deleted host tunnel by name: %v", err)
	}
}

// TestHostTunnelForgotten: a host tunnel whose host lost its item with no
// sync of the tunnels after it (a crash between the two writes, made here
// by writing the host to the store directly) is deleted by the replica
// that next tries it.
func TestHostTunnelForgotten(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	svc := hostsOf(w)
	ctx := context.Background()
	saveHost(t, svc, owner, rootHost(w, "web", &w.Endpoint.Port))
	port := sshdtest.FreePort(t)
	src := rootHost(w, "src", &w.Source.Port)
	src.TunnelConnections = []hosts.TunnelInput{item(w, port, "web", true)}
	id := saveHost(t, svc, owner, src)
	name := sshdeck.HostTunnelName(id, 0)
	waitFor(t, m, name, "connected", state(sshdeck.TunnelConnected))

	h, err := w.Store.Host(ctx, owner, id)
	if err != nil {
		t.Fatal(err)
	}
	h.TunnelConnections, h.Version = nil, h.Version+1
	if err := w.Store.UpdateHost(ctx, h); err != nil {
		t.Fatal(err)
	}
	w.Source.Restart() // the tunnel breaks and tries again
	sshdtest.WaitUntil(t, "the tunnel forgotten", func() bool {
		_, err := w.Store.Tunnel(ctx, owner, name)
		return sshdeck.ErrorCode(err) == sshdeck.NotFound
	})
	sshdtest.WaitPort(t, port, true)
}

// TestHostCredentialsRestart: a source host that logs in with a password;
// a wrong one saved restarts its tunnel, which fails to log in (not
// retried); the right one saved restarts it again and it reconnects.
func TestHostCredentialsRestart(t *testing.T) {
	w := tunneltest.NewWorld(t)
	sshdtest.EnsureUser(t, hopUser, hopPassword)
	m := w.Manager("a")
	svc := hostsOf(w)
	saveHost(t, svc, owner, rootHost(w, "web", &w.Endpoint.Port))
	port := sshdtest.FreePort(t)
	pw := "password"
	src := hosts.Input{Name: "src", IP: "127.0.0.1", Port: &w.Source.Port, Username: hopUser, AuthType: &pw,
		Password: tunneltest.Ptr(hopPassword), TunnelConnections: []hosts.TunnelInput{item(w, port, "web", true)}}
	id := saveHost(t, svc, owner, src)
	name := sshdeck.HostTunnelName(id, 0)
	waitFor(t, m, name, "connected", state(sshdeck.TunnelConnected))

	src.Password = tunneltest.Ptr("not " + hopPassword)
	update(t, svc, id, src)
	st := waitFor(t, m, name, "failed to log in", failedWith(sshdeck.TunnelErrAuthentication))
	if !strings.Contains(st.Reason, hopUser) || strings.Contains(st.Reason, hopPassword) {
		t.Errorf("reason %q: want the user named, and no password", st.Reason)
	}
	src.Password = tunneltest.Ptr(hopPassword)
	update(t, svc, id, src)
	waitFor(t, m, name, "connected with the right password", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestJumpHostCredentialsRestart: a tunnel connected by host ids whose
// source is behind jump host 2 (behind jump host 1) restarts when jump
// host 2's password changes: a wrong one fails it naming the hop, the
// right one brings it back; a change of the hop's tags restarts nothing.
func TestJumpHostCredentialsRestart(t *testing.T) {
	w := newChainWorld(t)
	m := w.Manager("a")
	c := saveChain(t, w)
	svc := hostsOf(w.World)
	port := sshdtest.FreePort(t)
	req := byIDs("behind-2", c.source2, c.endpoint, w.EchoPort, port)
	req.AutoStart = true
	connect(t, m, req)
	waitFor(t, m, "behind-2", "connected", state(sshdeck.TunnelConnected))

	pw := "password"
	jump2 := hosts.Input{Name: "jump 2", IP: "127.0.0.3", Port: &w.jumps[1].Port, Username: hopUser, AuthType: &pw,
		JumpHosts: jumpHosts(c.jump1)}
	g := generation(t, w.World, "behind-2")
	jump2.Tags = []string{"bastion"}
	update(t, svc, c.jump2, jump2)
	if generation(t, w.World, "behind-2") != g {
		t.Error("a change of a jump host's tags restarted the tunnel")
	}

	jump2.Password = tunneltest.Ptr("not " + hopPassword)
	update(t, svc, c.jump2, jump2)
	st := waitFor(t, m, "behind-2", "failed at jump host 2", failedWith(sshdeck.TunnelErrAuthentication))
	if want := fmt.Sprintf("jump host 2 (%s via %s) refused the password login of %q", w.jumps[1].Addr, w.jumps[0].Addr, hopUser); !strings.HasPrefix(st.Reason, want) {
		t.Errorf("reason %q, want %q…", st.Reason, want)
	}
	jump2.Password = tunneltest.Ptr(hopPassword)
	update(t, svc, c.jump2, jump2)
	waitFor(t, m, "behind-2", "connected again", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
	provePath(t, w.path(2))
}

// TestHostTunnelRecreated: a host's saves drop its tunnelConnection and
// add another in its place between two heartbeats of the replica running
// it. The record is deleted and created again, at generation 1 as the one
// running was: the replica renews its lease on the new record, and must
// restart with the new item (its port) rather than go on with the old.
func TestHostTunnelRecreated(t *testing.T) {
	w := tunneltest.NewWorld(t)
	opts := tunneltest.Options("a")
	// Heartbeats far apart, so that both saves fall between two of them;
	// the lease outlives a heartbeat missed on a busy machine.
	opts.Heartbeat, opts.LeaseTTL = 3*time.Second, 10*time.Second
	opts.Hosts = w.Hosts()
	m := tunnel.NewManager(w.Store, w.Sealer, opts)
	m.Start()
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	svc := hostsOf(w)
	saveHost(t, svc, owner, rootHost(w, "web", &w.Endpoint.Port))
	before, after := sshdtest.FreePort(t), sshdtest.FreePort(t)
	src := rootHost(w, "src", &w.Source.Port)
	src.TunnelConnections = []hosts.TunnelInput{item(w, before, "web", true)}
	id := saveHost(t, svc, owner, src)
	name := sshdeck.HostTunnelName(id, 0)
	waitFor(t, m, name, "connected", state(sshdeck.TunnelConnected))
	if g := generation(t, w, name); g != 1 {
		t.Fatalf("tunnel %q runs at generation %d; this test needs 1", name, g)
	}

	src.TunnelConnections = nil
	update(t, svc, id, src)
	src.TunnelConnections = []hosts.TunnelInput{item(w, after, "web", true)}
	update(t, svc, id, src)
	if g := generation(t, w, name); g != 1 {
		t.Fatalf("tunnel %q written again at generation %d; this test needs 1", name, g)
	}
	sshdtest.WaitPort(t, after, false)
	sshdtest.WaitPort(t, before, true)
	waitFor(t, m, name, "connected on the new port", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(after, 1<<10); err != nil {
		t.Fatal(err)
	}
}
