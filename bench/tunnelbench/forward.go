package tunnelbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sshdeck/sshdeck/internal/gobuild"
	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/hosts"
)

// viaHost is the name the source is stored under as the bench user's host:
// the via host of `sshdeck forward`.
const viaHost = "source"

// sshdeckPackage is built by import path, not by directory, so that the
// bench builds it from wherever it runs in the module (its test runs in
// bench/tunnelbench).
const sshdeckPackage = "github.com/sshdeck/sshdeck/cmd/sshdeck"

// forwardPath is `sshdeck forward -L PORT:127.0.0.1:SP --via source`, the
// real binary as a process of its own, as on the user's machine: its
// connections ride one WebSocket over loopback HTTP to the in-process
// tunnel service, which opens each as a direct-tcpip channel of its SSH
// connection to the source, whose sshd connects to the echo. Its CPU is
// the service's share of this process and the forward process's.
func forwardPath(ctx context.Context, e *env, p *ports) (_ *path, err error) {
	bin := filepath.Join(e.dir, "sshdeck")
	if err := gobuild.Build(sshdeckPackage, bin, nil); err != nil {
		return nil, err
	}
	svc := hosts.NewService(e.store, e.store, e.sealer, nil)
	if _, err := svc.Create(ctx, e.owner, &hosts.Input{Name: viaHost, IP: "127.0.0.1", Port: &e.source.Port, Username: "root", Key: &e.keyPEM}); err != nil {
		return nil, fmt.Errorf("store the source as the via host: %w", err)
	}
	port, err := p.get()
	if err != nil {
		return nil, err
	}
	home := filepath.Join(e.dir, "forward-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	args := []string{"forward", "-L", fmt.Sprintf("%d:127.0.0.1:%d", port, e.echo.Port), "--via", viaHost}
	cmd := exec.Command(bin, args...)
	// A profile of its own, empty: the token and both URLs come from the
	// environment. The forward calls the tunnel service alone; the API's
	// URL is set only so that no default is taken.
	cmd.Env = []string{"HOME=" + home, "SSHDECK_CONFIG=" + filepath.Join(home, "config.json"),
		"SSHDECK_URL=" + e.url, "SSHDECK_TUNNEL_URL=" + e.url, "SSHDECK_TOKEN=" + e.token}
	stderr := &watchedOutput{want: "forwarding", seen: make(chan struct{})}
	cmd.Stderr = stderr
	c, err := startChild(cmd)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.stop()
			err = fmt.Errorf("sshdeck %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
		}
	}()
	// No deadline, as for ssh: the forward says "forwarding" once its
	// session is up, and exits if the service refuses it or cannot be
	// reached (each dial bounded by the client's own timeout).
	select {
	case <-stderr.seen:
	case <-c.exited:
		return nil, fmt.Errorf("exited before forwarding: %v", c.cmd.ProcessState)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// The service takes its connection to the via host at the forward's
	// first connection, not at the session's start: one round trip takes
	// it, so that sshd has logged it if it is new.
	if err := sshdtest.RoundTrip(port, 1); err != nil {
		return nil, fmt.Errorf("first connection: %w", err)
	}
	// It is not new here: the service's pool shares one connection
	// between a user's tunnels and forwards through the same host, the
	// same way, and the relay tunnel's to the source is up. So the cipher
	// checked is that of every connection this process made to the
	// source, one of which the forward rides.
	goConns := slices.DeleteFunc(negotiated(e.source.Log(), 0), func(n string) bool { return !strings.HasPrefix(n, "Go: ") })
	return &path{name: sshdeckForward, port: port, clientPids: descendants(c.cmd.Process.Pid), service: true,
		cipher: sameCipher, negotiated: goConns, stop: c.stop}, nil
}

// watchedOutput keeps what a process writes (a few lines: the forward
// says one per event) and closes seen once it holds want.
type watchedOutput struct {
	want string
	seen chan struct{}

	mu   sync.Mutex
	out  strings.Builder
	said bool
}

func (w *watchedOutput) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Write(b)
	if !w.said && strings.Contains(w.out.String(), w.want) {
		w.said = true
		close(w.seen)
	}
	return len(b), nil
}

func (w *watchedOutput) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}
