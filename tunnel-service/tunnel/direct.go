package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/sshkey"
)

// A direct tunnel ("mode": "direct") runs OpenSSH's own client on its
// source, `ssh -N -R 127.0.0.1:endpointPort:127.0.0.1:sourcePort`, in an
// exec session of the service's (shared) connection to the source, so that
// the bytes go source → endpoint on one hop and never through the service,
// which only supervises: the client's end is the tunnel's failure, read
// from what the client said (directfail.go).
//
// Before each start the service checks the endpoint's host key itself,
// through a direct-tcpip channel of the source's connection (probe): pins
// and the first key remembered as in relay mode, under the same name. The
// client is then given that key alone (directcmd.go). Its login uses no
// secret on the source: a key through the service's agent (agent.go), a
// password typed into its prompt on the session's pty (prompt.go).
//
// The session always has a pty: when the session ends, whoever ends it
// (the service, or a break of the source's connection), sshd hangs the pty
// up and the client with it, so that no client outlives its tunnel.

// direct is a direct tunnel's running client.
type direct struct {
	node     *node // the source's connection
	ch       ssh.Channel
	endpoint string // how messages name the endpoint: hop.name
	out      *clientOutput
	done     chan struct{} // closed once the client's session ended or the connection did

	exitMu sync.Mutex
	exit   clientExit
	ended  chan struct{} // closed once the session closed
}

// ptyRequest is the payload of a pty-req (RFC 4254 6.2): a dumb terminal,
// no modes (the client sets its own for its prompt).
type ptyRequest struct {
	Term          string
	Columns, Rows uint32
	Width, Height uint32
	Modes         string
}

// startTimeout bounds a client's start, from the exec to the forward up:
// its connection (ConnectTimeout, the dial timeout), login and forward.
func startTimeout(dial time.Duration) time.Duration { return 3*dial + 5*time.Second }

// connectDirect acquires the source's connection, checks the endpoint's
// host key, and starts the client; it returns once the forward is up.
func (r *runner) connectDirect(ctx context.Context, spec *sshdeck.TunnelSpec, creds *sshdeck.TunnelCredentials) (link, *failure) {
	path := newPath(spec, creds)
	ep := path[len(path)-1]
	n, err := r.pool.acquire(ctx, r.owner, path[:len(path)-1])
	if err != nil {
		return nil, asFailure(err, "tunnel")
	}
	d, f := r.startClient(ctx, n, &ep)
	if f != nil {
		r.pool.release(n)
		return nil, f
	}
	return d, nil
}

func (r *runner) startClient(ctx context.Context, n *node, ep *hop) (*direct, *failure) {
	dl := r.pool.dialer
	addr, err := dl.resolve(ctx, ep)
	if err != nil {
		return nil, asFailure(err, ep.name)
	}
	key, err := probeHostKey(ctx, dl, r.owner, n, ep, addr)
	if err != nil {
		return nil, asFailure(err, ep.name)
	}
	a := &directArgs{
		host: addr.Addr().String(), port: int(addr.Port()), user: ep.Username,
		password: ep.Auth == sshdeck.AuthPassword, hostKey: key,
		endpointPort: r.spec.EndpointPort, sourcePort: r.spec.SourcePort,
		keepalive: r.pool.keepalive, misses: r.pool.misses, timeout: dl.timeout,
	}
	var held *keyAgent
	if !a.password {
		signer, err := sshkey.Parse(ep.creds.Key, ep.creds.KeyPassword, ep.KeyType)
		if err != nil {
			return nil, fail(sshdeck.TunnelErrAuthentication, false, err, "%s: %s", ep.name, sshdeck.ErrorMessage(err))
		}
		// The key is offered for this client's login alone.
		if held, err = n.agent.take(ctx, signer); err != nil {
			return nil, asFailure(err, ep.name)
		}
		defer n.agent.give(held)
	}
	d, f := start(n, ep, a)
	if f != nil {
		return nil, f
	}
	timer := time.NewTimer(startTimeout(dl.timeout))
	defer timer.Stop()
	select {
	case <-d.out.up:
		return d, nil
	case <-d.out.refused:
		d.kill()
		return nil, fail(sshdeck.TunnelErrAuthentication, false, nil, "%s refused the password login of %q", ep.name, ep.Username)
	case <-d.done:
		return nil, d.cause()
	case <-timer.C:
		d.kill()
		f := fail(sshdeck.TunnelErrTimeout, true, nil, "%s: ssh on the source did not set up the forward within %s", ep.name, startTimeout(dl.timeout))
		if lines := d.out.last(); len(lines) > 0 {
			f.msg += "; its last words: " + clip(lines[len(lines)-1])
		}
		return nil, f
	case <-ctx.Done():
		d.kill()
		return nil, fail(sshdeck.TunnelErrUnknown, false, ctx.Err(), "stopped")
	}
}

// start opens the client's session on n and runs it.
func start(n *node, ep *hop, a *directArgs) (*direct, *failure) {
	what := n.what
	ch, reqs, err := n.conn.OpenChannel("session", nil)
	if err != nil {
		return nil, asFailure(err, what+": open a session")
	}
	d := &direct{node: n, ch: ch, endpoint: ep.name, done: make(chan struct{}), ended: make(chan struct{}), exit: clientExit{status: -1}}
	d.out = newClientOutput(ch, a, ep.creds.Password)
	go d.serve(reqs)
	if !a.password {
		ok, err := ch.SendRequest("auth-agent-req@openssh.com", true, nil)
		if err != nil {
			d.kill()
			return nil, asFailure(err, what)
		}
		// sshd grants one agent per connection, to its first session;
		// later sessions share it (agent.go).
		if ok {
			n.agent.granted.Store(true)
		} else if !n.agent.granted.Load() {
			d.kill()
			return nil, fail(sshdeck.TunnelErrAuthentication, false, nil,
				"%s refused agent forwarding, which a direct tunnel's key login needs (sshd's AllowAgentForwarding)", what)
		}
	}
	ok, err := ch.SendRequest("pty-req", true, ssh.Marshal(&ptyRequest{Term: "dumb", Columns: 200, Rows: 24, Modes: "\x00"}))
	if err == nil && !ok {
		err = errors.New("pty refused")
	}
	if err != nil {
		d.kill()
		return nil, fail(sshdeck.TunnelErrUnknown, false, err, "%s refused a pty, which a direct tunnel needs (sshd's PermitTTY)", what)
	}
	ok, err = ch.SendRequest("exec", true, ssh.Marshal(&struct{ Command string }{a.command()}))
	if err == nil && !ok {
		err = errors.New("exec refused")
	}
	if err != nil {
		d.kill()
		return nil, fail(sshdeck.TunnelErrUnknown, false, err, "%s refused to run ssh (exec)", what)
	}
	return d, nil
}

// serve reads the session until it ends: its output (the pty's, and
// stderr, which a pty leaves empty) into out, its requests for the exit.
func (d *direct) serve(reqs <-chan *ssh.Request) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { io.Copy(d.out, d.ch); wg.Done() }()
	go func() { io.Copy(d.out, d.ch.Stderr()); wg.Done() }()
	go func() {
		for r := range reqs {
			d.request(r)
		}
		wg.Wait()
		close(d.ended)
	}()
	go func() {
		select {
		case <-d.ended:
		case <-d.node.done:
		}
		close(d.done)
	}()
}

func (d *direct) request(r *ssh.Request) {
	d.exitMu.Lock()
	switch r.Type {
	case "exit-status":
		var p struct{ Status uint32 }
		if ssh.Unmarshal(r.Payload, &p) == nil {
			d.exit.status = int(p.Status)
		}
	case "exit-signal":
		var p struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}
		if ssh.Unmarshal(r.Payload, &p) == nil {
			d.exit.signal = p.Signal
		}
	}
	d.exitMu.Unlock()
	if r.WantReply {
		r.Reply(false, nil)
	}
}

func (d *direct) down() <-chan struct{} { return d.done }

// cause is why the client ended: the source's connection, when it broke
// (the client went with it), else what the client said.
func (d *direct) cause() *failure {
	select {
	case <-d.node.done:
		return d.node.cause()
	default:
	}
	if f := d.node.broken(); f != nil {
		return f
	}
	d.exitMu.Lock()
	exit := d.exit
	d.exitMu.Unlock()
	return clientFailure(d.endpoint, exit, d.out.last())
}

// stop ends the client and lets go of the source's connection.
func (d *direct) stop(p *pool) {
	d.kill()
	p.release(d.node)
}

// killTimeout bounds the wait for the session's close after the client
// was told to end.
const killTimeout = 5 * time.Second

// kill ends the client: a TERM signal (sshd delivers it to the session's
// process, the client, since the command execs it), then the session's
// close, which hangs up its pty: either ends it. It waits for the session
// to close, so that the endpoint's port is free before a redial.
func (d *direct) kill() {
	d.ch.SendRequest("signal", false, ssh.Marshal(&struct{ Signal string }{"TERM"}))
	d.ch.Close()
	t := time.NewTimer(killTimeout)
	select {
	case <-d.ended:
	case <-d.node.done:
	case <-t.C:
	}
	t.Stop()
}

// probeHostKey checks the endpoint's host key as relay mode does (pins,
// the first key remembered, under the same name), over a direct-tcpip
// channel from the source: an SSH handshake that stops once the key is
// checked. It returns the key, which the client is then given.
func probeHostKey(ctx context.Context, dl *dialer, owner string, n *node, ep *hop, addr netip.AddrPort) (ssh.PublicKey, error) {
	conn, _, err := dl.open(ctx, n, ep, addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	v := &verifier{keys: dl.keys, ctx: ctx, owner: owner, addr: ep.knownAs, pin: ep.HostKey}
	algorithms, err := v.prepare()
	if err != nil {
		return nil, fmt.Errorf("%s: read its known host key: %w", ep.name, err)
	}
	var key ssh.PublicKey
	cfg := &ssh.ClientConfig{
		User:              ep.Username,
		HostKeyAlgorithms: algorithms,
		HostKeyCallback: func(host string, remote net.Addr, k ssh.PublicKey) error {
			if err := v.callback(host, remote, k); err != nil {
				return err
			}
			key = k
			return errProbed
		},
	}
	timedOut := dl.bounded(ctx, conn, func() {
		_, _, _, err = ssh.NewClientConn(conn, ep.addr(), cfg)
	})
	var mismatch *keyMismatch
	switch {
	case key != nil:
		return key, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &mismatch):
		return nil, mismatch.failure(ep.knownAs)
	case timedOut:
		return nil, fail(sshdeck.TunnelErrTimeout, true, err, "%s: no SSH handshake within %s", ep.name, dl.timeout)
	}
	if f := n.broken(); f != nil {
		return nil, f
	}
	return nil, asFailure(err, ep.name)
}

// errProbed ends a probe's handshake once the key is checked: it logs in
// to nothing.
var errProbed = errors.New("host key checked")
