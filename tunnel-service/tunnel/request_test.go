package tunnel_test

import (
	"context"
	"testing"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
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
