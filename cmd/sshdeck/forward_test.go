package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/client"
	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/accounts"
	"github.com/sshdeck/sshdeck/shared/hosts"
)

// End-to-end tests of `sshdeck forward -L/-D`: the real binary serving
// (sshdeck serve) and forwarding (sshdeck forward), a real sshd as the via
// host, and services behind it on loopback, which the forwards reach
// through the via host.

// forwardWorld is a running serve with the host "bastion" (a real sshd,
// logged in to as root with a key), an echo service and a web page behind
// it, and the environment of the client commands with the admin's token.
type forwardWorld struct {
	srv              *server
	dir              string
	addr, tunnelAddr string
	token            string
	env              []string
	sshd             *sshdtest.Server
	echoPort         int
	webURL           string // http://localhost:PORT/: resolved by the service
}

const pageText = "a page behind the bastion"

func newForwardWorld(t *testing.T) *forwardWorld {
	t.Helper()
	sshdtest.Require(t)
	key, pub := sshdtest.NewKey(t, "")
	w := &forwardWorld{
		dir:        t.TempDir(),
		addr:       fmt.Sprintf("127.0.0.1:%d", sshdtest.FreePort(t)),
		tunnelAddr: fmt.Sprintf("127.0.0.1:%d", sshdtest.FreePort(t)),
		sshd:       sshdtest.Start(t, sshdtest.Config{AuthorizedKeys: []ssh.PublicKey{pub}}),
		echoPort:   sshdtest.StartEcho(t),
	}
	page := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, pageText) }))
	t.Cleanup(page.Close)
	w.webURL = "http://localhost:" + page.URL[strings.LastIndex(page.URL, ":")+1:] + "/"
	w.srv = serveAt(t, w.dir, w.addr, w.tunnelAddr)
	w.token = w.srv.bootstrapToken(t)
	c := &client.Client{BaseURL: w.srv.url, TunnelURL: w.srv.tunnelURL, Token: w.token}
	if _, err := c.CreateHost(context.Background(), &hosts.Input{Name: "bastion", IP: "127.0.0.1", Port: &w.sshd.Port, Username: "root", Key: &key}); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	w.env = append(clientEnv(home, filepath.Join(home, "config.json")),
		"SSHDECK_URL="+w.srv.url, "SSHDECK_TUNNEL_URL="+w.srv.tunnelURL, "SSHDECK_TOKEN="+w.token)
	return w
}

// restart stops serve and starts it again on the same addresses and data.
func (w *forwardWorld) restart(t *testing.T) {
	t.Helper()
	if err := w.srv.stop(t); err != nil {
		t.Fatalf("serve's exit: %v", err)
	}
	w.srv = serveAt(t, w.dir, w.addr, w.tunnelAddr)
}

// forwardProc is a running `sshdeck forward`, and what it says.
type forwardProc struct {
	cmd   *exec.Cmd
	lines chan string
	mu    sync.Mutex
	said  []string
}

// startForward runs sshdeck forward with args and waits until it says it
// forwards: readiness is that line, and the process exiting ends the wait.
func (w *forwardWorld) startForward(t *testing.T, args ...string) *forwardProc {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"forward"}, args...)...)
	cmd.Env = w.env
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	p := &forwardProc{cmd: cmd, lines: make(chan string, 1000)}
	go func() {
		for line := range lines(stderr) {
			p.mu.Lock()
			p.said = append(p.said, line)
			p.mu.Unlock()
			p.lines <- line
		}
		close(p.lines)
	}()
	p.await(t, "sshdeck: forwarding ")
	return p
}

// await waits for a line holding text, failing if the forward exits
// first, or says nothing of it within sshdtest's patience.
func (p *forwardProc) await(t *testing.T, text string) string {
	t.Helper()
	deadline := time.After(sshdtest.WaitPatience)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("sshdeck forward exited before saying %q; it said:\n%s", text, p.output())
			}
			if strings.Contains(line, text) {
				return line
			}
		case <-deadline:
			t.Fatalf("sshdeck forward never said %q; it said:\n%s", text, p.output())
		}
	}
}

func (p *forwardProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.said, "\n")
}

// socksConnect asks the SOCKS5 proxy at proxy to connect to host:port
// (the name unresolved, as curl --socks5-hostname does) and returns its
// reply code, and the connection when it succeeded.
func socksConnect(t *testing.T, proxy, host string, port int) (byte, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(sshdtest.WaitPatience))
	req := append([]byte{5, 1, 0, 5, 1, 0, 3, byte(len(host))}, host...)
	req = append(req, byte(port>>8), byte(port))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var answer [2 + 10]byte
	if _, err := io.ReadFull(c, answer[:]); err != nil {
		t.Fatalf("SOCKS reply for %s: %v", host, err)
	}
	if answer[0] != 5 || answer[1] != 0 || answer[2] != 5 {
		t.Fatalf("SOCKS answer % x", answer)
	}
	c.SetDeadline(time.Time{})
	if answer[3] != 0 {
		c.Close()
		return answer[3], nil
	}
	return 0, c
}

func freeAddr(t *testing.T) string {
	return "127.0.0.1:" + strconv.Itoa(sshdtest.FreePort(t))
}

// TestForwardLocalAndSOCKS: -L carries 100 parallel connections to the
// echo service behind the via host with every byte; -D is a SOCKS5 proxy
// that curl reaches a web page through by name, whose every connection to
// a denied target is refused with the SOCKS code that says so (not
// allowed), and to a name that does not resolve (host unreachable).
func TestForwardLocalAndSOCKS(t *testing.T) {
	w := newForwardWorld(t)
	local := sshdtest.FreePort(t)
	w.startForward(t, "-L", fmt.Sprintf("%d:127.0.0.1:%d", local, w.echoPort), "--via", "bastion")
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			if err := sshdtest.RoundTrip(local, int64(64<<10+i*1024)); err != nil {
				errs <- fmt.Errorf("connection %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if clients, err := w.sshd.Clients(); err != nil || len(clients) != 1 {
		t.Errorf("the bastion's sshd has %d clients (%v): want the service's one connection", len(clients), err)
	}

	proxy := freeAddr(t)
	socks := w.startForward(t, "-D", proxy, "--via", "bastion")
	out, err := exec.Command("curl", "-fsS", "--max-time", "60", "--socks5-hostname", proxy, w.webURL).CombinedOutput()
	if err != nil || string(out) != pageText {
		t.Fatalf("curl through -D: %v: %s", err, out)
	}
	// Each connection is checked: the same denied target twice.
	for range 2 {
		if rep, _ := socksConnect(t, proxy, "169.254.169.254", 80); rep != 2 {
			t.Errorf("a denied target: SOCKS reply %d, want 2 (not allowed by ruleset)", rep)
		}
		socks.await(t, "169.254.169.254:80: refused: 169.254.169.254:80 resolves to 169.254.169.254, in the denied range 169.254.0.0/16")
	}
	if rep, _ := socksConnect(t, proxy, "no-such-host.invalid", 80); rep != 4 {
		t.Errorf("an unresolvable target: SOCKS reply %d, want 4 (host unreachable)", rep)
	}
	if err := exec.Command("curl", "-sS", "--max-time", "60", "--socks5-hostname", proxy, "http://169.254.169.254/").Run(); err == nil {
		t.Error("curl reached a denied target through -D")
	}
}

// TestForwardSurvivesServiceRestart: serve stops under an open forward. A
// connection in flight ends (cleanly: its reader sees the end, no hang),
// the forward says it reconnects, and once serve is back a new connection
// goes through.
func TestForwardSurvivesServiceRestart(t *testing.T) {
	w := newForwardWorld(t)
	local := sshdtest.FreePort(t)
	fwd := w.startForward(t, "-L", fmt.Sprintf("%d:127.0.0.1:%d", local, w.echoPort), "--via", "bastion")
	inFlight, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
	if err != nil {
		t.Fatal(err)
	}
	defer inFlight.Close()
	if _, err := inFlight.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	var buf [4]byte
	if _, err := io.ReadFull(inFlight, buf[:]); err != nil || string(buf[:]) != "ping" {
		t.Fatalf("the connection before the restart: %q %v", buf, err)
	}

	w.restart(t)
	fwd.await(t, "connection to the tunnel service lost; reconnecting")
	inFlight.SetReadDeadline(time.Now().Add(sshdtest.WaitPatience))
	if _, err := inFlight.Read(buf[:]); err == nil {
		t.Error("the connection in flight read data after the service stopped")
	} else if os.IsTimeout(err) {
		t.Error("the connection in flight hangs after the service stopped")
	}
	fwd.await(t, "reconnected")
	if err := sshdtest.RoundTrip(local, 256<<10); err != nil {
		t.Fatalf("a connection after the restart: %v", err)
	}
}

// TestForwardRefusals: what the user gets wrong is one line on stderr and
// a non-zero exit, not a hang: an unknown via host, a denied -L target, a
// local port in use, a revoked token, a malformed -L.
func TestForwardRefusals(t *testing.T) {
	w := newForwardWorld(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := strconv.Itoa(sshdtest.FreePort(t))

	revoked := w.env[:len(w.env):len(w.env)]
	c := &client.Client{BaseURL: w.srv.url, Token: w.token}
	tok, err := c.CreateToken(context.Background(), accounts.NewToken{Name: "short-lived"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteToken(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	revoked = append(revoked, "SSHDECK_TOKEN="+tok.Token)

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unknown via", w.env, []string{"-L", port + ":127.0.0.1:80", "--via", "nosuch"}, `via host "nosuch": no host of yours has this name or id`},
		{"denied target", w.env, []string{"-L", port + ":169.254.169.254:80", "--via", "bastion"}, "in the denied range 169.254.0.0/16"},
		{"port in use", w.env, []string{"-D", busy.Addr().String(), "--via", "bastion"}, "the address is in use"},
		{"revoked token", revoked, []string{"-D", port, "--via", "bastion"}, "SSHDECK_TOKEN is expired or revoked"},
		{"malformed -L", w.env, []string{"-L", port + ":nohostport", "--via", "bastion"}, "want [bind_address:]port:host:hostport"},
	} {
		cmd := exec.Command(binary, append([]string{"forward"}, tc.args...)...)
		cmd.Env = tc.env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); exitCode(err) < 1 {
			t.Errorf("%s: %v, want a non-zero exit", tc.name, err)
		}
		var said []string
		for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			// A usage error prints the usage too, under its banner.
			if strings.HasPrefix(line, "sshdeck: ") && !strings.HasPrefix(line, "sshdeck: a control plane") {
				said = append(said, line)
			}
		}
		if len(said) != 1 || !strings.Contains(said[0], tc.want) {
			t.Errorf("%s: said %q, want one line saying %q", tc.name, said, tc.want)
		}
	}
}

// exitCode is the exit status of a command that exited, -1 for any other
// error, 0 for none.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return -1
}
