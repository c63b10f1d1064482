package tunnel

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"syscall"
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
	t                *testing.T
	source, endpoint *sshdtest.Server
	key              string // root's private key, authorised on both
	echoPort         int
	store            *embedded.Store
	sealer           *secret.Sealer
}

func newWorld(t *testing.T) *world {
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
		echoPort: startEcho(t),
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
// with the last status seen.
func waitFor(t *testing.T, m *Manager, name string, what string, ok func(Status) bool) Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
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

// startEcho serves an echo on 127.0.0.1 that honours half-close: it sends
// back everything, then closes its sending side when the client has.
func startEcho(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
				c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// roundTrip sends n random bytes through the endpoint port, half-closes,
// and checks the echo brings back the same bytes (by SHA-256).
func roundTrip(port int, n int64) error {
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer c.Close()
	sent, received := sha256.New(), sha256.New()
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(n))
	var writeErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, writeErr = io.Copy(c, io.TeeReader(io.LimitReader(rand.NewChaCha8(seed), n), sent))
		if writeErr == nil {
			writeErr = c.(*net.TCPConn).CloseWrite()
		}
	}()
	got, err := io.Copy(received, c)
	<-done
	switch {
	case writeErr != nil:
		return fmt.Errorf("write: %w", writeErr)
	case err != nil:
		return fmt.Errorf("read after %d bytes: %w", got, err)
	case got != n:
		return fmt.Errorf("echo carried %d bytes of %d", got, n)
	case !bytes.Equal(sent.Sum(nil), received.Sum(nil)):
		return fmt.Errorf("echo of %d bytes came back different", n)
	}
	return nil
}

// portClosed reports whether nothing listens on the endpoint port.
func portClosed(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

func waitPort(t *testing.T, port int, closed bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if portClosed(port) == closed {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("port %d: closed = %v never happened", port, closed)
}

