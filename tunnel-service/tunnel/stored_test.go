package tunnel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// Tunnels from stored hosts (stored.go): the hosts are saved through the
// hosts service, as the API saves them, and a connect request names them
// by id alone.

// saveHost saves a host of the owner through the hosts service and returns
// its id.
func saveHost(t *testing.T, svc *hosts.Service, owner string, in hosts.Input) int64 {
	t.Helper()
	r, err := svc.Create(context.Background(), owner, &in)
	if err != nil {
		t.Fatalf("create host %s: %v", in.Name, err)
	}
	return r.ID
}

func jumpHosts(ids ...int64) []sshdeck.JumpHost {
	out := make([]sshdeck.JumpHost, len(ids))
	for i, id := range ids {
		out[i] = sshdeck.JumpHost{HostID: id}
	}
	return out
}

// storedChain is the chain world's hosts saved as the owner's: jump hosts
// 1 and 2 (2 reached through 1), the source behind jump host 1
// (source1) and behind jump host 2 (source2, so through 1 then 2), and
// the endpoint.
type storedChain struct {
	jump1, jump2, source1, source2, endpoint int64
}

func saveChain(t *testing.T, w *chainWorld) storedChain {
	svc := hosts.NewService(w.Store, w.Store, w.Sealer, nil)
	key, pw := "key", "password"
	addr := func(i int) string { return strings.Split(w.jumps[i].Addr, ":")[0] }
	var c storedChain
	c.jump1 = saveHost(t, svc, owner, hosts.Input{Name: "jump 1", IP: addr(0), Port: &w.jumps[0].Port, Username: "root", AuthType: &key, Key: &w.keys[0]})
	c.jump2 = saveHost(t, svc, owner, hosts.Input{Name: "jump 2", IP: addr(1), Port: &w.jumps[1].Port, Username: hopUser, AuthType: &pw,
		Password: tunneltest.Ptr(hopPassword), JumpHosts: jumpHosts(c.jump1)})
	source := hosts.Input{IP: "127.0.0.5", Port: &w.source.Port, Username: "root", Key: &w.Key}
	source.Name, source.JumpHosts = "source 1", jumpHosts(c.jump1)
	c.source1 = saveHost(t, svc, owner, source)
	source.Name, source.JumpHosts = "source 2", jumpHosts(c.jump2)
	c.source2 = saveHost(t, svc, owner, source)
	c.endpoint = saveHost(t, svc, owner, hosts.Input{Name: "endpoint", IP: "127.0.0.1", Port: &w.Endpoint.Port, Username: "root", Key: &w.Key})
	return c
}

// byIDs is a connect request that names its source and endpoint by id:
// nothing else of theirs.
func byIDs(name string, source, endpoint int64, sourcePort, endpointPort int) *tunnel.ConnectRequest {
	return &tunnel.ConnectRequest{
		Name: name, SourceHostID: &source, EndpointHostID: &endpoint,
		SourcePort: &sourcePort, EndpointPort: &endpointPort,
		MaxRetries: tunneltest.Ptr(100), RetryInterval: tunneltest.Ptr(100),
	}
}

// TestConnectByHostIDs: a source behind its stored jump hosts (one hop,
// and two where the hop has a jump host of its own) and an endpoint, each
// named by id; the request holds no credential; the tunnel connects over
// the path the hosts say and carries bytes; its record keeps the
// references and no copy of the hosts (no address, no credential), so
// that another replica that takes it over reads them, and a deleted
// source is that tunnel's failure, naming the host.
func TestConnectByHostIDs(t *testing.T) {
	w := newChainWorld(t)
	a := w.Manager("a")
	c := saveChain(t, w)
	for _, tc := range []struct {
		source int64
		hops   int
		ids    []int64 // the jump hosts' ids, first hop first
	}{
		{c.source1, 1, []int64{c.jump1}},
		{c.source2, 2, []int64{c.jump1, c.jump2}},
	} {
		t.Run(fmt.Sprintf("%d jump hosts", tc.hops), func(t *testing.T) {
			name := fmt.Sprintf("stored-%d", tc.hops)
			port := sshdtest.FreePort(t)
			req := byIDs(name, tc.source, c.endpoint, w.EchoPort, port)
			body, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{w.Key, w.keys[0], hopPassword, "PRIVATE KEY"} {
				if strings.Contains(string(body), secret) {
					t.Fatalf("the request %s holds a credential", body)
				}
			}
			connect(t, a, req)
			waitFor(t, a, name, "connected", state(sshdeck.TunnelConnected))
			if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
				t.Fatal(err)
			}
			provePath(t, w.path(tc.hops))

			// The record keeps the references, no copy of the hosts:
			// neither their addresses nor their credentials.
			stored, err := w.Store.Tunnel(context.Background(), owner, name)
			if err != nil {
				t.Fatal(err)
			}
			sp := stored.Spec
			if sp.SourceHostID != tc.source || sp.EndpointHostID != c.endpoint || len(sp.Jumps) != 0 ||
				sp.Source != (sshdeck.TunnelHop{}) || sp.Endpoint != (sshdeck.TunnelHop{}) {
				t.Errorf("stored spec %+v: want references to hosts %d and %d and no hop", sp, tc.source, c.endpoint)
			}
			if !reflect.DeepEqual(stored.Sealed, sshdeck.SealedTunnelCredentials{}) {
				t.Errorf("the record holds sealed credentials %+v", stored.Sealed)
			}
			if err := a.Disconnect(context.Background(), owner, name, false); err != nil {
				t.Fatal(err)
			}
			waitFor(t, a, name, "disconnected", state(sshdeck.TunnelDisconnected))
		})
	}

	// An autoStart tunnel by host ids whose replica dies: another takes it
	// over, reading the hosts. Its source is deleted then: the tunnel
	// restarts, and retries with a reason that names the host.
	b := w.Manager("b")
	port := sshdtest.FreePort(t)
	req := byIDs("stored-auto", c.source1, c.endpoint, w.EchoPort, port)
	req.AutoStart = true
	connect(t, a, req)
	waitFor(t, a, "stored-auto", "connected", state(sshdeck.TunnelConnected))
	a.Crash()
	sshdtest.WaitUntil(t, "b taking the tunnel over", func() bool { return b.Running(owner, "stored-auto") })
	waitFor(t, b, "stored-auto", "connected through b", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
	provePath(t, w.path(1))
	svc := hosts.NewService(w.Store, w.Store, w.Sealer, nil)
	if err := svc.Delete(context.Background(), owner, c.source1, nil); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("sourceHostId: host %d not found", c.source1)
	st := waitFor(t, b, "stored-auto", "retrying without its source", func(st tunnel.Status) bool {
		return (st.Status == sshdeck.TunnelWaiting || st.Status == sshdeck.TunnelRetrying) && st.Reason == want
	})
	if st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrUnknown {
		t.Errorf("a missing host's failure: errorType %v, want unknown", st.ErrorType)
	}
}

// storedEnv is a Manager over a store of hosts, without SSH servers: what
// a request by host id is refused for happens before any dial.
type storedEnv struct {
	store *embedded.Store
	svc   *hosts.Service
	m     *tunnel.Manager
}

func newStoredEnv(t *testing.T, deny ...netip.Prefix) *storedEnv {
	t.Helper()
	store, sealer := tunneltest.Store(t)
	opts := tunneltest.Options("a")
	opts.Deny = deny
	opts.Hosts = &hostchain.Reader{Store: store, Sealer: sealer}
	m := tunnel.NewManager(store, sealer, opts)
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	return &storedEnv{store: store, svc: hosts.NewService(store, store, sealer, nil), m: m}
}

// TestConnectByHostIDRefused: a side given both by id and by fields, an id
// that is no host of the caller's (none, or another user's: the same
// words), a host whose route is broken, an endpoint with jump hosts, a
// host that logs in with neither a password nor a key, and a host in a
// denied range are each 400 naming the conflict or the host, and store no
// tunnel.
func TestConnectByHostIDRefused(t *testing.T) {
	e := newStoredEnv(t, netip.MustParsePrefix("10.9.0.0/16"))
	ctx := context.Background()
	pw, none := "pw", "none"
	save := func(owner string, in hosts.Input) int64 {
		if in.Username == "" {
			in.Username = "root"
		}
		if in.AuthType == nil {
			in.Password = &pw
		}
		return saveHost(t, e.svc, owner, in)
	}
	jump := save(owner, hosts.Input{IP: "192.0.2.1"})
	source := save(owner, hosts.Input{IP: "192.0.2.2", JumpHosts: jumpHosts(jump)})
	endpoint := save(owner, hosts.Input{IP: "192.0.2.3"})
	gone := save(owner, hosts.Input{IP: "192.0.2.4"})
	behindGone := save(owner, hosts.Input{IP: "192.0.2.5", JumpHosts: jumpHosts(gone)})
	if err := e.svc.Delete(ctx, owner, gone, nil); err != nil {
		t.Fatal(err)
	}
	// A cycle that concurrent saves made, which no save lets through:
	// written to the store as is.
	cycleA := save(owner, hosts.Input{IP: "192.0.2.6"})
	cycleB := save(owner, hosts.Input{IP: "192.0.2.7", JumpHosts: jumpHosts(cycleA)})
	h, err := e.store.Host(ctx, owner, cycleA)
	if err != nil {
		t.Fatal(err)
	}
	h.JumpHosts, h.Version = jumpHosts(cycleB), h.Version+1
	if err := e.store.UpdateHost(ctx, h); err != nil {
		t.Fatal(err)
	}
	noLogin := save(owner, hosts.Input{IP: "192.0.2.8", AuthType: &none})
	denied := save(owner, hosts.Input{IP: "169.254.169.254"})
	deniedHere := save(owner, hosts.Input{IP: "10.9.0.1"})
	behindDenied := save(owner, hosts.Input{IP: "192.0.2.9", JumpHosts: jumpHosts(deniedHere)})
	// Bob's host, with an id that alice's hosts have too, and one that
	// only bob's have.
	var bobs int64
	for range 20 {
		bobs = save("usr_bob", hosts.Input{IP: "192.0.2.10"})
	}

	ok := func() *tunnel.ConnectRequest { return byIDs("refused", source, endpoint, 8080, 9000) }
	ptr := tunneltest.Ptr[int64]
	for _, tc := range []struct {
		name   string
		change func(*tunnel.ConnectRequest)
		code   sshdeck.Code
		want   string // the whole message, or its start when it ends in …
	}{
		{"sourceIP too", func(r *tunnel.ConnectRequest) { r.SourceIP = "192.0.2.2" }, sshdeck.Invalid,
			"sourceIP cannot be given with sourceHostId: the stored host gives the address and credentials"},
		{"source credentials too", func(r *tunnel.ConnectRequest) {
			r.SourceSSHPort, r.SourceUsername, r.SourcePassword, r.SourceAuthMethod = tunneltest.Ptr(22), "root", "pw", "password"
			r.SourceSSHKey, r.SourceKeyPassword, r.SourceKeyType = "k", "kp", tunneltest.Ptr("auto")
		}, sshdeck.Invalid,
			"sourceSSHPort, sourceUsername, sourcePassword, sourceAuthMethod, sourceSSHKey, sourceKeyPassword and sourceKeyType cannot be given with sourceHostId: the stored host gives the address and credentials"},
		{"endpoint fields too", func(r *tunnel.ConnectRequest) { r.EndpointIP, r.EndpointSSHKey = "192.0.2.3", "k" }, sshdeck.Invalid,
			"endpointIP and endpointSSHKey cannot be given with endpointHostId: the stored host gives the address and credentials"},
		{"source id 0", func(r *tunnel.ConnectRequest) { r.SourceHostID = ptr(0) }, sshdeck.Invalid, "sourceHostId must be a positive integer (a host's id)"},
		{"endpoint id -1", func(r *tunnel.ConnectRequest) { r.EndpointHostID = ptr(-1) }, sshdeck.Invalid, "endpointHostId must be a positive integer (a host's id)"},
		{"no such source", func(r *tunnel.ConnectRequest) { r.SourceHostID = ptr(999) }, sshdeck.Invalid, "sourceHostId: host 999 not found"},
		{"a deleted source", func(r *tunnel.ConnectRequest) { r.SourceHostID = ptr(gone) }, sshdeck.Invalid, fmt.Sprintf("sourceHostId: host %d not found", gone)},
		{"bob's source", func(r *tunnel.ConnectRequest) { r.SourceHostID = ptr(bobs) }, sshdeck.Invalid, fmt.Sprintf("sourceHostId: host %d not found", bobs)},
		{"no such endpoint", func(r *tunnel.ConnectRequest) { r.EndpointHostID = ptr(999) }, sshdeck.Invalid, "endpointHostId: host 999 not found"},
		{"bob's endpoint", func(r *tunnel.ConnectRequest) { r.EndpointHostID = ptr(bobs) }, sshdeck.Invalid, fmt.Sprintf("endpointHostId: host %d not found", bobs)},
		{"a deleted jump host", func(r *tunnel.ConnectRequest) { r.SourceHostID = ptr(behindGone) }, sshdeck.Invalid,
			fmt.Sprintf("sourceHostId: host %d: jumpHosts[0]: host %d not found", behindGone, gone)},
		{"a cycle", func(r *tunnel.ConnectRequest) { r.SourceHostID = ptr(cycleA) }, sshdeck.Invalid,
			fmt.Sprintf("sourceHostId: host %d: jumpHosts[0]: a cycle: %d → %d → %d", cycleA, cycleA, cycleB, cycleA)},
		{"an endpoint with jump hosts", func(r *tunnel.ConnectRequest) { r.EndpointHostID = ptr(source) }, sshdeck.Invalid,
			fmt.Sprintf("endpointHostId: host %d is reached through jump hosts (host %d), but a tunnel's endpoint is reached through its source: give an endpoint without jumpHosts", source, jump)},
		{"a host without login", func(r *tunnel.ConnectRequest) { r.SourceHostID = ptr(noLogin) }, sshdeck.Invalid,
			fmt.Sprintf("sourceHostId: host %d: authType must be password or key", noLogin)},
		{"an endpoint without login", func(r *tunnel.ConnectRequest) { r.EndpointHostID = ptr(noLogin) }, sshdeck.Invalid,
			fmt.Sprintf("endpointHostId: host %d: authType must be password or key", noLogin)},
		{"an always denied source", func(r *tunnel.ConnectRequest) { r.SourceHostID = ptr(denied) }, sshdeck.Denied,
			fmt.Sprintf("sourceHostId: host %d: ip 169.254.169.254 resolves to 169.254.169.254, in the denied range 169.254.0.0/16", denied)},
		{"an always denied endpoint", func(r *tunnel.ConnectRequest) { r.EndpointHostID = ptr(denied) }, sshdeck.Denied,
			fmt.Sprintf("endpointHostId: host %d: ip 169.254.169.254 resolves to 169.254.169.254, in the denied range 169.254.0.0/16", denied)},
		{"a first jump host the deployment denies", func(r *tunnel.ConnectRequest) { r.SourceHostID = ptr(behindDenied) }, sshdeck.Denied,
			fmt.Sprintf("sourceHostId: host %d: jump host 1 (host %d): ip 10.9.0.1 resolves to 10.9.0.1, in the denied range 10.9.0.0/16", behindDenied, deniedHere)},
		{"a bad pin", func(r *tunnel.ConnectRequest) { r.SourceHostKey = "nope" }, sshdeck.Invalid, "sourceHostKey …"},
	} {
		req := ok()
		tc.change(req)
		err := e.m.Connect(ctx, owner, req)
		msg := sshdeck.ErrorMessage(err)
		matches := msg == tc.want
		if prefix, cut := strings.CutSuffix(tc.want, "…"); cut {
			matches = strings.HasPrefix(msg, prefix)
		}
		if sshdeck.ErrorCode(err) != tc.code || !matches {
			t.Errorf("%s: %v (%s), want %s %q", tc.name, err, sshdeck.ErrorCode(err), tc.code, tc.want)
		}
		if _, err := e.store.Tunnel(ctx, owner, "refused"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
			t.Fatalf("%s: a tunnel was stored (%v)", tc.name, err)
		}
	}

	// A pin is no credential: it may come with a host's id, and applies.
	req := ok()
	req.SourceHostKey = "SHA256:" + strings.Repeat("A", 43)
	if err := e.m.Connect(ctx, owner, req); err != nil {
		t.Fatalf("a pin with sourceHostId: %v", err)
	}
	stored, err := e.store.Tunnel(ctx, owner, "refused")
	if err != nil {
		t.Fatal(err)
	}
	if stored.Spec.Source.HostKey != req.SourceHostKey || stored.Spec.SourceHostID != source || stored.Spec.Source.IP != "" {
		t.Errorf("source stored as %+v", stored.Spec.Source)
	}
	// The request was not changed: it may be sent again.
	if req.SourceIP != "" || req.Jumps != nil || req.EndpointUsername != "" {
		t.Errorf("Connect changed the request: %+v", req)
	}
	if err := e.m.Connect(ctx, owner, req); err != nil {
		t.Fatalf("the same request again: %v", err)
	}

	// Without Hosts, a Manager reads none.
	bare := tunnel.NewManager(e.store, nil, tunneltest.Options("bare"))
	t.Cleanup(func() { bare.Shutdown(context.Background()) })
	if err := bare.Connect(ctx, owner, ok()); sshdeck.ErrorCode(err) != sshdeck.Invalid || !strings.Contains(err.Error(), "reads no stored hosts") {
		t.Errorf("a Manager without Hosts: %v", err)
	}
}
