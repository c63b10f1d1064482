package sshdtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// StartEcho serves an echo on 127.0.0.1, the service a tunnel carries
// connections to. It honours half-close: it sends back everything, then
// closes its sending side once the client has closed its own. It stops
// when the test ends.
func StartEcho(t testing.TB) int {
	t.Helper()
	e, err := ListenEcho()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e.Port
}

// Echo is an echo server started by ListenEcho.
type Echo struct {
	// Port is the port it listens on, on 127.0.0.1.
	Port int
	ln   net.Listener
}

// ListenEcho is StartEcho without a test; Close stops it.
func ListenEcho() (*Echo, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sshdtest: echo: %w", err)
	}
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
	return &Echo{Port: ln.Addr().(*net.TCPAddr).Port, ln: ln}, nil
}

// Close stops accepting connections; those accepted run to their end.
func (e *Echo) Close() error { return e.ln.Close() }

// RoundTrip sends n random bytes to 127.0.0.1:port, half-closes, and checks
// that the echo brings back the same bytes (by SHA-256) and then EOF.
func RoundTrip(port int, n int64) error {
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return RoundTripConn(c, n)
}

// RoundTripConn is RoundTrip over a connection to an echo service made by
// other means (a tunnel's, a forward's), which must half-close (CloseWrite,
// as TCP connections, SSH channels and multiplexer streams do); it closes c.
func RoundTripConn(c net.Conn, n int64) error {
	defer c.Close()
	half, ok := c.(interface{ CloseWrite() error })
	if !ok {
		return fmt.Errorf("a %T cannot half-close", c)
	}
	sent, received := sha256.New(), sha256.New()
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(n))
	var writeErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, writeErr = io.Copy(c, io.TeeReader(io.LimitReader(rand.NewChaCha8(seed), n), sent))
		if writeErr == nil {
			writeErr = half.CloseWrite()
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

// PortClosed reports whether 127.0.0.1:port refuses connections.
func PortClosed(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// WaitUntil polls ok until it holds, failing after a deadline: readiness
// by polling, never by a fixed sleep. The tests wait with it on protocol
// events of processes already running (a tunnel connecting through sshd, a
// lease expiring and being taken over, a port closing), which take seconds
// at most; the deadline, two minutes, is far beyond them on a loaded machine
// and only turns a hang into a failure that says what never happened.
func WaitUntil(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitPatience)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitPatience is WaitUntil's deadline.
const WaitPatience = 2 * time.Minute

// WaitPort polls until 127.0.0.1:port is closed (or open), failing after
// WaitUntil's deadline.
func WaitPort(t testing.TB, port int, closed bool) {
	t.Helper()
	WaitUntil(t, fmt.Sprintf("port %d: closed = %v", port, closed), func() bool { return PortClosed(port) == closed })
}
