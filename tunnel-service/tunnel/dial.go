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

// dialer opens the SSH connections of tunnels, one hop at a time: the
// pool (pool.go) asks it for each connection that no tunnel shares yet.
type dialer struct {
	deny     denyList
	resolver *net.Resolver
	// timeout bounds each hop's TCP connection and SSH handshake.
	timeout time.Duration
	keys    *hostKeys
}

// dialed is one hop's new SSH connection with what it rides on: its
// transport (watched, so that a break of it is known before anything
// inside ends: chain.go) and, for a relayed hop, the requests of the
// channel of the hop before it that carries it.
type dialed struct {
	conn      *sshConn
	transport *watchedConn
	carried   <-chan *ssh.Request
}

// dial connects to h at addr (resolve's answer): over TCP when parent is
// nil (the first hop, which the service dials itself), else through a
// direct-tcpip channel of parent's connection; then the SSH handshake.
func (d *dialer) dial(ctx context.Context, owner string, parent *node, h *hop, addr netip.AddrPort) (*dialed, error) {
	var (
		conn    net.Conn
		carried <-chan *ssh.Request
		err     error
	)
	if parent == nil {
		conn, err = d.connect(ctx, h, addr)
	} else {
		conn, carried, err = d.open(ctx, parent, h, addr)
	}
	if err != nil {
		return nil, d.broke(ctx, err, parent)
	}
	w := &watchedConn{Conn: conn}
	c, err := d.handshake(ctx, w, owner, h)
	if err != nil {
		return nil, d.broke(ctx, err, parent)
	}
	return &dialed{conn: c, transport: w, carried: carried}, nil
}

// broke is why a dial through parent failed with err: a hop on the way
// whose connection broke (or was found dead) rather than what that did to
// the hop beyond it.
func (d *dialer) broke(ctx context.Context, err error, parent *node) error {
	if ctx.Err() != nil {
		return err
	}
	if f := parent.broken(); f != nil {
		return f
	}
	return err
}

// connect makes the TCP connection to the first hop, which the service
// dials itself.
func (d *dialer) connect(ctx context.Context, h *hop, addr netip.AddrPort) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: d.timeout}).DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return nil, d.dialFailure(ctx, err, h)
	}
	return conn, nil
}

// open asks parent, the connection of the hop before h, to connect to h,
// and returns the channel as h's connection, with the channel's requests.
func (d *dialer) open(ctx context.Context, parent *node, h *hop, addr netip.AddrPort) (net.Conn, <-chan *ssh.Request, error) {
	var (
		through *chanConn
		reqs    <-chan *ssh.Request
		err     error
	)
	// On a timeout the channel open is abandoned, not parent's
	// connection, which other tunnels may ride: its late answer (a
	// channel nobody wants) is closed when it comes.
	answer := make(chan opened, 1)
	go func() {
		c, reqs, err := openDirect(parent.conn, addr.Addr().String(), int(addr.Port()))
		answer <- opened{c, reqs, err}
	}()
	timer := time.NewTimer(d.timeout)
	select {
	case a := <-answer:
		through, reqs, err = a.c, a.reqs, a.err
	case <-timer.C:
		err = context.DeadlineExceeded
		go closeLate(answer)
	case <-ctx.Done():
		err = ctx.Err()
		go closeLate(answer)
	}
	timer.Stop()
	var refused *ssh.OpenChannelError
	switch {
	case err == nil:
		return through, reqs, nil
	case ctx.Err() == nil && errors.As(err, &refused):
		who := "the source host"
		if parent.jump > 0 {
			who = fmt.Sprintf("jump host %d", parent.jump)
		}
		return nil, nil, fail(sshdeck.TunnelErrNetwork, true, err, "%s: %s could not connect to it (%s)", h.name, who, refused.Reason)
	}
	return nil, nil, d.dialFailure(ctx, err, h)
}

// closeLate closes the channel of an open that was given up on, once its
// answer comes (parent's connection ending answers it too).
func closeLate(answer <-chan opened) {
	if a := <-answer; a.c != nil {
		a.c.Close()
	}
}

// opened is the answer to a direct-tcpip channel open.
type opened struct {
	c    *chanConn
	reqs <-chan *ssh.Request
	err  error
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
