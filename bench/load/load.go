// Package load is the load generator of the API benchmarks: a fixed number
// of workers, each with its own keep-alive connection, send requests for a
// warm-up, then for a fixed duration while every latency is recorded.
package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Config is one run.
type Config struct {
	// Concurrency is the number of workers, each sending its next request
	// when the previous answer is read (closed loop).
	Concurrency int
	// Warmup is how long the workers send requests before the measurement
	// (nothing recorded); Duration is how long the measurement lasts.
	Warmup, Duration time.Duration
	// Request returns the i-th request of a worker (from 0, counting the
	// warm-up's), a new one every call: its body is read once.
	Request func(worker, i int) (*http.Request, error)
	// Client sends the requests; nil is NewClient(Concurrency).
	Client *http.Client
	// Measuring, when set, is called as the measurement starts (after the
	// warm-up), e.g. to read the server's CPU time.
	Measuring func()
}

// NewClient returns a client of at most one connection per worker, kept
// alive. MaxConnsPerHost makes it at most, not about: without it a
// request that finds no idle connection dials a new one even when another
// is about to be returned, and a run could open more connections than it
// has workers (one CI run did).
func NewClient(concurrency int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no limit
	t.MaxIdleConnsPerHost = max(concurrency, 2)
	t.MaxConnsPerHost = max(concurrency, 1)
	t.DisableCompression = true
	return &http.Client{Transport: t, Timeout: time.Minute}
}

// Result is what a run measured.
type Result struct {
	// Requests completed in the measurement, and how long it took (from its
	// start to the last answer).
	Requests int
	Elapsed  time.Duration
	// Latencies of every request of the measurement, sorted.
	Latencies []time.Duration
}

// PerSecond is completed requests per second of the measurement.
func (r Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Percentile returns the p-th percentile (0 < p <= 100) of the latencies,
// by nearest rank: the smallest latency that at least p% of the requests
// did not exceed. 0 when there were none.
func (r Result) Percentile(p float64) time.Duration {
	return Percentile(r.Latencies, p)
}

// Percentile is the nearest-rank p-th percentile of sorted.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}

// Error is a failed request: a transport error or an answer that is not
// 2xx, with its body.
type Error struct {
	Method, URL string
	Status      int
	Body        string
	Err         error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s %s: %v", e.Method, e.URL, e.Err)
	}
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Status, e.Body)
}

func (e *Error) Unwrap() error { return e.Err }

// Run warms up, then measures. The first failed request stops the run and
// is its error.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Concurrency < 1 || cfg.Duration <= 0 || cfg.Request == nil {
		return Result{}, errors.New("load: Concurrency, Duration and Request are required")
	}
	client := cfg.Client
	if client == nil {
		client = NewClient(cfg.Concurrency)
		defer client.CloseIdleConnections()
	}
	next := make([]int, cfg.Concurrency) // each worker's next request number
	if cfg.Warmup > 0 {
		if _, err := phase(ctx, client, cfg, next, cfg.Warmup, false); err != nil {
			return Result{}, err
		}
	}
	if cfg.Measuring != nil {
		cfg.Measuring()
	}
	return phase(ctx, client, cfg, next, cfg.Duration, true)
}

// phase runs every worker for d.
func phase(ctx context.Context, client *http.Client, cfg Config, next []int, d time.Duration, record bool) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		firstErr  error
		latencies = make([][]time.Duration, cfg.Concurrency)
	)
	start := time.Now()
	deadline := start.Add(d)
	for w := range cfg.Concurrency {
		wg.Go(func() {
			var lat []time.Duration
			if record {
				lat = make([]time.Duration, 0, 4096)
			}
			for ctx.Err() == nil && time.Now().Before(deadline) {
				req, err := cfg.Request(w, next[w])
				next[w]++
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					cancel()
					return
				}
				t0 := time.Now()
				err = do(client, req.WithContext(ctx))
				elapsed := time.Since(t0)
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					cancel()
					return
				}
				if record {
					lat = append(lat, elapsed)
				}
			}
			latencies[w] = lat
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return Result{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var all []time.Duration
	for _, l := range latencies {
		all = append(all, l...)
	}
	slices.Sort(all)
	return Result{Requests: len(all), Elapsed: elapsed, Latencies: all}, nil
}

// cmpErr keeps the first error, unless it is only the cancellation that a
// later, real, error caused.
func cmpErr(first, err error) error {
	if first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled) {
		return err
	}
	return first
}

// do sends req and reads the whole answer, so that the connection is
// reused; anything but 2xx is an *Error with the body.
func do(client *http.Client, req *http.Request) error {
	resp, err := client.Do(req)
	if err != nil {
		return &Error{Method: req.Method, URL: req.URL.String(), Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return &Error{Method: req.Method, URL: req.URL.String(), Err: err}
		}
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return &Error{Method: req.Method, URL: req.URL.String(), Status: resp.StatusCode, Body: string(bytes.TrimSpace(body))}
}
