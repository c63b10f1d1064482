package tunnel

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// world is two real OpenSSH hosts (source and endpoint, both sshd on
// 127.0.0.1), an echo service on the source's side, and a store.
type world struct {
	t                testing.TB
	source, endpoint *sshdtest.Server
	key              string // root's private key, authorised on both
	echoPort         int
	store            *embedded.Store
	sealer           *secret.Sealer
}

func newWorld(t testing.TB) *world {
	t.Helper()
	sshdtest.Require(t)
	key, pub := sshdtest.NewKey(t, "")
	cfg := sshdtest.Config{AuthorizedKeys: []ssh.PublicKey{pub}}
	store, err := embedded.Open(filepath.Join(t.TempDir(), "sshdeck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	keyring, err := secret.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	return &world{
		t:        t,
		source:   sshdtest.Start(t, cfg),
		endpoint: sshdtest.Start(t, cfg),
		key:      key,
		echoPort: sshdtest.StartEcho(t),
		store:    store,
		sealer:   secret.NewSealer(keyring),
	}
}

// testOptions are fast enough for tests and still exercise every timer.
func testOptions(holder string) Options {
	return Options{
		Holder:            holder,
		DialTimeout:       5 * time.Second,
		KeepaliveInterval: 500 * time.Millisecond,
		KeepaliveMisses:   3,
		LeaseTTL:          1500 * time.Millisecond,
		Heartbeat:         200 * time.Millisecond,
		Reconcile:         300 * time.Millisecond,
		StreamPoll:        100 * time.Millisecond,
	}
}

// manager starts a Manager over the world's store; the test shuts it down.
func (w *world) manager(holder string) *Manager {
	m := NewManager(w.store, w.sealer, testOptions(holder))
	m.Start()
	w.t.Cleanup(func() { m.Shutdown(context.Background()) })
	return m
}

// request is a connect request over the world's hosts with root's key.
func (w *world) request(name string, endpointPort int) *ConnectRequest {
	return &ConnectRequest{
		Name:             name,
		SourceIP:         "127.0.0.1",
		SourceSSHPort:    &w.source.Port,
		SourceUsername:   "root",
		SourceSSHKey:     w.key,
		EndpointIP:       "127.0.0.1",
		EndpointSSHPort:  &w.endpoint.Port,
		EndpointUsername: "root",
		EndpointSSHKey:   w.key,
		SourcePort:       &w.echoPort,
		EndpointPort:     &endpointPort,
		MaxRetries:       ptr(3),
		RetryInterval:    ptr(100),
	}
}

func ptr[T any](v T) *T { return &v }

const owner = "usr_alice"

// waitFor polls the tunnel's status until ok, failing after a deadline
// with the last status seen. The deadline is sshdtest.WaitPatience (two
// minutes): these are protocol waits (logins to running sshd hosts, retries,
// keepalives) of seconds at most, and it only turns a hang into a failure.
func waitFor(t testing.TB, m *Manager, name string, what string, ok func(Status) bool) Status {
	t.Helper()
	deadline := time.Now().Add(sshdtest.WaitPatience)
	var last Status
	for time.Now().Before(deadline) {
		st, err := m.Status(context.Background(), owner, name)
		if err == nil {
			last = st
			if ok(st) {
				return st
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("tunnel %q never became %s; last status %+v", name, what, last)
	return last
}

func state(want sshdeck.TunnelState) func(Status) bool {
	return func(st Status) bool { return st.Status == want }
}
