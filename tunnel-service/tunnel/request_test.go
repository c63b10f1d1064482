package tunnel_test

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// TestConnectKeepsTheMethodsCredentials: only the credentials of each
// hop's method are kept: a password method drops a key sent along, a key
// method a password.
func TestConnectKeepsTheMethodsCredentials(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	req := w.Request("methods", sshdtest.FreePort(t))
	// Nobody listens on these: the tunnel fails, its record stays.
	req.SourceSSHPort, req.EndpointSSHPort = tunneltest.Ptr(sshdtest.FreePort(t)), tunneltest.Ptr(sshdtest.FreePort(t))
	req.MaxRetries = tunneltest.Ptr(0)
	req.SourceAuthMethod, req.SourcePassword = "password", "source-password"
	req.EndpointAuthMethod, req.EndpointPassword = "key", "endpoint-password"
	connect(t, m, req)
	stored, err := w.Store.Tunnel(context.Background(), owner, "methods")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := tunnel.OpenTunnel(context.Background(), w.Sealer, stored)
	if err != nil {
		t.Fatal(err)
	}
	if creds.Source.Password != req.SourcePassword || creds.Source.Key != "" {
		t.Errorf("source (password method) kept key %t, password %t", creds.Source.Key != "", creds.Source.Password != "")
	}
	if creds.Endpoint.Key != w.Key || creds.Endpoint.Password != "" {
		t.Errorf("endpoint (key method) kept key %t, password %t", creds.Endpoint.Key != "", creds.Endpoint.Password != "")
	}
	if stored.Spec.Source.Auth != sshdeck.AuthPassword || stored.Spec.Endpoint.Auth != sshdeck.AuthKey {
		t.Errorf("methods stored as %s and %s", stored.Spec.Source.Auth, stored.Spec.Endpoint.Auth)
	}
}

// TestConnectStoresTheChain: a source's jump hosts are stored with the
// tunnel, each hop's credentials sealed for its place; a source behind
// them is sealed apart from a direct source's, so that a service that
// does not know of the chain (and would dial the source directly) cannot
// open its credentials.
func TestConnectStoresTheChain(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	req := w.Request("chained", sshdtest.FreePort(t))
	req.MaxRetries = tunneltest.Ptr(0)
	// Nobody listens there: the tunnel fails, its record stays.
	req.Jumps = []tunnel.JumpHop{
		{IP: "127.0.0.1", SSHPort: sshdtest.FreePort(t), Username: "one", Password: "first hop's"},
		{IP: "10.0.0.7", Username: "two", SSHKey: w.Key},
	}
	connect(t, m, req)
	waitFor(t, m, "chained", "failed", failedWith(sshdeck.TunnelErrNetwork))
	stored, err := w.Store.Tunnel(context.Background(), owner, "chained")
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Spec.Jumps) != 2 || stored.Spec.Jumps[1].IP != "10.0.0.7" || stored.Spec.Jumps[1].SSHPort != 22 || stored.Spec.Jumps[1].Auth != sshdeck.AuthKey {
		t.Errorf("jump hosts stored as %+v", stored.Spec.Jumps)
	}
	creds, err := tunnel.OpenTunnel(context.Background(), w.Sealer, stored)
	if err != nil {
		t.Fatal(err)
	}
	if len(creds.Jumps) != 2 || creds.Jumps[0].Password != "first hop's" || creds.Jumps[1].Key != w.Key || creds.Source.Key != w.Key {
		t.Errorf("credentials opened as %d jump hosts' (first's password %t, second's key %t), source's key %t",
			len(creds.Jumps), creds.Jumps[0].Password != "", creds.Jumps[1].Key != "", creds.Source.Key != "")
	}

	// A record that lost its chain (a service from before chains wrote it
	// back, or someone took it off): the source's credentials stay shut.
	direct := *stored
	direct.Spec.Jumps, direct.Sealed.Jumps = nil, nil
	if _, err := tunnel.OpenTunnel(context.Background(), w.Sealer, &direct); err == nil {
		t.Error("a chained source's credentials opened as a direct source's")
	}
	// Hops swapped: neither opens as the other's.
	swapped := *stored
	swapped.Sealed.Jumps = []sshdeck.SealedCredentials{stored.Sealed.Jumps[1], stored.Sealed.Jumps[0]}
	if _, err := tunnel.OpenTunnel(context.Background(), w.Sealer, &swapped); err == nil {
		t.Error("jump hosts' credentials opened in each other's place")
	}
}

// TestJumpHostsDenied: the first jump host is the service's to dial, and
// is checked against the deployment's ranges as a direct source is; the
// hops after it, and a source behind them, are dialled by the hop before
// and checked against AlwaysDeny only, as an endpoint is.
func TestJumpHostsDenied(t *testing.T) {
	w := tunneltest.NewWorld(t)
	opts := tunneltest.Options("a")
	opts.Deny = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	m := tunnel.NewManager(w.Store, w.Sealer, opts)
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	jump := func(ip string) tunnel.JumpHop { return tunnel.JumpHop{IP: ip, Username: "j", Password: "pw"} }
	for _, tc := range []struct {
		jumps  []tunnel.JumpHop
		source string
		denied string // the field, "" when allowed
	}{
		{nil, "10.0.0.9", "sourceIP"},
		{[]tunnel.JumpHop{jump("10.0.0.5")}, "192.0.2.9", "jumps[0].IP"},
		{[]tunnel.JumpHop{jump("192.0.2.5"), jump("10.0.0.5")}, "10.0.0.9", ""},
		{[]tunnel.JumpHop{jump("192.0.2.5")}, "10.0.0.9", ""},
		{[]tunnel.JumpHop{jump("192.0.2.5"), jump("169.254.169.254")}, "10.0.0.9", "jumps[1].IP"},
		{[]tunnel.JumpHop{jump("192.0.2.5")}, "169.254.169.254", "sourceIP"},
	} {
		req := w.Request("denied", sshdtest.FreePort(t))
		req.Jumps, req.SourceIP = tc.jumps, tc.source
		req.MaxRetries = tunneltest.Ptr(0)
		err := m.Connect(context.Background(), owner, req)
		what := fmt.Sprintf("jumps %+v, source %s", tc.jumps, tc.source)
		switch {
		case tc.denied == "" && err != nil:
			t.Errorf("%s: %v, want allowed", what, err)
		case tc.denied != "" && (sshdeck.ErrorCode(err) != sshdeck.Denied || !strings.HasPrefix(sshdeck.ErrorMessage(err), tc.denied+" ")):
			t.Errorf("%s: %v, want Denied naming %s", what, err, tc.denied)
		}
		if err == nil {
			if err := m.Delete(context.Background(), owner, "denied"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestJumpsOf: a host route's records become jump hops as they are, first
// hop first, each with its host's id.
func TestJumpsOf(t *testing.T) {
	if tunnel.JumpsOf(nil) != nil {
		t.Error("no route: want no jump hops")
	}
	route := []*hostchain.Host{
		{Host: &sshdeck.Host{ID: 3, HostConfig: sshdeck.HostConfig{IP: "bastion.example.com", Port: 2222, Username: "a", AuthType: sshdeck.AuthPassword, KeyType: "auto"}}, Credentials: sshdeck.Credentials{Password: "pw"}},
		{Host: &sshdeck.Host{ID: 5, HostConfig: sshdeck.HostConfig{IP: "10.0.0.7", Port: 22, Username: "b", AuthType: sshdeck.AuthKey, KeyType: "ssh-ed25519"}}, Credentials: sshdeck.Credentials{Key: "KEY", KeyPassword: "kp"}},
	}
	want := []tunnel.JumpHop{
		{IP: "bastion.example.com", SSHPort: 2222, Username: "a", AuthMethod: "password", Password: "pw", KeyType: "auto", HostID: 3},
		{IP: "10.0.0.7", SSHPort: 22, Username: "b", AuthMethod: "key", SSHKey: "KEY", KeyPassword: "kp", KeyType: "ssh-ed25519", HostID: 5},
	}
	if got := tunnel.JumpsOf(route); !reflect.DeepEqual(got, want) {
		t.Errorf("JumpsOf:\n got  %+v\n want %+v", got, want)
	}
}
