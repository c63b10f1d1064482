// Package apibench is the "api" group of sshdeck's benchmarks: requests per
// second and latencies of the local API (`sshdeck serve`, a separate
// process over its embedded store) under a Go load generator.
package apibench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/bench/load"
	"github.com/sshdeck/sshdeck/bench/proc"
	"github.com/sshdeck/sshdeck/bench/report"
)

// Group measures the local API.
var Group = report.Group{Name: "api", Run: run}

// Concurrencies are the numbers of workers of every route's runs.
var Concurrencies = []int{1, 16, 64}

// ProfileEnv names a directory: when set, sshdeck is built with its pprof
// listener (build tag pprof) and the server's CPU profile of every run at
// the highest concurrency is written there, as <route>.pprof.
const ProfileEnv = "SSHDECK_BENCH_PROFILE"

// goal is the target for GET /ssh/db/host/{id} at concurrency 64.
const goal = 20000

// sizes are the durations and host counts of a run.
type sizes struct {
	warmup, duration time.Duration
	bigHosts         int
}

func sizesOf(o report.Options) sizes {
	if o.Quick {
		return sizes{warmup: 30 * time.Millisecond, duration: 150 * time.Millisecond, bigHosts: 20}
	}
	return sizes{warmup: 500 * time.Millisecond, duration: 3 * time.Second, bigHosts: 1000}
}

// Case is one route measured.
type Case struct {
	// Name is the row's first cell; Key names its profile file.
	Name, Key string
	request   func(w *world) func(worker, i int) (*http.Request, error)
	// check, when set, runs after each run of the case.
	check func(ctx context.Context, w *world) error
}

func cases(s sizes) []Case {
	return []Case{
		{Name: "GET /ssh/db/host (10 hosts)", Key: "list-10", request: func(w *world) func(int, int) (*http.Request, error) {
			return get(w, w.small, func(int, int) string { return "/ssh/db/host" })
		}},
		{Name: fmt.Sprintf("GET /ssh/db/host (%d hosts)", s.bigHosts), Key: "list-big", request: func(w *world) func(int, int) (*http.Request, error) {
			return get(w, w.big, func(int, int) string { return "/ssh/db/host" })
		}},
		{Name: "GET /ssh/db/host/{id}", Key: "get-host", request: func(w *world) func(int, int) (*http.Request, error) {
			// Ids spread over the big user's hosts, each worker from its own start.
			return get(w, w.big, func(worker, i int) string {
				return "/ssh/db/host/" + strconv.Itoa((worker*7919+i*31)%s.bigHosts+1)
			})
		}},
		{Name: "PUT /ssh/db/host/{id} (multipart)", Key: "update-host", request: putHost},
		{Name: "POST /ssh/file_manager/recent", Key: "add-recent", request: postRecent, check: checkRecent},
		{Name: "GET /alerts", Key: "list-alerts", request: func(w *world) func(int, int) (*http.Request, error) {
			return get(w, w.small, func(int, int) string { return "/alerts" })
		}},
		{Name: "GET /releases/rss (cached)", Key: "releases", request: func(w *world) func(int, int) (*http.Request, error) {
			return get(w, w.small, func(int, int) string { return releasesPath })
		}, check: checkReleases},
	}
}

func get(w *world, token string, path func(worker, i int) string) func(int, int) (*http.Request, error) {
	return func(worker, i int) (*http.Request, error) {
		req, err := http.NewRequest("GET", w.url+path(worker, i), nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return req, err
	}
}

// putHost: each worker updates its own host of the writer user (so that
// workers never race for one version), with a new password every time, so
// that every update seals it.
func putHost(w *world) func(int, int) (*http.Request, error) {
	return func(worker, i int) (*http.Request, error) {
		data, err := json.Marshal(hostBody("writer-"+strconv.Itoa(worker), "pw-"+strconv.Itoa(i)))
		if err != nil {
			return nil, err
		}
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		if err := mw.WriteField("data", string(data)); err != nil {
			return nil, err
		}
		if err := mw.Close(); err != nil {
			return nil, err
		}
		req, err := http.NewRequest("PUT", w.url+"/ssh/db/host/"+strconv.Itoa(worker+1), &body)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+w.writer)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return req, nil
	}
}

// postRecent: paths cycle through more than the cap, on one host.
func postRecent(w *world) func(int, int) (*http.Request, error) {
	return func(worker, i int) (*http.Request, error) {
		body, err := json.Marshal(recentBody(worker*37 + i))
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequest("POST", w.url+"/ssh/file_manager/recent", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+w.small)
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	}
}

// checkRecent: the list stayed at its cap.
func checkRecent(ctx context.Context, w *world) error {
	var recent []json.RawMessage
	if err := w.call(ctx, w.small, "GET", "/ssh/file_manager/recent?hostId=1&limit=100", nil, &recent); err != nil {
		return err
	}
	if len(recent) != recentCap {
		return fmt.Errorf("host 1 has %d recent files after the run, want %d", len(recent), recentCap)
	}
	return nil
}

// checkReleases: every answer came from the cache (GitHub had only the
// warm-up's call) and still says so.
func checkReleases(ctx context.Context, w *world) error {
	if n := w.github.Calls(); n != 1 {
		return fmt.Errorf("GitHub had %d calls, want the warm-up's 1: answers did not come from the cache", n)
	}
	var feed struct{ Cached bool }
	if err := w.call(ctx, w.small, "GET", releasesPath, nil, &feed); err != nil {
		return err
	}
	if !feed.Cached {
		return fmt.Errorf("the releases feed is not answered from the cache")
	}
	return nil
}

// Row is one run's figures.
type Row struct {
	Case        string
	Concurrency int
	Requests    int
	PerSecond   float64
	P50, P99    time.Duration
	// ServerCPU and LoadCPU are the CPU time per request of the server
	// process and of the load generator's.
	ServerCPU, LoadCPU time.Duration
}

// goalPeakRSS is the goal for the peak resident memory of `sshdeck serve`
// through the group's runs, in bytes (64 MB).
const goalPeakRSS = 64_000_000

// Result is what the group measured.
type Result struct {
	Rows []Row
	// RSS is the server's resident set (VmRSS) at the end of each route's
	// runs, in the cases' order.
	RSS []RouteRSS
	// PeakRSS is the server's peak resident set (VmHWM) after all its
	// runs, the A/B ones included, or the largest VmRSS read if that is
	// larger (the kernel updates VmHWM lazily).
	PeakRSS uint64
	// AB is the comparison with sshdeck built at o.Baseline, when set.
	AB *AB
}

// RouteRSS is the server's resident set after a route's runs.
type RouteRSS struct {
	Case string
	RSS  uint64
}

func run(ctx context.Context, o report.Options) ([]report.Section, error) {
	res, err := Measure(ctx, o)
	if err != nil {
		return nil, err
	}
	sections := []report.Section{section(o, res)}
	if res.AB != nil {
		sections = append(sections, abSection(o, res.AB))
	}
	return sections, nil
}

// Measure runs every case at every concurrency against a new server, and,
// with o.Baseline, the A/B case against sshdeck built at that revision.
func Measure(ctx context.Context, o report.Options) (Result, error) {
	var res Result
	s := sizesOf(o)
	profileDir := os.Getenv(ProfileEnv)
	if profileDir != "" {
		if err := os.MkdirAll(profileDir, 0o755); err != nil {
			return res, err
		}
	}
	// The baseline is built first, so that its build overlaps no run.
	var base *baseline
	if o.Baseline != "" {
		var err error
		if base, err = buildBaseline(ctx, o, o.Baseline); err != nil {
			return res, err
		}
		defer os.RemoveAll(base.dir) // also done by its server's close
	}
	w, err := start(ctx, o, profileDir)
	if err != nil {
		return res, err
	}
	defer w.close()
	w.bigHosts = s.bigHosts
	if err := w.seed(ctx, Concurrencies[len(Concurrencies)-1]); err != nil {
		return res, fmt.Errorf("seed: %w", err)
	}
	var abCase Case
	for _, c := range cases(s) {
		if c.Key == abKey {
			abCase = c
		}
		for _, n := range Concurrencies {
			profile := ""
			if profileDir != "" && n == Concurrencies[len(Concurrencies)-1] {
				profile = filepath.Join(profileDir, c.Key+".pprof")
			}
			row, err := measure(ctx, w, c, n, s, profile)
			if err != nil {
				return res, fmt.Errorf("%s at concurrency %d: %w", c.Name, n, err)
			}
			if c.check != nil {
				if err := c.check(ctx, w); err != nil {
					return res, fmt.Errorf("%s at concurrency %d: %w", c.Name, n, err)
				}
			}
			o.Logf("%-40s c=%-3d %8.0f req/s  p50 %-9s p99 %-9s server %s/req, generator %s/req",
				c.Name, n, row.PerSecond, latency(row.P50), latency(row.P99), cpuPerRequest(row.ServerCPU), cpuPerRequest(row.LoadCPU))
			res.Rows = append(res.Rows, row)
		}
		mem, err := w.memory()
		if err != nil {
			return res, err
		}
		o.Logf("%-40s server RSS after its runs: %s MB", c.Name, megabytes(mem.RSS))
		res.RSS = append(res.RSS, RouteRSS{Case: c.Name, RSS: mem.RSS})
		res.PeakRSS = max(res.PeakRSS, mem.Peak, mem.RSS)
	}
	if base != nil {
		if res.AB, err = measureAB(ctx, o, w, base, abCase, s); err != nil {
			return res, err
		}
	}
	mem, err := w.memory()
	if err != nil {
		return res, err
	}
	// The kernel raises VmHWM lazily (when it syncs its counters, or
	// unmaps), so a resident set read earlier can be above it: the peak is
	// the largest of every figure read.
	res.PeakRSS = max(res.PeakRSS, mem.Peak, mem.RSS)
	o.Logf("%s", peakRSSLine(res.PeakRSS))
	o.Logf("%s", peakRSSGoal(res.PeakRSS))
	return res, nil
}

// peakRSSLine and peakRSSGoal are the notes' lines on the server's peak
// resident set.
func peakRSSLine(peak uint64) string {
	return fmt.Sprintf("Peak RSS of sshdeck serve through the api group: %s MB", megabytes(peak))
}

func peakRSSGoal(peak uint64) string {
	verdict := "met"
	if peak > goalPeakRSS {
		verdict = "missed"
	}
	return fmt.Sprintf("Goal: peak RSS of `sshdeck serve` through the api group at most %d MB: **%s** (%s MB).",
		goalPeakRSS/1_000_000, verdict, megabytes(peak))
}

// megabytes formats bytes in MB of 10⁶ bytes.
func megabytes(b uint64) string { return fmt.Sprintf("%.1f", float64(b)/1e6) }

func measure(ctx context.Context, w *world, c Case, n int, s sizes, profile string) (Row, error) {
	client := load.NewClient(n)
	defer client.CloseIdleConnections()
	var (
		serverStart, loadStart time.Duration
		cpuErr                 error
		profiled               chan error
	)
	res, err := load.Run(ctx, load.Config{
		Concurrency: n, Warmup: s.warmup, Duration: s.duration, Client: client,
		Request: c.request(w),
		Measuring: func() {
			serverStart, cpuErr = w.cpu()
			loadStart = proc.SelfCPU()
			if profile != "" {
				profiled = make(chan error, 1)
				go func() { profiled <- w.cpuProfile(ctx, s.duration, profile) }()
			}
		},
	})
	if err != nil {
		return Row{}, err
	}
	serverEnd, err := w.cpu()
	if err := cmp(cpuErr, err); err != nil {
		return Row{}, err
	}
	loadEnd := proc.SelfCPU()
	if profiled != nil {
		if err := <-profiled; err != nil {
			return Row{}, err
		}
	}
	row := Row{
		Case: c.Name, Concurrency: n, Requests: res.Requests, PerSecond: res.PerSecond(),
		P50: res.Percentile(50), P99: res.Percentile(99),
	}
	if res.Requests > 0 {
		row.ServerCPU = (serverEnd - serverStart) / time.Duration(res.Requests)
		row.LoadCPU = (loadEnd - loadStart) / time.Duration(res.Requests)
	}
	return row, nil
}

// cpuProfile writes the server's CPU profile of the next d (whole seconds,
// at least one) into path.
func (w *world) cpuProfile(ctx context.Context, d time.Duration, path string) error {
	seconds := max(int(d.Round(time.Second)/time.Second), 1)
	req, err := http.NewRequestWithContext(ctx, "GET", w.pprof+"/debug/pprof/profile?seconds="+strconv.Itoa(seconds), nil)
	if err != nil {
		return err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("CPU profile: %d %s", resp.StatusCode, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func section(o report.Options, res Result) report.Section {
	s := sizesOf(o)
	t := report.Table{Header: []string{"route", "concurrency", "req/s", "p50", "p99", "server CPU/req", "generator CPU/req"}}
	for _, r := range res.Rows {
		t.Add(r.Case, r.Concurrency, fmt.Sprintf("%.0f", r.PerSecond), latency(r.P50), latency(r.P99), cpuPerRequest(r.ServerCPU), cpuPerRequest(r.LoadCPU))
	}
	mem := report.Table{Header: []string{"route", "server RSS after its runs (MB)"}}
	for _, r := range res.RSS {
		mem.Add(r.Case, megabytes(r.RSS))
	}
	return report.Section{
		Title:   "Local API: requests per second and latencies",
		Command: "go run ./bench -only api",
		Text: fmt.Sprintf(`
`+"`sshdeck serve`"+`, built from this tree, runs as its own process on a loopback port
over a new data directory, its request log written to a file, the releases feed and
the remote alerts list pointed at local fakes of GitHub and of the list. Users and
tokens are made with `+"`sshdeck user add` and `sshdeck token create`"+`; hosts are created
through the API, each with a password, so every read opens sealed credentials. The user
listed has 10 hosts, another %[1]d (their hosts are also those read one by one, ids
spread); each PUT worker updates its own host with a new password every time (so every
update seals it), as multipart with the host in the `+"`data`"+` part; recent files are
added to one host whose list is at its cap of 100, cycling through 150 paths, so every
add moves or trims; the user reading `+"`/alerts`"+` sees 3 of 6 alerts (4 published, 2
remote, 3 dismissed); the releases page is in the cache before the runs (checked: the
answers say `+"`cached: true`"+` and GitHub gets no call).

The load generator (`+"`bench/load`"+`) runs N workers, each with its own kept-alive
connection, for a %[2]s warm-up then %[3]s; every latency is recorded. req/s is the
requests completed divided by the measurement's time; p50 and p99 are nearest-rank
percentiles. Any answer that is not 2xx fails the run. **The generator and the server
share this machine's cores**: the CPU columns are the CPU time per request of the
server process (from /proc) and of the generator's process; their sum bounds what
the machine can do (cores / CPU per request).

The server's memory is read from its `+"`/proc/<pid>/status`"+`: its resident set (VmRSS) once
each route's runs are over (the routes run in the order of the table), and its peak resident
set (VmHWM, the kernel's high-water mark, from its start through every run) at the end; the
kernel raises VmHWM lazily, so the peak reported is the largest of every VmHWM and VmRSS
read. MB are 10⁶ bytes.`, s.bigHosts, s.warmup, s.duration),
		Tables: []report.Table{t, mem},
		Notes:  strings.Join(append(notes(res.Rows), peakRSSLine(res.PeakRSS)+".", peakRSSGoal(res.PeakRSS)), "\n\n"),
	}
}

// notes says whether the throughput goal is met, and what bounds it.
func notes(rows []Row) []string {
	for _, r := range rows {
		if r.Case != "GET /ssh/db/host/{id}" || r.Concurrency != 64 {
			continue
		}
		verdict := "met"
		if r.PerSecond < goal {
			verdict = "missed"
		}
		perReq := r.ServerCPU + r.LoadCPU
		ceiling := ""
		if perReq > 0 {
			cores := float64(numCPU())
			ceiling = fmt.Sprintf(" Server and generator together used %s of CPU per request: %d cores allow at most about %.0f req/s on this machine; the server alone, with the cores to itself, about %.0f.",
				cpuPerRequest(perReq), int(cores), cores/perReq.Seconds(), cores/max(r.ServerCPU, time.Microsecond).Seconds())
		}
		return []string{fmt.Sprintf("Goal: `GET /ssh/db/host/{id}` at concurrency 64 at least %s req/s on 2 cores: **%s** (%.0f req/s).%s",
			thousands(goal), verdict, r.PerSecond, ceiling)}
	}
	return nil
}

// latency formats a latency in µs below a millisecond, else in ms.
func latency(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func cpuPerRequest(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func numCPU() int { return runtime.NumCPU() }
