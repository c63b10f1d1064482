// Package tunneltest is the test harness that the tests of the tunnel
// engine (tunnel-service/tunnel) and of its HTTP API
// (tunnel-service/tunnelapi) share: a World of two real OpenSSH hosts, an
// echo service and a store, and the Manager options that make tests fast.
package tunneltest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// World is two real OpenSSH hosts (source and endpoint, both sshd on
// 127.0.0.1), an echo service on the source's side, and a store.
type World struct {
	t                testing.TB
	Source, Endpoint *sshdtest.Server
	Key              string // root's private key, authorised on both
	EchoPort         int
	Store            *embedded.Store
	Sealer           *secret.Sealer
	// Mode is the mode of the tunnels Request asks for: empty (relay, the
	// default) or "direct".
	Mode string
}

// NewWorld starts a World; it stops when the test ends.
func NewWorld(t testing.TB) *World {
	t.Helper()
	sshdtest.Require(t)
	key, pub := sshdtest.NewKey(t, "")
	cfg := sshdtest.Config{AuthorizedKeys: []ssh.PublicKey{pub}}
	store, sealer := Store(t)
	return &World{
		t:        t,
		Source:   sshdtest.Start(t, cfg),
		Endpoint: sshdtest.Start(t, cfg),
		Key:      key,
		EchoPort: sshdtest.StartEcho(t),
		Store:    store,
		Sealer:   sealer,
	}
}

// Store opens an embedded store and a sealer of its own key, both gone
// when the test ends: a World's, or a test's that needs no SSH server.
func Store(t testing.TB) (*embedded.Store, *secret.Sealer) {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "sshdeck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	keyring, err := secret.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	return store, secret.NewSealer(keyring)
}

// Options are fast enough for tests and still exercise every timer.
func Options(holder string) tunnel.Options {
	return tunnel.Options{
		Holder:            holder,
		DialTimeout:       5 * time.Second,
		KeepaliveInterval: 500 * time.Millisecond,
		KeepaliveMisses:   3,
		LeaseTTL:          1500 * time.Millisecond,
		Heartbeat:         200 * time.Millisecond,
		Reconcile:         300 * time.Millisecond,
		StreamPoll:        100 * time.Millisecond,
		// Below the contract's 1 s, to retry fast; a request's
		// retryInterval below it is raised to it.
		MinRetryInterval: 50 * time.Millisecond,
	}
}

// Manager starts a Manager over the world's store with Options, reading
// the hosts that requests name from the store (Hosts); the test shuts it
// down.
func (w *World) Manager(holder string) *tunnel.Manager {
	opts := Options(holder)
	opts.Hosts = w.Hosts()
	m := tunnel.NewManager(w.Store, w.Sealer, opts)
	m.Start()
	w.t.Cleanup(func() { m.Shutdown(context.Background()) })
	return m
}

// Hosts reads the stored hosts of the world's store, as the service does.
func (w *World) Hosts() *hostchain.Reader {
	return &hostchain.Reader{Store: w.Store, Sealer: w.Sealer}
}

// Request is a connect request over the world's hosts with root's key.
func (w *World) Request(name string, endpointPort int) *tunnel.ConnectRequest {
	return &tunnel.ConnectRequest{
		Name:             name,
		SourceIP:         "127.0.0.1",
		SourceSSHPort:    &w.Source.Port,
		SourceUsername:   "root",
		SourceSSHKey:     w.Key,
		EndpointIP:       "127.0.0.1",
		EndpointSSHPort:  &w.Endpoint.Port,
		EndpointUsername: "root",
		EndpointSSHKey:   w.Key,
		SourcePort:       &w.EchoPort,
		EndpointPort:     &endpointPort,
		MaxRetries:       Ptr(3),
		RetryInterval:    Ptr(100),
		Mode:             w.Mode,
	}
}

// Ptr returns a pointer to v, for a request's optional fields.
func Ptr[T any](v T) *T { return &v }
