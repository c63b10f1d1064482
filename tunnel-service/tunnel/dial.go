package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/sshkey"
)

// AlwaysDeny are the address ranges no hop of a tunnel is ever in,
// whatever a deployment configures (API.md, operation 1): link-local, where
// cloud metadata endpoints live; unspecified, which reaches the dialler's
// own host; multicast and broadcast; and AWS's IPv6 metadata and DNS range.
var AlwaysDeny = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("ff00::/8"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("fd00:ec2::/32"),
}

// denyList is what the hops are checked against, by who dials them. A hop
// the service dials itself (the first jump host, or the source when there
// is none) is checked against AlwaysDeny and the deployment's ranges. A hop
// that the hop before it dials, inside that hop's own network (every later
// jump host, a source behind jump hosts, the endpoint), is checked against
// AlwaysDeny only: the service's own VPC or loopback say nothing about
// that network, and are what the deployment's ranges protect.
type denyList struct {
	direct, relayed []netip.Prefix
}

func newDenyList(extra []netip.Prefix) denyList {
	return denyList{
		direct:  append(slices.Clone(AlwaysDeny), extra...),
		relayed: AlwaysDeny,
	}
}

func (l denyList) of(relayed bool) []netip.Prefix {
	if relayed {
		return l.relayed
	}
	return l.direct
}

// hop is one SSH host of a tunnel's path with its credentials.
type hop struct {
	sshdeck.TunnelHop
	creds sshdeck.Credentials
	// jump is the hop's place among the jump hosts, from 1; 0 for the
	// source and the endpoint.
	jump int
	// name is how messages name it: "jump host 2 (10.0.0.7:22 via
	// bastion.example.com:22)", "source 10.0.0.9:22", "endpoint 10.0.0.5:22".
	name string
	// knownAs is where its host key is remembered (newPath).
	knownAs string
	// relayed: the hop before it dials it, not the service (denyList).
	relayed bool
}

func (h *hop) addr() string { return net.JoinHostPort(h.IP, strconv.Itoa(h.SSHPort)) }

// newPath returns the hops of a tunnel in the order they are dialled:
// its jump hosts, first hop first, then the source, then the endpoint,
// each after the first reached through a channel of the one before it.
//
// A hop's host key is remembered under its address and the path it is
// reached through: "10.0.0.7:22 via 10.0.0.5:22 via bastion:22". API.md
// says an endpoint's key belongs to the owner, the source, and the
// endpoint's address and port; every hop's belongs likewise to the hops
// before it, so that the same private address behind two paths is two
// hosts.
// The first hop is remembered under its address alone. A tunnel without
// jump hosts thus remembers its source as "<source>" and its endpoint as
// "<endpoint> via <source>", as it always did: no remembered key changes
// meaning.
func newPath(spec *sshdeck.TunnelSpec, creds *sshdeck.TunnelCredentials) []hop {
	path := make([]hop, 0, len(spec.Jumps)+2)
	add := func(h sshdeck.TunnelHop, c sshdeck.Credentials, jump int) *hop {
		p := hop{TunnelHop: h, creds: c, jump: jump}
		p.knownAs = p.addr()
		if n := len(path); n > 0 {
			p.knownAs += " via " + path[n-1].knownAs
			p.relayed = true
		}
		path = append(path, p)
		return &path[len(path)-1]
	}
	for i, h := range spec.Jumps {
		var c sshdeck.Credentials
		if i < len(creds.Jumps) {
			c = creds.Jumps[i]
		}
		p := add(h, c, i+1)
		p.name = fmt.Sprintf("jump host %d (%s)", i+1, p.knownAs)
	}
	src := add(spec.Source, creds.Source, 0)
	src.name = "source " + src.addr()
	dst := add(spec.Endpoint, creds.Endpoint, 0)
	dst.name = "endpoint " + dst.addr()
	return path
}

// dialer opens the SSH connections of tunnels.
type dialer struct {
	deny     denyList
	resolver *net.Resolver
	// timeout bounds each hop's TCP connection and SSH handshake.
	timeout time.Duration
	keys    *hostKeys
}

// link is a tunnel's SSH connections: the source's, and the endpoint's,
// which rides in a channel of the source's whose requests are in hop. A
// source reached through jump hosts has them in its Conn (chained: the
// source's connection with its chain), so that a tunnel without any costs
// what it always did.
type link struct {
	source, endpoint *sshConn
	hop              <-chan *ssh.Request
}

// Close closes the connections from the innermost outwards: the
// endpoint's, the source's, then its jump hosts' (chained.Close).
func (l *link) Close() {
	if l.endpoint != nil {
		l.endpoint.Close()
	}
	l.source.Close()
}

// chain returns the source's jump hosts, nil when it has none.
func (l *link) chain() *chained {
	ch, _ := l.source.Conn.(*chained)
	return ch
}

// ended is why the tunnel is down once c's connection ended: the
// outermost jump host whose connection broke, when one did (every
// connection inside it ends with it, in whatever order the tunnel's loop
// sees them), else c's own end.
func (l *link) ended(c *sshConn) *failure {
	if f := l.chain().broken(); f != nil {
		return f
	}
	return c.ended()
}

// failed is ended for a failure met on a connection (a keepalive's
// answer).
func (l *link) failed(err error) *failure {
	if f := l.chain().broken(); f != nil {
		return f
	}
	return asFailure(err, "tunnel")
}

// dial connects to every hop of the path (newPath) in turn: the first over
// TCP, each later one through a direct-tcpip channel of the one before it,
// the endpoint last, through the source.
func (d *dialer) dial(ctx context.Context, owner string, path []hop) (*link, error) {
	jumps := len(path) - 2
	var ch *chained
	if jumps > 0 {
		ch = &chained{jumps: make([]jump, jumps)}
	}
	var (
		prev    *sshConn            // the last hop connected
		carried <-chan *ssh.Request // the requests of the channel the hop rides in
		err     error
	)
	for i := range path {
		h := &path[i]
		var conn net.Conn
		if i == 0 {
			conn, err = d.connect(ctx, h)
		} else {
			conn, carried, err = d.open(ctx, prev, &path[i-1], h)
		}
		if err == nil && i <= jumps && ch != nil {
			w := &watchedConn{Conn: conn}
			if i < jumps {
				ch.jumps[i].transport = w
			} else {
				ch.source, ch.sourceWhat = w, h.name
			}
			conn = w
		}
		var c *sshConn
		if err == nil {
			c, err = d.handshake(ctx, conn, owner, h)
		}
		if err != nil {
			return nil, d.broke(ctx, err, ch, prev, i == jumps+1)
		}
		if i > 0 && i <= jumps {
			ch.jumps[i-1].next = carried // the channel of the hop before, which serves it
		}
		switch {
		case i < jumps:
			ch.jumps[i].c = c
		case i == jumps && ch != nil: // the source, with its chain
			ch.Conn, c.Conn = c.Conn, ch
			ch.serve()
		case i == jumps+1:
			return &link{source: prev, endpoint: c, hop: carried}, nil
		}
		prev = c
	}
	panic("unreachable: a path ends with the endpoint")
}

// broke closes what a dial that failed with err had opened, from the
// innermost outwards: the source when it was up (with its chain), else the
// jump hosts. A jump host whose connection broke is why the dial failed,
// rather than what failed on the hop beyond it.
func (d *dialer) broke(ctx context.Context, err error, ch *chained, prev *sshConn, sourceUp bool) error {
	f := ch.broken()
	if sourceUp {
		prev.Close()
	} else if ch != nil {
		ch.Close()
	}
	if f != nil && ctx.Err() == nil {
		return f
	}
	return err
}

// connect makes the TCP connection to the first hop, which the service
// dials itself.
func (d *dialer) connect(ctx context.Context, h *hop) (net.Conn, error) {
	addr, err := d.resolve(ctx, h)
	if err != nil {
		return nil, err
	}
	conn, err := (&net.Dialer{Timeout: d.timeout}).DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return nil, d.dialFailure(ctx, err, h)
	}
	return conn, nil
}

// open asks c, the connection of the hop before h (opener), to connect to
// h, and returns the channel as h's connection, with the channel's
// requests.
func (d *dialer) open(ctx context.Context, c *sshConn, opener, h *hop) (net.Conn, <-chan *ssh.Request, error) {
	addr, err := d.resolve(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	var (
		through *chanConn
		reqs    <-chan *ssh.Request
	)
	timedOut := d.bounded(ctx, c, func() {
		through, reqs, err = openDirect(c, addr.Addr().String(), int(addr.Port()))
	})
	if timedOut {
		err = context.DeadlineExceeded
	}
	var refused *ssh.OpenChannelError
	switch {
	case err == nil:
		return through, reqs, nil
	case ctx.Err() == nil && errors.As(err, &refused):
		who := "the source host"
		if opener.jump > 0 {
			who = fmt.Sprintf("jump host %d", opener.jump)
		}
		return nil, nil, fail(sshdeck.TunnelErrNetwork, true, err, "%s: %s could not connect to it (%s)", h.name, who, refused.Reason)
	}
	return nil, nil, d.dialFailure(ctx, err, h)
}

// bounded runs f, which uses c, within the dial timeout and ctx. x/crypto/ssh
// takes no context, and a relayed hop's conn (an SSH channel) has no
// deadlines: closing c is what interrupts f. It reports whether the
// timeout did.
func (d *dialer) bounded(ctx context.Context, c io.Closer, f func()) (timedOut bool) {
	var expired atomic.Bool
	timer := time.AfterFunc(d.timeout, func() { expired.Store(true); c.Close() })
	stop := context.AfterFunc(ctx, func() { c.Close() })
	f()
	timer.Stop()
	stop()
	return expired.Load()
}

func (d *dialer) dialFailure(ctx context.Context, err error, h *hop) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return asFailure(err, h.name)
}

// resolve returns the address to dial for the hop: its name resolved here,
// so that the address checked against the denied ranges is the one dialled
// (the endpoint's too: the source is asked to connect to the address, not
// the name), in its canonical form (check.Canonical).
func (d *dialer) resolve(ctx context.Context, h *hop) (netip.AddrPort, error) {
	addrs, err := d.lookup(ctx, h.IP)
	if err != nil {
		return netip.AddrPort{}, d.dialFailure(ctx, err, h)
	}
	if denied, ok := d.denied(addrs, h.relayed); ok {
		return netip.AddrPort{}, fail(sshdeck.TunnelErrForbidden, false, nil,
			"%s resolves to %s, in the denied range %s", h.name, denied.addr, denied.prefix)
	}
	return netip.AddrPortFrom(addrs[0], uint16(h.SSHPort)), nil
}

// lookup returns the canonical addresses of host: the one it spells
// (check.CanonicalIP: a literal, or an IPv4 address in a spelling an ssh
// client's resolver takes), else those its name resolves to.
func (d *dialer) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, ok := check.CanonicalIP(host); ok {
		return []netip.Addr{a}, nil
	}
	addrs, err := d.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	for i := range addrs {
		addrs[i] = check.Canonical(addrs[i])
	}
	return addrs, nil
}

type deniedAddr struct {
	addr   netip.Addr
	prefix netip.Prefix
}

// denied returns the first address in a range denied to a hop dialled by
// the service (relayed false) or by the hop before it (relayed true). A
// name is refused when any of its addresses is denied, whichever one a
// dial would pick. The addresses are canonical: netip.Prefix.Contains is
// false for a zoned or an IPv4-mapped address of the range.
func (d *dialer) denied(addrs []netip.Addr, relayed bool) (deniedAddr, bool) {
	for _, a := range addrs {
		for _, p := range d.deny.of(relayed) {
			if p.Contains(a) {
				return deniedAddr{a, p}, true
			}
		}
	}
	return deniedAddr{}, false
}

// checkAllowed fails with Denied when host, dialled by the service
// (relayed false) or by the hop before it, resolves into a range denied to
// it; the connect request answers it at once. A name that does not resolve
// passes: the tunnel reports that as a network failure and retries.
func (d *dialer) checkAllowed(ctx context.Context, field, host string, relayed bool) error {
	addrs, err := d.lookup(ctx, host)
	if err != nil {
		return nil
	}
	if denied, ok := d.denied(addrs, relayed); ok {
		return sshdeck.Errorf(sshdeck.Denied, "%s %s resolves to %s, in the denied range %s", field, host, denied.addr, denied.prefix)
	}
	return nil
}

// handshake runs the SSH handshake on conn within the dial timeout; the
// host's key is checked against the key remembered under its knownAs.
func (d *dialer) handshake(ctx context.Context, conn net.Conn, owner string, h *hop) (*sshConn, error) {
	what := h.name
	v := &verifier{keys: d.keys, ctx: ctx, owner: owner, addr: h.knownAs, pin: h.HostKey}
	algorithms, err := v.prepare()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: read its known host key: %w", what, err)
	}
	auth, err := authMethods(h)
	if err != nil {
		conn.Close()
		return nil, err
	}
	cfg := &ssh.ClientConfig{
		User:              h.Username,
		Auth:              auth,
		HostKeyCallback:   v.callback,
		HostKeyAlgorithms: algorithms,
	}
	var (
		c     ssh.Conn
		chans <-chan ssh.NewChannel
		reqs  <-chan *ssh.Request
	)
	timedOut := d.bounded(ctx, conn, func() {
		c, chans, reqs, err = ssh.NewClientConn(conn, h.addr(), cfg)
	})
	if err == nil {
		return &sshConn{Conn: c, chans: chans, reqs: reqs, what: what}, nil
	}
	conn.Close()
	var (
		f        *failure
		mismatch *keyMismatch
	)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &mismatch):
		// The source and the endpoint as their keys are known (the
		// endpoint with its source); a jump host by its name, which
		// holds as much.
		if h.jump > 0 {
			return nil, mismatch.failure(h.name)
		}
		return nil, mismatch.failure(h.knownAs)
	case errors.As(err, &f):
		return nil, f
	case timedOut:
		return nil, fail(sshdeck.TunnelErrTimeout, true, err, "%s: no SSH handshake within %s", what, d.timeout)
	case !v.checked.Load() || isNetwork(err):
		return nil, asFailure(err, what)
	}
	// The host's key was accepted and the connection did not break: the
	// server refused every way we offered to log in.
	return nil, fail(sshdeck.TunnelErrAuthentication, false, err, "%s refused the %s login of %q", what, h.Auth, h.Username)
}

// authMethods returns how to log in to the hop: its key, or its password
// (offered as keyboard-interactive too, which PAM servers ask for).
func authMethods(h *hop) ([]ssh.AuthMethod, error) {
	if h.Auth == sshdeck.AuthKey {
		signer, err := sshkey.Parse(h.creds.Key, h.creds.KeyPassword, h.KeyType)
		if err != nil {
			return nil, fail(sshdeck.TunnelErrAuthentication, false, err, "%s: %s", h.name, sshdeck.ErrorMessage(err))
		}
		return []ssh.AuthMethod{ssh.PublicKeys(signer)}, nil
	}
	password := h.creds.Password
	return []ssh.AuthMethod{
		ssh.Password(password),
		ssh.KeyboardInteractive(func(_, _ string, questions []string, _ []bool) ([]string, error) {
			answers := make([]string, len(questions))
			for i := range answers {
				answers[i] = password
			}
			return answers, nil
		}),
	}, nil
}
