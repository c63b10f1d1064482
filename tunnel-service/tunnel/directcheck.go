package tunnel

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strconv"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// A direct tunnel's connect request is answered after a short check of its
// source, over the source's connection: can it run the client at all? A
// source that cannot is a 400 naming what is missing, rather than a tunnel
// that fails forever. A source that cannot be reached or logged in to now
// passes: the tunnel says so, and retries, as in relay mode.

// minOpenSSH is the oldest client with every option directcmd.go uses:
// KnownHostsCommand came in OpenSSH 8.5.
var minOpenSSH = [2]int{8, 5}

// checkCommand prints the client's version (ssh -V writes it to stderr),
// and fails (126) without the echo that prints the endpoint's key to it.
const checkCommand = "ssh -V || exit; test -x /bin/echo || exit 126"

var openSSHVersion = regexp.MustCompile(`OpenSSH_(\d+)\.(\d+)`)

// checkDirect runs checkCommand on the source of spec.
func (m *Manager) checkDirect(ctx context.Context, owner string, spec *sshdeck.TunnelSpec, creds *sshdeck.TunnelCredentials) error {
	ctx, cancel := context.WithTimeout(ctx, 2*m.opts.DialTimeout)
	defer cancel()
	path := newPath(spec, creds)
	n, err := m.pool.acquire(ctx, owner, path[:len(path)-1])
	if err != nil {
		return nil // the tunnel's attempts say why
	}
	defer m.pool.release(n)
	source := n.what
	ch, reqs, err := n.conn.OpenChannel("session", nil)
	if err != nil {
		var refused *ssh.OpenChannelError
		if errors.As(err, &refused) {
			return check.Invalid("mode direct: %s refused a session (%s), in which the service runs ssh", source, refused.Reason)
		}
		return nil
	}
	defer ch.Close()
	var out bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		status := -1
		for r := range reqs {
			var p struct{ Status uint32 }
			if r.Type == "exit-status" && ssh.Unmarshal(r.Payload, &p) == nil {
				status = int(p.Status)
			}
			if r.WantReply {
				r.Reply(false, nil)
			}
		}
		exit <- status
	}()
	ok, err := ch.SendRequest("exec", true, ssh.Marshal(&struct{ Command string }{checkCommand}))
	if err != nil {
		return nil
	}
	if !ok {
		return check.Invalid("mode direct: %s refused to run a command (exec), which a direct tunnel needs", source)
	}
	read := make(chan struct{})
	go func() {
		// What ssh -V and the shell say fits in a few hundred bytes.
		var stdout, stderr bytes.Buffer
		done := make(chan struct{})
		go func() { stdout.ReadFrom(ch); close(done) }()
		stderr.ReadFrom(ch.Stderr())
		<-done
		out.Write(stderr.Bytes())
		out.Write(stdout.Bytes())
		close(read)
	}()
	var status int
	select {
	case status = <-exit:
	case <-ctx.Done():
		return nil
	}
	select {
	case <-read:
	case <-time.After(time.Second):
		return nil
	}
	v := openSSHVersion.FindSubmatch(out.Bytes())
	switch {
	case status == 127 || (v == nil && bytes.Contains(out.Bytes(), []byte("not found"))):
		return check.Invalid("mode direct: %s has no ssh command on its user's PATH: a direct tunnel runs OpenSSH's client (%d.%d or later) there", source, minOpenSSH[0], minOpenSSH[1])
	case v == nil:
		said, _, _ := bytes.Cut(bytes.TrimSpace(out.Bytes()), []byte("\n"))
		return check.Invalid("mode direct: %s did not run OpenSSH's client, which a direct tunnel runs: ssh -V named no OpenSSH version (exit status %d, %q)", source, status, clip(string(said)))
	}
	major, _ := strconv.Atoi(string(v[1]))
	minor, _ := strconv.Atoi(string(v[2]))
	if major < minOpenSSH[0] || major == minOpenSSH[0] && minor < minOpenSSH[1] {
		return check.Invalid("mode direct: %s has OpenSSH %d.%d, older than the %d.%d a direct tunnel needs (KnownHostsCommand)", source, major, minor, minOpenSSH[0], minOpenSSH[1])
	}
	if status == 126 {
		return check.Invalid("mode direct: %s has no /bin/echo, which prints the endpoint's host key to ssh (KnownHostsCommand)", source)
	}
	return nil
}
