package main

// sshdeck forward -L|-D: forwards to the user's own machine through the
// tunnel service (client.Forward), as ssh -L and ssh -D are.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

func forwardCommand(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, f := newClientFlags("forward", stderr)
	defer func() { err = f.explain(err) }()
	local := fs.String("L", "", "[bind_address:]port:host:hostport: carry connections to the local port to host:hostport, reached from --via (ssh -L)")
	socks := fs.String("D", "", "[bind_address:]port: a SOCKS5 proxy on the local port whose connections are made from --via (ssh -D)")
	via := fs.String("via", "", "the stored host (id or name) the connections are made from")
	quiet := fs.Bool("q", false, "say nothing but errors")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	switch {
	case (*local == "") == (*socks == ""):
		return fmt.Errorf("%w: give one of -L [bind_address:]port:host:hostport and -D [bind_address:]port", errUsage)
	case *via == "":
		return fmt.Errorf("%w: --via HOST is required: the stored host (id or name) the connections are made from", errUsage)
	}
	var bind, target string
	if *local != "" {
		if bind, target, err = parseLocalForward(*local); err != nil {
			return fmt.Errorf("%w: -L %v", errUsage, err)
		}
	}
	c, err := clientFor(f.profileFlags)
	if err != nil {
		return err
	}
	say := func(msg string) {
		if !*quiet {
			fmt.Fprintln(stderr, "sshdeck:", msg)
		}
	}
	if *local != "" {
		return listenError(c.ForwardLocal(ctx, bind, target, *via, say))
	}
	return listenError(c.ForwardSOCKS(ctx, *socks, *via, say))
}

// parseLocalForward splits ssh's -L argument, [bind_address:]port:host:hostport,
// into the bind ([bind_address:]port) and the target (host:hostport). An
// IPv6 address is in brackets, as ssh takes it.
func parseLocalForward(spec string) (bind, target string, err error) {
	i := strings.LastIndex(spec, ":")
	if i < 0 {
		return "", "", fmt.Errorf("%q: want [bind_address:]port:host:hostport", spec)
	}
	rest, hostport := spec[:i], spec[i+1:]
	var host string
	if strings.HasSuffix(rest, "]") {
		open := strings.LastIndex(rest, "[")
		if open < 0 {
			return "", "", fmt.Errorf("%q: an unmatched ] in the host", spec)
		}
		host, rest = rest[open+1:len(rest)-1], strings.TrimSuffix(rest[:open], ":")
	} else {
		j := strings.LastIndex(rest, ":")
		if j < 0 {
			return "", "", fmt.Errorf("%q: want [bind_address:]port:host:hostport", spec)
		}
		host, rest = rest[j+1:], rest[:j]
	}
	if host == "" || hostport == "" || rest == "" {
		return "", "", fmt.Errorf("%q: want [bind_address:]port:host:hostport", spec)
	}
	return rest, net.JoinHostPort(host, hostport), nil
}

// listenError says in one line that the local port is taken, rather than
// the listener's error chain.
func listenError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "listen" {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("cannot listen on %s: the address is in use (is another forward running?)", op.Addr)
		}
		return fmt.Errorf("cannot listen on %s: %v", op.Addr, op.Err)
	}
	return err
}
