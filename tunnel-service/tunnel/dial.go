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

// The roles of a tunnel's hops, which name them in messages and choose the
// denied ranges they are checked against.
const (
	roleSource   = "source"
	roleEndpoint = "endpoint"
)

// denyList is what the hops are checked against: the source, which the
// service dials itself, against AlwaysDeny and the deployment's ranges;
// the endpoint, which the source dials inside its own network, against
// AlwaysDeny only (the service's own VPC or loopback say nothing about the
// source's network).
type denyList struct {
	source, endpoint []netip.Prefix
}

func newDenyList(extra []netip.Prefix) denyList {
	return denyList{
		source:   append(slices.Clone(AlwaysDeny), extra...),
		endpoint: AlwaysDeny,
	}
}

func (l denyList) of(role string) []netip.Prefix {
	if role == roleSource {
		return l.source
	}
	return l.endpoint
}

// hop is one SSH host of a tunnel with its credentials.
type hop struct {
	sshdeck.TunnelHop
	creds sshdeck.Credentials
	role  string // "source" or "endpoint", for messages
}

func (h hop) addr() string { return net.JoinHostPort(h.IP, strconv.Itoa(h.SSHPort)) }

// dialer opens the SSH connections of tunnels.
type dialer struct {
	deny     denyList
	resolver *net.Resolver
	// timeout bounds each hop's TCP connection and SSH handshake.
	timeout time.Duration
	keys    *hostKeys
}

// link is a tunnel's two SSH connections; the endpoint's rides in a channel
// of the source's, whose requests are in hop.
type link struct {
	source, endpoint *sshConn
	hop              <-chan *ssh.Request
}

func (l *link) Close() {
	if l.endpoint != nil {
		l.endpoint.Close()
	}
	l.source.Close()
}

// dial connects to the source, then to the endpoint through the source.
func (d *dialer) dial(ctx context.Context, owner string, src, dst hop) (*link, error) {
	addr, err := d.resolve(ctx, src)
	if err != nil {
		return nil, err
	}
	conn, err := (&net.Dialer{Timeout: d.timeout}).DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return nil, d.dialFailure(ctx, err, src)
	}
	source, err := d.handshake(ctx, conn, owner, src, src.addr())
	if err != nil {
		return nil, err
	}
	l := &link{source: source}
	if addr, err = d.resolve(ctx, dst); err != nil {
		l.Close()
		return nil, err
	}
	var through *chanConn
	timedOut := d.bounded(ctx, source, func() {
		through, l.hop, err = openDirect(source, addr.Addr().String(), int(addr.Port()))
	})
	if timedOut {
		err = context.DeadlineExceeded
	}
	if err != nil {
		l.Close()
		return nil, d.dialFailure(ctx, err, dst)
	}
	if l.endpoint, err = d.handshake(ctx, through, owner, dst, endpointKnownAs(src, dst)); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// bounded runs f, which uses c, within the dial timeout and ctx. x/crypto/ssh
// takes no context, and the endpoint's conn (an SSH channel) has no
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

func (d *dialer) dialFailure(ctx context.Context, err error, h hop) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return asFailure(err, fmt.Sprintf("%s %s", h.role, h.addr()))
}

// resolve returns the address to dial for the hop: its name resolved here,
// so that the address checked against the denied ranges is the one dialled
// (the endpoint's too: the source is asked to connect to the address, not
// the name), in its canonical form (check.Canonical).
func (d *dialer) resolve(ctx context.Context, h hop) (netip.AddrPort, error) {
	addrs, err := d.lookup(ctx, h.IP)
	if err != nil {
		return netip.AddrPort{}, d.dialFailure(ctx, err, h)
	}
	if denied, ok := d.denied(addrs, h.role); ok {
		return netip.AddrPort{}, fail(sshdeck.TunnelErrForbidden, false, nil,
			"%s %s resolves to %s, in the denied range %s", h.role, h.addr(), denied.addr, denied.prefix)
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

// denied returns the first address in a range denied to the hop's role. A
// name is refused when any of its addresses is denied, whichever one a
// dial would pick. The addresses are canonical: netip.Prefix.Contains is
// false for a zoned or an IPv4-mapped address of the range.
func (d *dialer) denied(addrs []netip.Addr, role string) (deniedAddr, bool) {
	for _, a := range addrs {
		for _, p := range d.deny.of(role) {
			if p.Contains(a) {
				return deniedAddr{a, p}, true
			}
		}
	}
	return deniedAddr{}, false
}

// checkAllowed fails with Denied when host resolves into a denied range;
// the connect request answers it at once. A name that does not resolve
// passes: the tunnel reports that as a network failure and retries.
func (d *dialer) checkAllowed(ctx context.Context, field, host, role string) error {
	addrs, err := d.lookup(ctx, host)
	if err != nil {
		return nil
	}
	if denied, ok := d.denied(addrs, role); ok {
		return sshdeck.Errorf(sshdeck.Denied, "%s %s resolves to %s, in the denied range %s", field, host, denied.addr, denied.prefix)
	}
	return nil
}

// endpointKnownAs is the address under which the endpoint's host key is
// remembered (API.md: it belongs to the owner, the source, the endpoint's
// address and port): "10.0.0.5:22 via bastion.example.com:22". The same
// private address behind two sources is two hosts. The source's own key
// is remembered under its address alone.
func endpointKnownAs(src, dst hop) string {
	return dst.addr() + " via " + src.addr()
}

// handshake runs the SSH handshake on conn within the dial timeout; the
// host's key is checked against the key remembered under knownAs.
func (d *dialer) handshake(ctx context.Context, conn net.Conn, owner string, h hop, knownAs string) (*sshConn, error) {
	what := fmt.Sprintf("%s %s", h.role, h.addr())
	v := &verifier{keys: d.keys, ctx: ctx, owner: owner, addr: knownAs, pin: h.HostKey}
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
	var f *failure
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
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
func authMethods(h hop) ([]ssh.AuthMethod, error) {
	if h.Auth == sshdeck.AuthKey {
		signer, err := sshkey.Parse(h.creds.Key, h.creds.KeyPassword, h.KeyType)
		if err != nil {
			return nil, fail(sshdeck.TunnelErrAuthentication, false, err, "%s %s: %s", h.role, h.addr(), sshdeck.ErrorMessage(err))
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
