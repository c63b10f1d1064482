package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/sshkey"
)

// DefaultDeny are the address ranges no tunnel dials unless a deployment
// says otherwise: link-local, where cloud metadata endpoints live.
var DefaultDeny = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
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
	deny     []netip.Prefix
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
	source, err := d.handshake(ctx, conn, owner, src)
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
	if l.endpoint, err = d.handshake(ctx, through, owner, dst); err != nil {
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
// the name).
func (d *dialer) resolve(ctx context.Context, h hop) (netip.AddrPort, error) {
	addrs, err := d.lookup(ctx, h.IP)
	if err != nil {
		return netip.AddrPort{}, d.dialFailure(ctx, err, h)
	}
	if denied, ok := d.denied(addrs); ok {
		return netip.AddrPort{}, fail(sshdeck.TunnelErrForbidden, false, nil,
			"%s %s resolves to %s, in the denied range %s", h.role, h.addr(), denied.addr, denied.prefix)
	}
	return netip.AddrPortFrom(addrs[0], uint16(h.SSHPort)), nil
}

func (d *dialer) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	addrs, err := d.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	for i := range addrs {
		addrs[i] = addrs[i].Unmap()
	}
	return addrs, nil
}

type deniedAddr struct {
	addr   netip.Addr
	prefix netip.Prefix
}

// denied returns the first address in a denied range. A name is refused
// when any of its addresses is denied, whichever one a dial would pick.
func (d *dialer) denied(addrs []netip.Addr) (deniedAddr, bool) {
	for _, a := range addrs {
		for _, p := range d.deny {
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
func (d *dialer) checkAllowed(ctx context.Context, field, host string) error {
	addrs, err := d.lookup(ctx, host)
	if err != nil {
		return nil
	}
	if denied, ok := d.denied(addrs); ok {
		return sshdeck.Errorf(sshdeck.Denied, "%s %s resolves to %s, in the denied range %s", field, host, denied.addr, denied.prefix)
	}
	return nil
}

// handshake runs the SSH handshake on conn within the dial timeout.
func (d *dialer) handshake(ctx context.Context, conn net.Conn, owner string, h hop) (*sshConn, error) {
	what := fmt.Sprintf("%s %s", h.role, h.addr())
	v := &verifier{keys: d.keys, ctx: ctx, owner: owner, addr: h.addr(), pin: h.HostKey}
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
