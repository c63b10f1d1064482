package tunnel_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/forwarding"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// Forwards to the user's machine (via.go): connections opened from a
// stored via host to targets, through the real OpenSSH hosts of a World.

func refusal(t *testing.T, err error, code string) {
	t.Helper()
	var r *forwarding.RefusedError
	if !errors.As(err, &r) || r.Code != code {
		t.Fatalf("error %v (%T), want a refusal %q", err, err, code)
	}
}

// TestVia: a forward's connections through a stored host reach targets
// behind it (the echo service on its loopback) with every byte, share one
// SSH connection to it, and each is refused with its own code when its
// target is denied, does not resolve, or refuses; the via host is the
// caller's only.
func TestVia(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	web := saveHost(t, hostsOf(w), owner, rootHost(w, "web", &w.Source.Port))
	ctx := context.Background()

	for _, ref := range []string{"nope", "999"} {
		if _, err := m.Via(ctx, owner, ref); sshdeck.ErrorCode(err) != sshdeck.NotFound || !strings.Contains(err.Error(), "via host") {
			t.Errorf("Via(%q) = %v, want NotFound naming the via host", ref, err)
		}
	}
	if _, err := m.Via(ctx, "usr_mallory", "web"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Errorf("another user's Via(web) = %v, want NotFound", err)
	}

	for _, ref := range []string{"web", strconv.FormatInt(web, 10)} {
		v, err := m.Via(ctx, owner, ref)
		if err != nil {
			t.Fatalf("Via(%q): %v", ref, err)
		}
		target := net.JoinHostPort("127.0.0.1", strconv.Itoa(w.EchoPort))
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Go(func() {
				conn, err := v.Dial(ctx, target)
				if err == nil {
					err = sshdtest.RoundTripConn(conn, 256<<10)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if clients, err := w.Source.Clients(); err != nil || len(clients) != 1 {
			t.Errorf("the via host's sshd has %d clients (%v), want the one shared connection", len(clients), err)
		}
		if n := m.Forwards(owner); n != 0 {
			t.Errorf("%d forwarded connections counted after all closed", n)
		}

		// localhost is resolved by the service and asked for as 127.0.0.1.
		conn, err := v.Dial(ctx, net.JoinHostPort("localhost", strconv.Itoa(w.EchoPort)))
		if err != nil {
			t.Fatalf("localhost: %v", err)
		}
		if err := sshdtest.RoundTripConn(conn, 1000); err != nil {
			t.Fatal(err)
		}

		_, err = v.Dial(ctx, "169.254.169.254:80")
		refusal(t, err, forwarding.CodeDenied)
		_, err = v.Dial(ctx, "[fe80::1%lo]:80")
		refusal(t, err, forwarding.CodeDenied)
		_, err = v.Dial(ctx, "no-such-host.invalid:80")
		refusal(t, err, forwarding.CodeUnresolvable)
		_, err = v.Dial(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(sshdtest.FreePort(t))))
		refusal(t, err, forwarding.CodeRefused)
		v.Close()
	}
	sshdtest.WaitUntil(t, "the via connection closed with its last forward", func() bool { return m.Conns() == 0 })

	if err := m.CheckTarget(ctx, "169.254.169.254:80"); sshdeck.ErrorCode(err) != sshdeck.Denied {
		t.Errorf("CheckTarget(metadata) = %v, want Denied", err)
	}
	if err := m.CheckTarget(ctx, "web:0"); sshdeck.ErrorCode(err) != sshdeck.Invalid {
		t.Errorf("CheckTarget(web:0) = %v, want Invalid", err)
	}
	if err := m.CheckTarget(ctx, "no-such-host.invalid:80"); err != nil {
		t.Errorf("CheckTarget(unresolvable) = %v, want nil: its connections say so", err)
	}
}

// TestViaLimits: an owner's forwarded connections and forwards are held
// to ForwardLimit on the replica; closing one frees its place, and
// another owner's are counted apart.
func TestViaLimits(t *testing.T) {
	w := tunneltest.NewWorld(t)
	opts := tunneltest.Options("a")
	opts.Hosts, opts.ForwardLimit = w.Hosts(), 2
	m := tunnel.NewManager(w.Store, w.Sealer, opts)
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	saveHost(t, hostsOf(w), owner, rootHost(w, "web", &w.Source.Port))
	saveHost(t, hostsOf(w), "usr_bob", rootHost(w, "web", &w.Source.Port))
	ctx := context.Background()
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(w.EchoPort))

	v, err := m.Via(ctx, owner, "web")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	a, err := v.Dial(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.Dial(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Dial(ctx, target)
	refusal(t, err, forwarding.CodeLimitExceeded)
	bob, err := m.Via(ctx, "usr_bob", "web")
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if c, err := bob.Dial(ctx, target); err != nil {
		t.Errorf("bob's connection refused while alice is at her limit: %v", err)
	} else {
		c.Close()
	}
	a.Close()
	a.Close() // twice: counted down once
	c, err := v.Dial(ctx, target)
	if err != nil {
		t.Fatalf("a connection after one closed: %v", err)
	}
	if err := sshdtest.RoundTripConn(c, 1000); err != nil {
		t.Fatal(err)
	}
	b.Close()

	second, err := m.Via(ctx, owner, "web")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Via(ctx, owner, "web"); sshdeck.ErrorCode(err) != sshdeck.LimitExceeded {
		t.Errorf("a third forward: %v, want LimitExceeded", err)
	}
	second.Close()
	second.Close()
	third, err := m.Via(ctx, owner, "web")
	if err != nil {
		t.Fatalf("a forward after one ended: %v", err)
	}
	third.Close()
}

// TestViaFollowsItsHost: the via host's sshd restarted under a forward (its
// next connection dials it again), and the host saved with another port
// (the next connection uses the new one), and deleted (refused, naming it).
func TestViaFollowsItsHost(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	svc := hostsOf(w)
	id := saveHost(t, svc, owner, rootHost(w, "web", &w.Source.Port))
	ctx := context.Background()
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(w.EchoPort))
	v, err := m.Via(ctx, owner, "web")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	through := func() error {
		conn, err := v.Dial(ctx, target)
		if err != nil {
			return err
		}
		return sshdtest.RoundTripConn(conn, 4096)
	}
	if err := through(); err != nil {
		t.Fatal(err)
	}

	w.Source.Restart()
	sshdtest.WaitUntil(t, "a connection through the restarted via host", func() bool { return through() == nil })

	update(t, svc, id, rootHost(w, "web", &w.Endpoint.Port))
	dials := m.Dials()
	if err := through(); err != nil {
		t.Fatal(err)
	}
	if m.Dials() != dials+1 {
		t.Errorf("%d dials after the host moved, want one more", m.Dials()-dials)
	}
	if clients, _ := w.Endpoint.Clients(); len(clients) != 1 {
		t.Errorf("the host's new sshd has %d clients, want 1", len(clients))
	}
	sshdtest.WaitUntil(t, "the old via connection let go", func() bool {
		clients, _ := w.Source.Clients()
		return len(clients) == 0
	})

	if err := svc.Delete(ctx, owner, id, nil); err != nil {
		t.Fatal(err)
	}
	err = through()
	refusal(t, err, forwarding.CodeUnreachable)
	if !strings.Contains(err.Error(), "not found") {
		t.Errorf("a deleted via host: %v, want it named", err)
	}
}

// TestViaThroughJumpHosts: a via host behind two stored jump hosts is
// reached through them, and its forwarded connections too.
func TestViaThroughJumpHosts(t *testing.T) {
	w := newChainWorld(t)
	c := saveChain(t, w)
	m := w.Manager("a")
	ctx := context.Background()
	v, err := m.Via(ctx, owner, strconv.FormatInt(c.source2, 10))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	// The echo service listens on 127.0.0.1, which the source (at
	// 127.0.0.5) reaches on the same loopback.
	conn, err := v.Dial(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(w.EchoPort)))
	if err != nil {
		t.Fatal(err)
	}
	if err := sshdtest.RoundTripConn(conn, 64<<10); err != nil {
		t.Fatal(err)
	}
	provePath(t, []*sshdtest.Server{w.jumps[0], w.jumps[1], w.source})
}
