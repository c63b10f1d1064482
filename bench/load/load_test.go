package load

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func ms(n ...int) []time.Duration {
	d := make([]time.Duration, len(n))
	for i, v := range n {
		d[i] = time.Duration(v) * time.Millisecond
	}
	return d
}

func TestPercentile(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"none", nil, 50, 0},
		{"one p50", ms(7), 50, 7 * time.Millisecond},
		{"one p99", ms(7), 99, 7 * time.Millisecond},
		{"two p50 is the lower", ms(1, 2), 50, 1 * time.Millisecond},
		{"two p99 is the upper", ms(1, 2), 99, 2 * time.Millisecond},
		{"four p50", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"four p75", ms(1, 2, 3, 4), 75, 3 * time.Millisecond},
		{"hundred p50", ms(hundred...), 50, 50 * time.Millisecond},
		{"hundred p99", ms(hundred...), 99, 99 * time.Millisecond},
		{"hundred p100", ms(hundred...), 100, 100 * time.Millisecond},
		{"hundred p0.5 is the first", ms(hundred...), 0.5, 1 * time.Millisecond},
		{"ten p99 is the last", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
	} {
		if got := Percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: Percentile(%v, %v) = %v, want %v", tc.name, tc.sorted, tc.p, got, tc.want)
		}
	}
}

func TestPerSecond(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want float64
	}{
		{Result{Requests: 300, Elapsed: 3 * time.Second}, 100},
		{Result{Requests: 5, Elapsed: 500 * time.Millisecond}, 10},
		{Result{}, 0},
	} {
		if got := tc.r.PerSecond(); got != tc.want {
			t.Errorf("%+v: PerSecond = %v, want %v", tc.r, got, tc.want)
		}
	}
}

// TestRun: every worker sends its own numbered requests over kept-alive
// connections; the measurement records every request it counts.
func TestRun(t *testing.T) {
	var served atomic.Int64
	var mu sync.Mutex
	conns := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		time.Sleep(time.Millisecond)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	var seen sync.Map // worker -> last i
	began := time.Now()
	res, err := Run(context.Background(), Config{
		Concurrency: 4, Warmup: 20 * time.Millisecond, Duration: 100 * time.Millisecond,
		Request: func(worker, i int) (*http.Request, error) {
			if last, ok := seen.Load(worker); ok && last.(int) != i-1 {
				t.Errorf("worker %d: request %d after %d", worker, i, last)
			}
			seen.Store(worker, i)
			return http.NewRequest("GET", srv.URL, nil)
		},
	})
	wall := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || len(res.Latencies) != res.Requests {
		t.Fatalf("%d requests, %d latencies", res.Requests, len(res.Latencies))
	}
	if int64(res.Requests) >= served.Load() {
		t.Errorf("measured %d of %d served: the warm-up is counted", res.Requests, served.Load())
	}
	// The measurement lasts at least its Duration and ends with its last
	// answer, within Run and after the warm-up: bounded by Run's own
	// time, not by a guess at this machine's speed.
	if res.Elapsed < 100*time.Millisecond || res.Elapsed > wall-20*time.Millisecond {
		t.Errorf("elapsed %v of a Run of %v with a 20ms warm-up", res.Elapsed, wall)
	}
	if p50, p99 := res.Percentile(50), res.Percentile(99); p50 < time.Millisecond || p99 < p50 {
		t.Errorf("p50 %v, p99 %v", p50, p99)
	}
	if !slicesSorted(res.Latencies) {
		t.Error("latencies are not sorted")
	}
	if len(conns) > 4 {
		t.Errorf("%d connections for 4 workers: connections are not kept alive", len(conns))
	}
}

func slicesSorted(d []time.Duration) bool {
	for i := 1; i < len(d); i++ {
		if d[i] < d[i-1] {
			return false
		}
	}
	return true
}

// TestRunFailsOnAnErrorAnswer: a non-2xx answer fails the run, with its
// status and body.
func TestRunFailsOnAnErrorAnswer(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 50 {
			http.Error(w, `{"error":"host 3 not found","code":"not_found"}`, http.StatusNotFound)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	_, err := Run(context.Background(), Config{
		Concurrency: 3, Duration: 2 * time.Second,
		Request: func(int, int) (*http.Request, error) { return http.NewRequest("GET", srv.URL+"/x", nil) },
	})
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusNotFound || !strings.Contains(e.Body, "host 3 not found") {
		t.Fatalf("Run = %v, want the 404 with its body", err)
	}
}

func TestRunFailsWhenTheServerIsGone(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := Run(context.Background(), Config{
		Concurrency: 2, Duration: time.Second,
		Request: func(int, int) (*http.Request, error) { return http.NewRequest("GET", url, nil) },
	})
	var e *Error
	if !errors.As(err, &e) || e.Err == nil {
		t.Fatalf("Run = %v, want a transport error", err)
	}
}

func TestRunNeedsItsSettings(t *testing.T) {
	if _, err := Run(context.Background(), Config{Concurrency: 1}); err == nil {
		t.Fatal("Run without Duration and Request succeeded")
	}
}
