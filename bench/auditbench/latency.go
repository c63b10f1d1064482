package auditbench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sshdeck/sshdeck/bench/load"
	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// concurrencies are the workers of each route's runs.
var concurrencies = []int{1, 16}

// rounds is how many runs of each mode a route has at a concurrency,
// alternated (unaudited, audited, unaudited, audited…) so that whatever
// else the machine does in the meantime falls on both.
const rounds = 2

// sizes are the durations of one run. At full size the group is 6 routes
// × 2 concurrencies × 4 runs of 1.8 s: about a minute and a half.
type sizes struct{ warmup, duration time.Duration }

func sizesOf(o report.Options) sizes {
	if o.Quick {
		return sizes{warmup: 20 * time.Millisecond, duration: 100 * time.Millisecond}
	}
	return sizes{warmup: 300 * time.Millisecond, duration: 1500 * time.Millisecond}
}

// figures are what one run measured.
type figures struct {
	Requests  int
	PerSecond float64
	P50, P99  time.Duration
}

// pair is one route at one concurrency: every run of both modes, by mode
// then round.
type pair struct {
	Route, Call string
	Concurrency int
	Runs        [2][rounds]figures
}

// Best is the better run of m's rounds, the one of more requests per
// second: a busy machine only ever slows a run down, so the better of two
// is the nearer to what the route costs. Its p50 and p99 are that run's.
func (p pair) Best(m mode) figures {
	best := p.Runs[m][0]
	for _, r := range p.Runs[m][1:] {
		if r.PerSecond > best.PerSecond {
			best = r
		}
	}
	return best
}

// Throughput is the audited req/s over the unaudited (of the better runs).
func (p pair) Throughput() float64 {
	if base := p.Best(off).PerSecond; base > 0 {
		return p.Best(on).PerSecond / base
	}
	return 0
}

// AddedP50 is the audited p50 less the unaudited (of the better runs).
func (p pair) AddedP50() time.Duration { return p.Best(on).P50 - p.Best(off).P50 }

// measureLatency opens an embedded store in a new temporary directory,
// serves it twice (world) and runs every route at every concurrency,
// alternating the modes.
func measureLatency(ctx context.Context, o report.Options) ([]pair, error) {
	dir, err := os.MkdirTemp("", "sshdeck-auditbench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	shared, closeShared, err := openEmbedded(ctx, filepath.Join(dir, "sshdeck.db"))
	if err != nil {
		return nil, err
	}
	defer closeShared()
	s := sizesOf(o)
	var pairs []pair
	for _, r := range routes {
		for _, n := range concurrencies {
			p := pair{Route: r.Name, Call: r.Call, Concurrency: n}
			for round := range rounds {
				for _, m := range modes {
					f, err := runIn(ctx, shared, dir, r, m, n, s)
					if err != nil {
						return nil, fmt.Errorf("%s, %s, concurrency %d, round %d: %w", r.Name, m, n, round+1, err)
					}
					p.Runs[m][round] = f
					o.Logf("%-26s c=%-3d %-9s round %d: %7.0f req/s  p50 %-9s p99 %s",
						r.Name, n, m, round+1, f.PerSecond, micros(f.P50), micros(f.P99))
				}
			}
			pairs = append(pairs, p)
		}
	}
	return pairs, nil
}

// openEmbedded opens an embedded store at path and serves it twice; done
// stops the servers and closes the store.
func openEmbedded(ctx context.Context, path string) (_ *world, done func(), err error) {
	store, err := embedded.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open the embedded store: %w", err)
	}
	w, err := newWorld(ctx, store)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return w, func() { w.close(); store.Close() }, nil
}

// runIn runs the route in the shared world, or, for a route with a store
// of its own, in a new one in dir, removed after the run.
func runIn(ctx context.Context, shared *world, dir string, r route, m mode, n int, s sizes) (figures, error) {
	if !r.ownStore {
		return measureRun(ctx, shared, r, m, n, s)
	}
	path := filepath.Join(dir, "run.db")
	w, done, err := openEmbedded(ctx, path)
	if err != nil {
		return figures{}, err
	}
	defer os.Remove(path)
	defer done()
	return measureRun(ctx, w, r, m, n, s)
}

// measureRun runs the route's load at concurrency n against the server of
// m, over what prepare made for this run.
func measureRun(ctx context.Context, w *world, r route, m mode, n int, s sizes) (figures, error) {
	request, err := r.prepare(ctx, w, n)
	if err != nil {
		return figures{}, err
	}
	client := load.NewClient(n)
	defer client.CloseIdleConnections()
	if r.Status != 0 {
		client.Transport = expectStatus{next: client.Transport, status: r.Status}
	}
	res, err := load.Run(ctx, load.Config{
		Concurrency: n, Warmup: s.warmup, Duration: s.duration, Client: client,
		Request: func(worker, i int) (*http.Request, error) { return request(m, worker, i) },
	})
	if err != nil {
		return figures{}, err
	}
	return figures{Requests: res.Requests, PerSecond: res.PerSecond(), P50: res.Percentile(50), P99: res.Percentile(99)}, nil
}

// expectStatus lets the load generator, which fails a run at the first
// answer that is not 2xx, measure a route that must fail: an answer of
// status goes on as a 200, any other non-2xx as it is (the generator
// fails the run with its body), and a 2xx is an error, since the request
// did not fail as it must.
type expectStatus struct {
	next   http.RoundTripper
	status int
}

func (e expectStatus) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := e.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == e.status:
		resp.StatusCode, resp.Status = http.StatusOK, fmt.Sprintf("200 OK (the %d expected)", e.status)
	case resp.StatusCode/100 == 2:
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: answered %d, want %d", req.Method, req.URL.Path, resp.StatusCode, e.status)
	}
	return resp, nil
}
