package tunnel_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// The counts of a tunnel's status (meter.go, metrics.go), checked through
// real tunnels between the sshd hosts of a World: the bytes carried each
// way, the connections open, the reconnects and the last failure, as the
// store holds them (any replica's answer) and as the replica's Metrics
// show them.

// answerer is the service behind a metered tunnel's source port: it reads
// what a connection sends until the client half-closes, then answers with
// more bytes than it got (answerSize), pseudo-random from their count,
// followed by the SHA-256 of what it got. The two directions carry
// different amounts, so that a counter of one direction counted as the
// other shows.
func startAnswerer(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				got := sha256.New()
				n, err := io.Copy(got, c)
				if err != nil {
					return
				}
				if _, err := io.Copy(c, randomBytes(n, answerSize(n))); err != nil {
					return
				}
				c.Write(got.Sum(nil))
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// answerSize is how many bytes the answerer sends back for n, its hash
// aside.
func answerSize(n int64) int64 { return 2*n + 13 }

// randomBytes returns n pseudo-random bytes of the stream seeded by seed.
func randomBytes(seed, n int64) io.Reader {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], uint64(seed))
	return io.LimitReader(rand.NewChaCha8(key), n)
}

// meteredConn is one client connection through the tunnel: it sends its
// bytes and holds the connection open until finish.
type meteredConn struct {
	c    net.Conn
	sent int64
	hash []byte
}

func openMetered(port int, sent int64) (*meteredConn, error) {
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	if _, err := io.Copy(c, io.TeeReader(randomBytes(-sent, sent), h)); err != nil {
		c.Close()
		return nil, fmt.Errorf("send %d bytes: %w", sent, err)
	}
	return &meteredConn{c: c, sent: sent, hash: h.Sum(nil)}, nil
}

// finish half-closes and checks the answer end to end: the answerer's
// bytes, and its hash of what it received.
func (mc *meteredConn) finish() error {
	defer mc.c.Close()
	if err := mc.c.(*net.TCPConn).CloseWrite(); err != nil {
		return err
	}
	answer, err := io.ReadAll(mc.c)
	if err != nil {
		return err
	}
	want, _ := io.ReadAll(randomBytes(mc.sent, answerSize(mc.sent)))
	switch {
	case int64(len(answer)) != answerSize(mc.sent)+sha256.Size:
		return fmt.Errorf("answered %d bytes for %d, want %d", len(answer), mc.sent, answerSize(mc.sent)+sha256.Size)
	case !bytes.Equal(answer[:len(want)], want):
		return errors.New("the answer came back different")
	case !bytes.Equal(answer[len(want):], mc.hash):
		return fmt.Errorf("the answerer received other bytes than the %d sent", mc.sent)
	}
	return nil
}

// deref is *p, or a zero T for nil, for messages.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// counted is the condition that a status's counts are these.
func counted(in, out int64, active int) func(tunnel.Status) bool {
	return func(st tunnel.Status) bool {
		return st.BytesIn != nil && *st.BytesIn == in && st.BytesOut != nil && *st.BytesOut == out &&
			st.ActiveConnections != nil && *st.ActiveConnections == active
	}
}

// onlyTunnel returns the one tunnel of m's Metrics.
func onlyTunnel(t *testing.T, m *tunnel.Manager) tunnel.TunnelMetrics {
	t.Helper()
	ms := m.Metrics().Tunnels
	if len(ms) != 1 {
		t.Fatalf("Metrics lists %d tunnels (%+v), want 1", len(ms), ms)
	}
	return ms[0]
}

// TestMetricsOfParallelConnections: 16 connections at once through a relay
// tunnel, each carrying its own number of random bytes each way, checked
// end to end. While all are open the status says 16 open; once they end,
// 0, and the bytes each way are exactly those carried. Then the
// endpoint's sshd is killed and started again: the tunnel recovers, with
// one reconnect, the failure's reason kept as lastError, a later
// connectedSince, and the bytes kept. A disconnect keeps the counts; a
// new connect request starts them over.
func TestMetricsOfParallelConnections(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	port := sshdtest.FreePort(t)
	req := w.Request("metered", port)
	req.SourcePort = tunneltest.Ptr(startAnswerer(t))
	req.MaxRetries = tunneltest.Ptr(1000)
	connect(t, m, req)
	first := waitFor(t, m, "metered", "connected", state(sshdeck.TunnelConnected))
	if !counted(0, 0, 0)(first) || first.Reconnects != 0 || first.LastError != nil || first.ConnectedSince == nil {
		t.Fatalf("a new tunnel's status %s: want 0 bytes and connections, no reconnect or error, connectedSince set", statusText(first))
	}

	const conns = 16
	var (
		mu                sync.Mutex
		open              []*meteredConn
		wantIn, wantOut   int64
		errs              = make(chan error, conns)
		opened, answering sync.WaitGroup
	)
	opened.Add(conns)
	for i := range conns {
		go func() {
			defer opened.Done()
			// Sizes across several SSH packets, none alike.
			mc, err := openMetered(port, int64(100<<10+i*4099+i*i))
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			open = append(open, mc)
			mu.Unlock()
		}()
	}
	opened.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, mc := range open {
		wantIn += mc.sent
		wantOut += answerSize(mc.sent) + sha256.Size
	}
	// Held open: all 16 at once, in the status (from the store, written
	// by a heartbeat) and in the replica's metrics.
	waitFor(t, m, "metered", "16 connections open", func(st tunnel.Status) bool {
		return st.ActiveConnections != nil && *st.ActiveConnections == conns
	})
	if got := onlyTunnel(t, m); got.ActiveConnections != conns || got.State != sshdeck.TunnelConnected {
		t.Errorf("metrics while 16 are open: %+v", got)
	}

	finished := make(chan error, conns)
	answering.Add(conns)
	for _, mc := range open {
		go func() {
			defer answering.Done()
			finished <- mc.finish()
		}()
	}
	answering.Wait()
	close(finished)
	for err := range finished {
		if err != nil {
			t.Error(err)
		}
	}
	done := waitFor(t, m, "metered", "every byte counted, none open", counted(wantIn, wantOut, 0))
	if done.Reconnects != 0 || done.LastError != nil {
		t.Errorf("status %s: no failure happened", statusText(done))
	}
	mt := m.Metrics()
	if got := onlyTunnel(t, m); got.BytesIn != wantIn || got.BytesOut != wantOut || got.ActiveConnections != 0 || got.Mode != sshdeck.TunnelRelay {
		t.Errorf("tunnel metrics %+v, want %d bytes in and %d out, none open", got, wantIn, wantOut)
	}
	if mt.BytesIn != wantIn || mt.BytesOut != wantOut || mt.Reconnects != 0 {
		t.Errorf("replica totals %d in, %d out, %d reconnects; want %d, %d, 0", mt.BytesIn, mt.BytesOut, mt.Reconnects, wantIn, wantOut)
	}

	// The endpoint dies and comes back: one reconnect.
	w.Endpoint.Kill()
	down := waitFor(t, m, "metered", "retrying or waiting", func(st tunnel.Status) bool {
		return st.Status == sshdeck.TunnelRetrying || st.Status == sshdeck.TunnelWaiting
	})
	if down.LastError == nil || *down.LastError == "" || down.ConnectedSince != nil {
		t.Errorf("status after the kill %s: want lastError set and no connectedSince", statusText(down))
	}
	w.Endpoint.Restart()
	again := waitFor(t, m, "metered", "connected again", state(sshdeck.TunnelConnected))
	switch {
	case again.Reconnects != 1:
		t.Errorf("reconnects %d, want 1", again.Reconnects)
	case again.LastError == nil || !strings.HasPrefix(*again.LastError, "endpoint "):
		t.Errorf("lastError %q, want the endpoint's failure kept", deref(again.LastError))
	case again.ConnectedSince == nil || !again.ConnectedSince.After(*first.ConnectedSince):
		t.Errorf("connectedSince %v, want later than the first connection's %v", deref(again.ConnectedSince), *first.ConnectedSince)
	case !counted(wantIn, wantOut, 0)(again):
		t.Errorf("after the reconnect: %d bytes in, %d out, %d open; want the %d and %d counted before, none open",
			deref(again.BytesIn), deref(again.BytesOut), deref(again.ActiveConnections), wantIn, wantOut)
	}
	if mt := m.Metrics(); mt.Reconnects != 1 {
		t.Errorf("replica totals: %d reconnects, want 1", mt.Reconnects)
	}
	// Carried again, and counted on from before.
	mc, err := openMetered(port, 777)
	if err == nil {
		err = mc.finish()
	}
	if err != nil {
		t.Fatal(err)
	}
	wantIn, wantOut = wantIn+777, wantOut+answerSize(777)+sha256.Size
	waitFor(t, m, "metered", "the connection after the reconnect counted", counted(wantIn, wantOut, 0))

	// A disconnect keeps the counts; a new connect request starts over.
	if err := m.Disconnect(context.Background(), owner, "metered", false); err != nil {
		t.Fatal(err)
	}
	stopped := waitFor(t, m, "metered", "disconnected", state(sshdeck.TunnelDisconnected))
	if !counted(wantIn, wantOut, 0)(stopped) || stopped.Reconnects != 1 || stopped.LastError == nil || stopped.ConnectedSince != nil || deref(stopped.ActiveConnections) != 0 {
		t.Errorf("disconnected: %s, want the counts kept, no connection", statusText(stopped))
	}
	connect(t, m, req)
	fresh := waitFor(t, m, "metered", "connected anew", state(sshdeck.TunnelConnected))
	if !counted(0, 0, 0)(fresh) || fresh.Reconnects != 0 || fresh.LastError != nil {
		t.Errorf("connected by a new request: %s, want every count at 0", statusText(fresh))
	}
}

// TestMetricsKeptByTakeover: an autoStart tunnel's counts belong to its
// generation, not to a replica: when its replica dies, the replica that
// takes it over goes on from the counts the store holds, and its first
// connection is a reconnect. That replica's own totals count only what it
// carried itself.
func TestMetricsKeptByTakeover(t *testing.T) {
	w := tunneltest.NewWorld(t)
	replicas := map[string]*tunnel.Manager{"a": w.Manager("a"), "b": w.Manager("b")}
	port := sshdtest.FreePort(t)
	req := w.Request("auto", port)
	req.SourcePort = tunneltest.Ptr(startAnswerer(t))
	req.AutoStart = true
	connect(t, replicas["a"], req)
	waitFor(t, replicas["b"], "auto", "connected (read through b)", state(sshdeck.TunnelConnected))
	// a took the request, but b's reconcile may have taken the lease
	// first: whichever runs it dies.
	running, other := replicas["a"], replicas["b"]
	if holder(t, w, "auto") == "b" {
		running, other = other, running
	}
	mc, err := openMetered(port, 5000)
	if err == nil {
		err = mc.finish()
	}
	if err != nil {
		t.Fatal(err)
	}
	in, out := int64(5000), answerSize(5000)+sha256.Size
	waitFor(t, other, "auto", "the counts in the store", counted(in, out, 0))

	running.Crash()
	sshdtest.WaitUntil(t, "the other replica taking the tunnel over", func() bool { return other.Running(owner, "auto") })
	st := waitFor(t, other, "auto", "connected again", state(sshdeck.TunnelConnected))
	if !counted(in, out, 0)(st) || st.Reconnects != 1 {
		t.Errorf("after the takeover: %s, want the %d bytes in and %d out kept, and 1 reconnect", statusText(st), in, out)
	}
	if got := onlyTunnel(t, other); got.BytesIn != in || got.BytesOut != out || got.Reconnects != 1 {
		t.Errorf("the new replica's metrics of the tunnel: %+v, want the generation's counts", got)
	}
	if mt := other.Metrics(); mt.BytesIn != 0 || mt.BytesOut != 0 || mt.Reconnects != 1 {
		t.Errorf("the new replica's totals: %d bytes in, %d out, %d reconnects; want only its own: 0, 0, 1", mt.BytesIn, mt.BytesOut, mt.Reconnects)
	}
}

// TestMetricsOfDirectTunnel: a direct tunnel's bytes never pass through
// the service: its status has no bytes or connections to show (null),
// and its reconnects and last failure are counted as a relay tunnel's.
func TestMetricsOfDirectTunnel(t *testing.T) {
	w := tunneltest.NewWorld(t)
	w.Mode = "direct"
	m := w.Manager("a")
	port := sshdtest.FreePort(t)
	req := w.Request("direct", port)
	req.MaxRetries = tunneltest.Ptr(1000)
	connect(t, m, req)
	st := waitFor(t, m, "direct", "connected", state(sshdeck.TunnelConnected))
	if err := sshdtest.RoundTrip(port, 64<<10); err != nil {
		t.Fatal(err)
	}
	if st.BytesIn != nil || st.BytesOut != nil || st.ActiveConnections != nil || st.ConnectedSince == nil {
		t.Errorf("direct tunnel's status %s: want null bytes and connections, connectedSince set", statusText(st))
	}
	w.Endpoint.Kill()
	waitFor(t, m, "direct", "failed over", func(st tunnel.Status) bool { return st.Status != sshdeck.TunnelConnected })
	w.Endpoint.Restart()
	st = waitFor(t, m, "direct", "connected again", state(sshdeck.TunnelConnected))
	if st.Reconnects != 1 || st.LastError == nil || st.BytesIn != nil {
		t.Errorf("after the endpoint's restart: %s, want 1 reconnect, lastError set, bytes null", statusText(st))
	}
	if got := onlyTunnel(t, m); got.Mode != sshdeck.TunnelDirect || got.BytesIn != 0 || got.Reconnects != 1 {
		t.Errorf("metrics of the direct tunnel: %+v", got)
	}
}
