package tunnelapi

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// The tests of what keeps one user from exhausting the tunnel service
// (API.md, "Limits, paging and tenancy"): the tunnel limit, DELETE, and
// the status streams' limit, token recheck, life and shared reading.

func (e *apiEnv) deleteTunnel(token, name string) *apiResponse {
	return e.do("DELETE", "/ssh/tunnel/"+url.PathEscape(name), token, "", nil)
}

func TestAPITunnelLimit(t *testing.T) {
	e := newAPIEnv(t, apiSetup{options: func(o *tunnel.Options) { o.TunnelLimit = 3 }})
	for _, name := range []string{"a", "b", "c"} {
		e.connect(e.alice, e.tunnelBody(name))
	}
	r := e.send("POST", "/ssh/tunnel/connect", e.alice, e.tunnelBody("d"))
	r.wantError(t, http.StatusConflict, sshdeck.LimitExceeded, "3 tunnels", "SSHDECK_LIMIT_TUNNELS")
	// Connecting again with an existing name is no new tunnel.
	e.connect(e.alice, e.tunnelBody("b"))
	// Bob's limit is his own.
	e.connect(e.bob, e.tunnelBody("d"))

	// A delete makes room.
	if r := e.deleteTunnel(e.alice, "c"); r.status != http.StatusOK || string(r.body) != `{"message":"Tunnel deleted"}`+"\n" {
		t.Fatalf("DELETE c: %d %s", r.status, r.body)
	}
	e.connect(e.alice, e.tunnelBody("d"))
	e.send("POST", "/ssh/tunnel/connect", e.alice, e.tunnelBody("e")).wantError(t, http.StatusConflict, sshdeck.LimitExceeded)
	if got := len(e.statuses(e.alice)); got != 3 {
		t.Errorf("alice has %d tunnels, want 3", got)
	}

	// Concurrent connects of new names never pass the limit.
	const tries = 12
	codes := make([]int, tries)
	var wg sync.WaitGroup
	bodies := make([]map[string]any, tries)
	for i := range tries {
		bodies[i] = e.tunnelBody(fmt.Sprintf("carol-%d", i))
	}
	for i := range tries {
		wg.Go(func() { codes[i] = e.send("POST", "/ssh/tunnel/connect", e.carol, bodies[i]).status })
	}
	wg.Wait()
	ok := 0
	for i, code := range codes {
		switch code {
		case http.StatusOK:
			ok++
		case http.StatusConflict:
		default:
			t.Errorf("concurrent connect %d: %d", i, code)
		}
	}
	if got := len(e.statuses(e.carol)); ok != 3 || got != 3 {
		t.Errorf("%d of %d concurrent connects succeeded and carol has %d tunnels; want 3 and 3", ok, tries, got)
	}
}

func TestTunnelLimitDefault(t *testing.T) {
	o := tunnel.OptionsFrom(config.Config{Limits: config.DefaultLimits})
	if o.TunnelLimit != 64 || o.StreamLimit != 4 {
		t.Errorf("options from the default limits: tunnels %d, streams %d; want 64 and 4", o.TunnelLimit, o.StreamLimit)
	}
}

func TestAPIDelete(t *testing.T) {
	e := newAPIEnv(t, apiSetup{})
	e.deleteTunnel(e.alice, "nope").wantError(t, http.StatusNotFound, sshdeck.NotFound, "nope")

	// A tunnel whose source holds its connection: it stays connecting,
	// running here, until the delete stops it (and the service closes
	// the connection).
	sourcePort, held := holdingListener(t)
	e.connect(e.alice, withFields(e.tunnelBody("a/b c"), "sourceSSHPort", sourcePort, "maxRetries", 3, "retryInterval", 1000))
	var conn net.Conn
	select {
	case c := <-held:
		conn = c
	case <-time.After(sshdtest.WaitPatience): // a protocol wait
		t.Fatal("the tunnel never dialled its source")
	}
	stream, _ := e.openStream(e.alice)
	if st := stream.next(t); st.Name != "a/b c" {
		t.Fatalf("stream: %+v", st)
	}
	e.connect(e.bob, e.tunnelBody("a/b c"))
	// Another user's tunnel is none of the caller's.
	e.deleteTunnel(e.carol, "a/b c").wantError(t, http.StatusNotFound, sshdeck.NotFound)

	if r := e.deleteTunnel(e.alice, "a/b c"); r.status != http.StatusOK || string(r.body) != `{"message":"Tunnel deleted"}`+"\n" {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	// Stopped: the service hung up on the source (what it sent before,
	// its SSH version line, read to the end).
	conn.SetReadDeadline(time.Now().Add(sshdtest.WaitPatience))
	if _, err := io.ReadAll(conn); err != nil {
		t.Errorf("the source's connection after the delete: %v, want it closed", err)
	}
	// Forgotten: record, lease and sealed credentials are one record.
	if _, err := e.store.Tunnel(context.Background(), e.aliceID, "a/b c"); sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Errorf("stored tunnel after the delete: %v", err)
	}
	e.get(apiStatusPath("a/b c"), e.alice).wantError(t, http.StatusNotFound, sshdeck.NotFound)
	e.deleteTunnel(e.alice, "a/b c").wantError(t, http.StatusNotFound, sshdeck.NotFound)
	if _, ok := e.statuses(e.bob)["a/b c"]; !ok {
		t.Error("bob's tunnel of the same name went too")
	}
	// The stream says it is gone.
	select {
	case ev, ok := <-stream.events:
		if !ok || ev.event != "deleted" || ev.data != `{"name":"a/b c"}` {
			t.Errorf("stream after the delete: %+v (open %v), want a deleted event", ev, ok)
		}
	case <-time.After(sshdtest.WaitPatience):
		t.Error("no deleted event")
	}
}

func TestAPIStreamLimit(t *testing.T) {
	e := newAPIEnv(t, apiSetup{}) // the default limit: 4
	var closers []func()
	for range 4 {
		_, stop := e.openStream(e.alice)
		closers = append(closers, stop)
	}
	e.get("/ssh/tunnel/status/stream", e.alice).wantError(t, http.StatusTooManyRequests, sshdeck.RateLimited, "4", "SSHDECK_LIMIT_STREAMS")
	// Another user's streams are their own.
	e.openStream(e.bob)
	// A stream closed frees its place.
	closers[0]()
	waitUntil(t, "alice's closed stream to end", func() bool { return e.manager.Streams(e.aliceID) == 3 })
	e.openStream(e.alice)
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(sshdtest.WaitPatience)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", sshdtest.WaitPatience, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAPIStreamEndsWhenTokenRevoked revokes a stream's token in the store
// itself, as another process does (the CLI against DynamoDB, another
// replica), bypassing this server's authenticator and its cache: the
// stream ends within 35 s (here within its recheck, 200 ms, and a
// protocol wait at worst), and reconnecting is 401.
func TestAPIStreamEndsWhenTokenRevoked(t *testing.T) {
	e := newAPIEnv(t, apiSetup{streamRecheck: 200 * time.Millisecond})
	token, tok, err := e.admin.CreateToken(context.Background(), "alice", "stream", 0)
	if err != nil {
		t.Fatal(err)
	}
	e.connect(e.alice, e.tunnelBody("x"))
	stream, _ := e.openStream(token)
	keep, _ := e.openStream(e.alice) // another token of alice's: it stays
	stream.next(t)
	e.get("/ssh/tunnel/status", token) // the token is in the cache now
	revoked := time.Now()
	if _, err := e.store.RevokeToken(context.Background(), tok.ID, revoked); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stream.done:
		if took := time.Since(revoked); took > 35*time.Second {
			t.Errorf("the stream ended %v after the revocation, want within 35 s", took)
		}
	case <-time.After(35 * time.Second):
		t.Fatal("the stream of a revoked token is still open after 35 s")
	}
	e.get("/ssh/tunnel/status/stream", token).wantError(t, http.StatusUnauthorized, sshdeck.Unauthorized)
	select {
	case <-keep.done:
		t.Error("the stream of alice's other token ended too")
	case <-time.After(500 * time.Millisecond):
	}
}

func TestStreamRecheckDefault(t *testing.T) {
	if DefaultStreamRecheck > 30*time.Second || DefaultStreamRecheck <= 0 {
		t.Errorf("DefaultStreamRecheck is %v, want at most 30 s", DefaultStreamRecheck)
	}
	if DefaultStreamMaxAge != time.Hour {
		t.Errorf("DefaultStreamMaxAge is %v, want 1 h", DefaultStreamMaxAge)
	}
	for _, cfg := range []Config{{}, {StreamRecheck: time.Minute}, {StreamRecheck: -1}} {
		if recheck, maxAge := streamSettings(cfg); recheck != DefaultStreamRecheck || maxAge != DefaultStreamMaxAge {
			t.Errorf("Config %+v: recheck %v and life %v, want the defaults", cfg, recheck, maxAge)
		}
	}
}

func TestAPIStreamMaxAge(t *testing.T) {
	e := newAPIEnv(t, apiSetup{streamMaxAge: 300 * time.Millisecond})
	stream, _ := e.openStream(e.alice)
	select {
	case <-stream.done:
	case <-time.After(sshdtest.WaitPatience):
		t.Fatal("the stream outlived its life of 300 ms")
	}
	waitUntil(t, "the ended stream to free its place", func() bool { return e.manager.Streams(e.aliceID) == 0 })
}

// countingStore counts the reads of an owner's tunnels: what a status
// stream costs the store.
type countingStore struct {
	sshdeck.TunnelStore
	reads atomic.Int64
}

func (c *countingStore) Tunnels(ctx context.Context, owner string) ([]*sshdeck.Tunnel, error) {
	c.reads.Add(1)
	return c.TunnelStore.Tunnels(ctx, owner)
}

// TestAPIStreamsShareOneReading opens 200 status streams of one user (its
// limit raised for the test) and counts the store's reads of its tunnels
// over a second of polls (every 100 ms) and a change: what one stream
// costs, not 200 times it.
func TestAPIStreamsShareOneReading(t *testing.T) {
	const streams = 200
	var counter *countingStore
	e := newAPIEnv(t, apiSetup{
		options: func(o *tunnel.Options) { o.StreamLimit = streams },
		wrap: func(s sshdeck.TunnelStore) sshdeck.TunnelStore {
			counter = &countingStore{TunnelStore: s}
			return counter
		},
	})
	e.connect(e.alice, e.tunnelBody("a"))
	e.waitStatus(e.alice, "a", "failed", func(st tunnel.Status) bool { return st.Status == sshdeck.TunnelFailed })

	// reads counts the reads over a window with one change made here.
	reads := func(open []*sseStream, change string) int64 {
		t.Helper()
		counter.reads.Store(0)
		e.connect(e.alice, e.tunnelBody(change))
		for _, s := range open {
			for st := s.next(t); st.Name != change; st = s.next(t) {
			}
		}
		time.Sleep(time.Second) // ten polls
		return counter.reads.Load()
	}
	one, closeOne := e.openStream(e.alice)
	one.next(t)
	single := reads([]*sseStream{one}, "b")
	closeOne()
	waitUntil(t, "the stream to end", func() bool { return e.manager.Streams(e.aliceID) == 0 })

	var open []*sseStream
	for range streams {
		s, _ := e.openStream(e.alice)
		open = append(open, s)
	}
	for _, s := range open {
		for range 2 { // a and b
			s.next(t)
		}
	}
	many := reads(open, "c")
	t.Logf("store reads of alice's tunnels over 1 s and a change: %d with 1 stream, %d with %d streams", single, many, streams)
	// The window's reads depend on timing (ten polls, the change's wake-up,
	// the wait for the streams): a few either way, never 200 times.
	if many > single+5 || many > 20 {
		t.Errorf("%d streams read the store %d times, one stream %d times", streams, many, single)
	}
	if got := e.manager.Streams(e.aliceID); got != streams {
		t.Errorf("%d streams counted, want %d", got, streams)
	}
}
