package forwarding_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/forwarding"
)

// echoServer is the address of an echo service (sshdtest.StartEcho).
func echoServer(t *testing.T) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sshdtest.StartEcho(t)))
}

// service serves forwards over a real WebSocket, opening each connection
// with a plain TCP dial, refusing targets named "denied.test".
func service(t testing.TB) (url string, closeAll func()) {
	t.Helper()
	dial := func(ctx context.Context, target string) (net.Conn, error) {
		if strings.HasPrefix(target, "denied.test:") {
			return nil, forwarding.Refused(forwarding.CodeDenied, "%s is denied", target)
		}
		return (&net.Dialer{}).DialContext(ctx, "tcp", target)
	}
	var mu sync.Mutex
	var conns []net.Conn
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := forwarding.Accept(r.Context(), w, r)
		if err != nil {
			return
		}
		mu.Lock()
		conns = append(conns, conn)
		mu.Unlock()
		forwarding.Serve(r.Context(), conn, dial, slog.New(slog.DiscardHandler))
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + forwarding.Path, func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
}

func dial(t testing.TB, url string) *forwarding.Session {
	t.Helper()
	s, _, err := forwarding.Dial(context.Background(), nil, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestParallelConnectionsCarryEveryByte(t *testing.T) {
	url, _ := service(t)
	s := dial(t, url)
	target := echoServer(t)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := s.Open(context.Background(), target)
			if err != nil {
				t.Error(err)
				return
			}
			if err := sshdtest.RoundTripConn(c, int64(64<<10+i)); err != nil {
				t.Errorf("connection %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
}

func TestRefusals(t *testing.T) {
	url, _ := service(t)
	s := dial(t, url)
	for target, code := range map[string]string{
		"denied.test:80":  forwarding.CodeDenied,
		"no-port":         forwarding.CodeInvalid,
		"127.0.0.1:70000": forwarding.CodeInvalid,
	} {
		_, err := s.Open(context.Background(), target)
		var refused *forwarding.RefusedError
		if !errors.As(err, &refused) || refused.Code != code {
			t.Errorf("%s: %v, want a refusal %q", target, err, code)
		}
	}
	// The session carries on after refusals.
	c, err := s.Open(context.Background(), echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestSessionEnds(t *testing.T) {
	url, closeAll := service(t)
	s := dial(t, url)
	target := echoServer(t)
	c, err := s.Open(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	closeAll()
	<-s.Done()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("a connection of an ended session still reads")
	}
	if _, err := s.Open(context.Background(), target); !errors.Is(err, forwarding.ErrSessionClosed) {
		t.Errorf("open on an ended session: %v, want ErrSessionClosed", err)
	}
}

func TestSplitTarget(t *testing.T) {
	for in, ok := range map[string]bool{
		"db:5432": true, "[::1]:22": true, "10.0.0.1:1": true,
		"db": false, ":22": false, "db:0": false, "db:x": false, "db:65536": false,
	} {
		if _, _, err := forwarding.SplitTarget(in); (err == nil) != ok {
			t.Errorf("SplitTarget(%q): %v", in, err)
		}
	}
}

// TestKeepAliveInsideTheIdleTimeout: an idle forward pings at least twice
// within the load balancer's idle timeout, so that one lost or late ping
// does not end it.
func TestKeepAliveInsideTheIdleTimeout(t *testing.T) {
	if 2*forwarding.KeepAlive > config.TunnelIdleTimeout {
		t.Errorf("keepalive every %s, the load balancer's idle timeout %s: want at least two pings within it", forwarding.KeepAlive, config.TunnelIdleTimeout)
	}
}

// sink accepts connections and counts the bytes they send into done, once
// each connection ends.
func sink(b testing.TB) (addr string, done <-chan int64) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	counts := make(chan int64, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				n, _ := io.Copy(io.Discard, c)
				c.Close()
				counts <- n
			}()
		}
	}()
	return l.Addr().String(), counts
}

// BenchmarkSession is one connection's throughput through a forward's
// session over a real WebSocket on loopback, without SSH: what the
// session's framing (yamux in WebSocket messages) costs on its own. On the
// 2-core machine of BENCHMARKS.md it carried 300 to 390 MB/s, about three
// times what a forward through an SSH hop does (the tunnel bench's
// "sshdeck forward -L"): the SSH hop, not the session, bounds a forward.
// go test -run '^$' -bench Session -count 5 ./shared/forwarding/
func BenchmarkSession(b *testing.B) {
	url, _ := service(b)
	s := dial(b, url)
	target, done := sink(b)
	c, err := s.Open(context.Background(), target)
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 32<<10)
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	c.(interface{ CloseWrite() error }).CloseWrite()
	if n := <-done; n != int64(b.N*len(chunk)) {
		b.Fatalf("the target got %d bytes of %d", n, b.N*len(chunk))
	}
	b.StopTimer()
	c.Close()
}
