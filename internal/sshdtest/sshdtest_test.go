package sshdtest_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
)

const (
	// Not the tunnel tests' user (sshdeck-test): they set another password on
	// it, and go test runs both packages at once.
	testUser     = "sshdeck-sshdtest"
	testPassword = "correct horse battery staple"
	passphrase   = "s3cret passphrase"
)

func TestServer(t *testing.T) {
	sshdtest.Require(t)
	sshdtest.EnsureUser(t, testUser, testPassword)
	rootPEM, rootPub := sshdtest.NewKey(t, "")
	encPEM, encPub := sshdtest.NewKey(t, passphrase)
	rootKey, err := ssh.ParsePrivateKey([]byte(rootPEM))
	if err != nil {
		t.Fatalf("parsing NewKey's unencrypted key: %v", err)
	}

	began := time.Now()
	srv := sshdtest.Start(t, sshdtest.Config{AuthorizedKeys: []ssh.PublicKey{rootPub, encPub}})
	t.Logf("Start took %v", time.Since(began))
	if want := "127.0.0.1:" + strconv.Itoa(srv.Port); srv.Addr != want || srv.Port == 0 {
		t.Fatalf("Addr %q, Port %d; want Addr %q", srv.Addr, srv.Port, want)
	}

	t.Run("KeyLoginAsRoot", func(t *testing.T) {
		c := login(t, srv, "root", ssh.PublicKeys(rootKey))
		if out := run(t, c, "id -u"); out != "0" {
			t.Errorf("id -u says %q, want 0", out)
		}
	})

	t.Run("KeyLoginAsAnyUser", func(t *testing.T) {
		login(t, srv, testUser, ssh.PublicKeys(rootKey))
	})

	t.Run("PasswordLogin", func(t *testing.T) {
		login(t, srv, testUser, ssh.Password(testPassword))
	})

	t.Run("WrongPasswordFails", func(t *testing.T) {
		began := time.Now()
		c, err := dial(srv, testUser, ssh.Password("wrong "+testPassword))
		if err == nil {
			c.Close()
			t.Fatal("logged in with a wrong password")
		}
		t.Logf("wrong password refused after %v: %v", time.Since(began), err)
		if !strings.Contains(err.Error(), "unable to authenticate") {
			t.Errorf("error %q is not an authentication failure", err)
		}
	})

	t.Run("RootPasswordRefused", func(t *testing.T) {
		// PermitRootLogin prohibit-password: keys only.
		c, err := dial(srv, "root", ssh.Password(testPassword))
		if err == nil {
			c.Close()
			t.Fatal("root logged in with a password")
		}
	})

	t.Run("UnknownKeyRefused", func(t *testing.T) {
		otherPEM, _ := sshdtest.NewKey(t, "")
		other, err := ssh.ParsePrivateKey([]byte(otherPEM))
		if err != nil {
			t.Fatal(err)
		}
		c, err := dial(srv, "root", ssh.PublicKeys(other))
		if err == nil {
			c.Close()
			t.Fatal("logged in with a key that is not authorized")
		}
	})

	t.Run("EncryptedKey", func(t *testing.T) {
		_, err := ssh.ParsePrivateKey([]byte(encPEM))
		var missing *ssh.PassphraseMissingError
		if !errors.As(err, &missing) {
			t.Fatalf("parsing without passphrase: %v, want a PassphraseMissingError", err)
		}
		if !bytes.Equal(missing.PublicKey.Marshal(), encPub.Marshal()) {
			t.Error("the encrypted key's public half is not the public key NewKey returned")
		}
		if _, err := ssh.ParsePrivateKeyWithPassphrase([]byte(encPEM), []byte("wrong")); !errors.Is(err, x509.IncorrectPasswordError) {
			t.Errorf("parsing with a wrong passphrase: %v, want x509.IncorrectPasswordError", err)
		}
		key, err := ssh.ParsePrivateKeyWithPassphrase([]byte(encPEM), []byte(passphrase))
		if err != nil {
			t.Fatalf("parsing with the passphrase: %v", err)
		}
		login(t, srv, "root", ssh.PublicKeys(key))
	})

	t.Run("HostKey", func(t *testing.T) {
		var seen ssh.PublicKey
		c, err := ssh.Dial("tcp", srv.Addr, &ssh.ClientConfig{
			User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(rootKey)}, Timeout: 10 * time.Second,
			HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error { seen = key; return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if seen == nil || !bytes.Equal(seen.Marshal(), srv.HostKey.Marshal()) {
			t.Fatalf("client saw host key %v, Server.HostKey is %s", seen, ssh.FingerprintSHA256(srv.HostKey))
		}
	})

	t.Run("RemoteForward", func(t *testing.T) {
		c := login(t, srv, "root", ssh.PublicKeys(rootKey))
		addr := forward(t, c)
		echoes(t, addr)
	})

	t.Run("RemoteForwardClosesWithSession", func(t *testing.T) {
		c := login(t, srv, testUser, ssh.Password(testPassword))
		addr := forward(t, c)
		echoes(t, addr)
		c.Close()
		began := time.Now()
		waitRefused(t, addr)
		t.Logf("forwarded port closed %v after the client hung up", time.Since(began))
	})

	t.Run("RemoteForwardPortTaken", func(t *testing.T) {
		held, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		c := login(t, srv, "root", ssh.PublicKeys(rootKey))
		began := time.Now()
		l, err := c.Listen("tcp", held.Addr().String())
		if err == nil {
			l.Close()
			t.Fatalf("sshd forwarded %s, which a local listener holds", held.Addr())
		}
		t.Logf("remote forward of a taken port refused after %v: %v", time.Since(began), err)
		// The connection stays usable.
		echoes(t, forward(t, c))
	})

	t.Run("KillDropsSessionsAndRestart", func(t *testing.T) {
		c := login(t, srv, "root", ssh.PublicKeys(rootKey))
		fwd := forward(t, c)
		echoes(t, fwd)

		began := time.Now()
		srv.Kill()
		t.Logf("Kill took %v", time.Since(began))

		// The client learns its connection is gone.
		reply := make(chan error, 1)
		go func() {
			_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		select {
		case err := <-reply:
			if err == nil {
				t.Error("keepalive answered after Kill")
			}
		case <-time.After(time.Minute): // a protocol wait (the socket is closed): generous, to fail rather than hang
			t.Fatal("keepalive neither answered nor failed a minute after Kill")
		}
		if conn, err := net.DialTimeout("tcp", fwd, time.Second); err == nil {
			conn.Close()
			t.Error("forwarded port still accepts after Kill")
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("forwarded port after Kill: %v, want connection refused", err)
		}
		if c, err := dial(srv, "root", ssh.PublicKeys(rootKey)); err == nil {
			c.Close()
			t.Fatal("logged in after Kill")
		}

		srv.Kill() // again: nothing to do

		began = time.Now()
		srv.Restart()
		t.Logf("Restart took %v", time.Since(began))
		// login checks the host key is the same.
		c = login(t, srv, "root", ssh.PublicKeys(rootKey))
		echoes(t, forward(t, c))

		// Restarting a running server kills it first.
		began = time.Now()
		srv.Restart()
		t.Logf("Restart of a running server took %v", time.Since(began))
		if _, _, err := c.SendRequest("keepalive@openssh.com", true, nil); err == nil {
			t.Error("a session survived Restart")
		}
		login(t, srv, testUser, ssh.Password(testPassword))
	})

	if !strings.Contains(srv.Log(), "Accepted publickey for root from 127.0.0.1") {
		t.Errorf("the sshd log has no accepted root login:\n%s", srv.Log())
	}
}

// TestConfig checks that a given port and host key are used.
func TestConfig(t *testing.T) {
	sshdtest.Require(t)
	hostKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, pub := sshdtest.NewKey(t, "")
	key, err := ssh.ParsePrivateKey([]byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	port := sshdtest.FreePort(t)
	srv := sshdtest.Start(t, sshdtest.Config{AuthorizedKeys: []ssh.PublicKey{pub}, HostKey: hostKey, Port: port})
	if srv.Port != port || srv.Addr != "127.0.0.1:"+strconv.Itoa(port) {
		t.Errorf("Port %d, Addr %s; want port %d", srv.Port, srv.Addr, port)
	}
	want, err := ssh.NewPublicKey(&hostKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(srv.HostKey.Marshal(), want.Marshal()) {
		t.Errorf("HostKey is %s, want the given %s", ssh.FingerprintSHA256(srv.HostKey), ssh.FingerprintSHA256(want))
	}
	login(t, srv, "root", ssh.PublicKeys(key))
	if log := srv.Log(); !strings.Contains(log, "Server listening on 127.0.0.1 port "+strconv.Itoa(port)) {
		t.Errorf("the sshd log does not say it listens on port %d:\n%s", port, log)
	}
}

// dial logs in to srv, accepting only its host key.
func dial(srv *sshdtest.Server, user string, auth ssh.AuthMethod) (*ssh.Client, error) {
	return ssh.Dial("tcp", srv.Addr, &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{auth},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey),
		Timeout:         10 * time.Second,
	})
}

// login logs in to srv or fails the test; the client is closed when the
// test ends.
func login(t *testing.T, srv *sshdtest.Server, user string, auth ssh.AuthMethod) *ssh.Client {
	t.Helper()
	c, err := dial(srv, user, auth)
	if err != nil {
		t.Fatalf("logging in as %s: %v\nsshd log:\n%s", user, err, srv.Log())
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// run runs cmd on c and returns its trimmed output.
func run(t *testing.T, c *ssh.Client, cmd string) string {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatalf("opening a session: %v", err)
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	if err != nil {
		t.Fatalf("%s: %v: %s", cmd, err, out)
	}
	return strings.TrimSpace(string(out))
}

// forward asks sshd to listen on a free loopback port and forward its
// connections to an echo server here; it returns the port's address.
func forward(t *testing.T, c *ssh.Client) string {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(sshdtest.FreePort(t))
	l, err := c.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("remote forward of %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				io.Copy(conn, conn)
			}()
		}
	}()
	return addr
}

// echoes checks that a connection to addr reaches an echo server.
func echoes(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("connecting to the forwarded port: %v", err)
	}
	defer conn.Close()
	// A protocol wait through sshd's forward: a minute is far beyond it,
	// and turns a hang into a failure.
	conn.SetDeadline(time.Now().Add(time.Minute))
	const msg = "ping through sshd\n"
	if _, err := io.WriteString(conn, msg); err != nil {
		t.Fatalf("writing to the forwarded port: %v", err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatalf("reading the echo through the forwarded port: %v", err)
	}
	if string(got) != msg {
		t.Fatalf("echo %q, want %q", got, msg)
	}
}

// waitRefused polls until nothing listens on addr.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return
		}
		if err == nil {
			conn.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still not refusing connections after 10s (last: %v)", addr, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClients: a server of its own address takes the test's options over
// its defaults (a jump host that opens channels only to the next host and
// does no remote forwarding), and tells who holds each connection to it:
// the test for the outer host, the outer host's sshd for the inner one,
// which the outer host reaches through a direct-tcpip channel.
func TestClients(t *testing.T) {
	sshdtest.Require(t)
	keyPEM, pub := sshdtest.NewKey(t, "")
	key, err := ssh.ParsePrivateKey([]byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	inner := sshdtest.Start(t, sshdtest.Config{ListenAddress: "127.0.0.3", AuthorizedKeys: []ssh.PublicKey{pub}})
	outer := sshdtest.Start(t, sshdtest.Config{
		ListenAddress:  "127.0.0.2",
		AuthorizedKeys: []ssh.PublicKey{pub},
		Options:        []string{"AllowTcpForwarding local", "PermitOpen " + inner.Addr},
	})
	if want := "127.0.0.2:" + strconv.Itoa(outer.Port); outer.Addr != want {
		t.Fatalf("Addr %q, want %q", outer.Addr, want)
	}
	c := login(t, outer, "root", ssh.PublicKeys(key))
	if _, err := c.Listen("tcp", "127.0.0.1:0"); err == nil {
		t.Error("AllowTcpForwarding local: a remote forward was allowed")
	}
	if conn, err := c.Dial("tcp", "127.0.0.1:"+strconv.Itoa(inner.Port)); err == nil {
		conn.Close()
		t.Error("PermitOpen: a channel to another address was allowed")
	}
	through, err := c.Dial("tcp", inner.Addr)
	if err != nil {
		t.Fatalf("a channel to %s: %v", inner.Addr, err)
	}
	defer through.Close()
	sc, chans, reqs, err := ssh.NewClientConn(through, inner.Addr, &ssh.ClientConfig{
		User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(key)}, HostKeyCallback: ssh.FixedHostKey(inner.HostKey),
	})
	if err != nil {
		t.Fatalf("logging in to %s through %s: %v", inner.Addr, outer.Addr, err)
	}
	defer ssh.NewClient(sc, chans, reqs).Close()

	clients, err := outer.Clients()
	if err != nil {
		t.Fatal(err)
	}
	if len(clients) != 1 || clients[0] != os.Getpid() {
		t.Errorf("%s's clients: %v, want this test (%d)", outer.Addr, clients, os.Getpid())
	}
	clients, err = inner.Clients()
	if err != nil {
		t.Fatal(err)
	}
	if len(clients) != 1 || !outer.Holds(clients[0]) || inner.Holds(clients[0]) {
		t.Errorf("%s's clients: %v, want one process of %s's sshd (%d)", inner.Addr, clients, outer.Addr, outer.Pid())
	}
}
