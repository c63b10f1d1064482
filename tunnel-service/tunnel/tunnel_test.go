package tunnel_test

import (
	"context"
	"sync"
	"testing"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
)

func TestTunnelCarriesData(t *testing.T) {
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	port := sshdtest.FreePort(t)
	if err := m.Connect(context.Background(), owner, w.Request("data", port)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "data", "connected", state(sshdeck.TunnelConnected))

	t.Run("small", func(t *testing.T) {
		if err := sshdtest.RoundTrip(port, 1); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("100MB in one stream", func(t *testing.T) {
		if err := sshdtest.RoundTrip(port, 100<<20); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("100 parallel connections", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for i := range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- sshdtest.RoundTrip(port, int64(64<<10+i))
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})
}

// BenchmarkThroughput measures one stream through a connected tunnel (both
// SSH hops on loopback, to the echo and back): b.SetBytes counts the bytes
// sent, which also come back. Run: go test -run '^$' -bench Throughput
// ./tunnel-service/tunnel/
func BenchmarkThroughput(b *testing.B) {
	w := tunneltest.NewWorld(b)
	m := w.Manager("bench")
	port := sshdtest.FreePort(b)
	connect(b, m, w.Request("bench", port))
	waitFor(b, m, "bench", "connected", state(sshdeck.TunnelConnected))
	const size = 16 << 20
	b.SetBytes(size)
	for b.Loop() {
		if err := sshdtest.RoundTrip(port, size); err != nil {
			b.Fatal(err)
		}
	}
}
