package tunnelbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/bench/proc"
	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/shared/web"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnelapi"
)

// The tenancy measurement: the tunnel service with every user at its
// limits (API.md: 64 tunnels and 4 status streams per user), 16 users,
// against the Fargate task the CDK app deploys (0.25 vCPU, 512 MB).

// tenancySizes are the users, and each one's tunnels and streams, and how
// long the CPU is measured in each phase.
type tenancySizes struct {
	users, tunnels, streams int
	window                  time.Duration
}

var (
	tenancyFull  = tenancySizes{users: 16, tunnels: 64, streams: 4, window: 60 * time.Second}
	tenancyQuick = tenancySizes{users: 2, tunnels: 3, streams: 2, window: time.Second}
)

// The budget: the whole load fits in half the task, leaving the other half
// for bursts (connects, reconnects, the GC at its peaks).
const (
	taskMillicores = 250
	taskMiB        = 512
	budgetMillis   = taskMillicores / 2
	budgetMiB      = taskMiB / 2
)

type tenancyPhase struct {
	name   string
	mem    memSnapshot
	cpu    float64 // millicores over the window
	window time.Duration
}

type tenancyResult struct {
	sz                     tenancySizes
	base, tunnels, streams tenancyPhase
	started                time.Duration
}

// tenancy runs the service in process (Manager and HTTP API over the
// embedded store, the service's default timers: heartbeat 10 s, reconcile
// 10 s, stream poll 2 s, keepalive 15 s), makes the users and their
// tokens, and measures three phases: no tunnels, every user's tunnels, and
// the streams too.
func tenancy(ctx context.Context, o report.Options, sz tenancySizes) (*tenancyResult, error) {
	dir, err := os.MkdirTemp("", "tunnelbench-tenancy-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	store, err := embedded.Open(filepath.Join(dir, "sshdeck.db"))
	if err != nil {
		return nil, err
	}
	defer store.Close()
	keyring, err := secret.LoadOrCreateKeyFile(filepath.Join(dir, "secret.key"))
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.DiscardHandler)
	m := tunnel.NewManager(store, secret.NewSealer(keyring), tunnel.Options{
		Holder: "bench", Log: log, TunnelLimit: sz.tunnels, StreamLimit: sz.streams,
	})
	authn := auth.NewAuthenticator(store, store, nil)
	admin := auth.NewAdmin(store, authn, nil)
	tokens := make([]string, sz.users)
	for i := range tokens {
		name := fmt.Sprintf("user%02d", i)
		if _, err := admin.AddUser(ctx, name, false); err != nil {
			return nil, err
		}
		if tokens[i], _, err = admin.CreateToken(ctx, name, "bench", 0); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := web.NewHTTPServer(tunnelapi.New(tunnelapi.Config{Manager: m, Authenticator: authn, Ping: store.Ping, Logger: log}), log)
	m.Start()
	go srv.Serve(ln)
	streamCtx, stopStreams := context.WithCancel(ctx)
	var streams sync.WaitGroup
	defer func() {
		stopStreams()
		streams.Wait()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv.Shutdown(sctx)
		m.Shutdown(sctx)
	}()
	url := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: time.Minute}
	// Nothing listens here: each tunnel's first attempt fails (network)
	// and it waits an hour for its next, holding its goroutine, record,
	// lease and status.
	closed, err := sshdtest.FindFreePort()
	if err != nil {
		return nil, err
	}

	r := &tenancyResult{sz: sz}
	measure := func(name string) (tenancyPhase, error) {
		p := tenancyPhase{name: name, window: sz.window}
		p.mem = snapshot(nil)
		start, began := proc.SelfCPU(), time.Now()
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(sz.window):
		}
		p.cpu = (proc.SelfCPU() - start).Seconds() / time.Since(began).Seconds() * 1000
		return p, nil
	}
	o.Logf("tunnel: tenancy, service alone (%v)", sz.window)
	if r.base, err = measure("the service, no tunnel"); err != nil {
		return nil, err
	}

	o.Logf("tunnel: tenancy, %d users × %d tunnels", sz.users, sz.tunnels)
	began := time.Now()
	sem := make(chan struct{}, startConcurrency)
	errs := make(chan error, sz.users*sz.tunnels)
	var wg sync.WaitGroup
	for u, token := range tokens {
		for i := range sz.tunnels {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				errs <- post(ctx, client, url+"/ssh/tunnel/connect", token, map[string]any{
					"name": fmt.Sprintf("t%02d", i), "hostName": "bench",
					"sourceIP": "127.0.0.1", "sourceSSHPort": closed, "sourceUsername": "u", "sourcePassword": "p",
					"endpointIP": "127.0.0.1", "endpointSSHPort": closed, "endpointUsername": "u", "endpointPassword": "p",
					"sourcePort": 8080, "endpointPort": 10000 + u*100 + i,
					"maxRetries": 1000, "retryInterval": 3_600_000,
				})
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for _, token := range tokens {
		if err := waitAllWaiting(ctx, client, url, token, sz.tunnels); err != nil {
			return nil, err
		}
	}
	r.started = time.Since(began)
	if r.tunnels, err = measure(fmt.Sprintf("%d tunnels, waiting", sz.users*sz.tunnels)); err != nil {
		return nil, err
	}

	o.Logf("tunnel: tenancy, %d streams per user", sz.streams)
	for _, token := range tokens {
		for range sz.streams {
			body, err := openRawStream(streamCtx, url, token)
			if err != nil {
				return nil, err
			}
			streams.Go(func() {
				defer body.Close()
				io.Copy(io.Discard, body)
			})
		}
	}
	if r.streams, err = measure(fmt.Sprintf("%d tunnels and %d status streams", sz.users*sz.tunnels, sz.users*sz.streams)); err != nil {
		return nil, err
	}
	return r, nil
}

func post(ctx context.Context, client *http.Client, url, token string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s %s", url, resp.Status, msg)
	}
	return nil
}

// waitAllWaiting polls the user's statuses until n tunnels wait for their
// next attempt.
func waitAllWaiting(ctx context.Context, client *http.Client, url, token string, n int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/ssh/tunnel/status", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		var all map[string]tunnel.Status
		err = json.NewDecoder(resp.Body).Decode(&all)
		resp.Body.Close()
		if err != nil {
			return err
		}
		waiting := 0
		for _, st := range all {
			if st.Status == sshdeck.TunnelWaiting {
				waiting++
			}
		}
		if waiting == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d tunnels waiting after a minute", waiting, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func openRawStream(ctx context.Context, url, token string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/ssh/tunnel/status/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{}).Do(req) // no timeout: the stream lasts
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("status stream: %s", resp.Status)
	}
	return resp.Body, nil
}

func (r *tenancyResult) section() report.Section {
	nT, nS := r.sz.users*r.sz.tunnels, r.sz.users*r.sz.streams
	t := report.Table{Header: []string{"phase", "CPU (millicores)", "RSS (MiB)", "Go heap + stacks (MiB)", "goroutines"}}
	for _, p := range []tenancyPhase{r.base, r.tunnels, r.streams} {
		t.Add(p.name, fmt.Sprintf("%.1f", p.cpu), mib(float64(p.mem.rss)), mib(float64(p.mem.heap+p.mem.stacks)), p.mem.goroutines)
	}
	per := report.Table{Header: []string{"each", "CPU (millicores)", "RSS (KiB)", "Go heap + stacks (KiB)"}}
	per.Add("tunnel (waiting)",
		fmt.Sprintf("%.3f", (r.tunnels.cpu-r.base.cpu)/float64(nT)),
		kib(perTunnel(r.tunnels.mem.rss, r.base.mem.rss, nT)),
		kib(perTunnel(r.tunnels.mem.heap+r.tunnels.mem.stacks, r.base.mem.heap+r.base.mem.stacks, nT)))
	per.Add("status stream",
		fmt.Sprintf("%.3f", (r.streams.cpu-r.tunnels.cpu)/float64(nS)),
		kib(perTunnel(r.streams.mem.rss, r.tunnels.mem.rss, nS)),
		kib(perTunnel(r.streams.mem.heap+r.streams.mem.stacks, r.tunnels.mem.heap+r.tunnels.mem.stacks, nS)))
	loadCPU := r.streams.cpu - r.base.cpu
	rssMiB := float64(r.streams.mem.rss) / (1 << 20)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	return report.Section{
		Title:   "Tunnels: a full tenancy (16 users at their limits)",
		Command: command,
		Text: fmt.Sprintf(`The tunnel service in this process (Manager and HTTP API over the embedded store, with the
service's default timers: lease heartbeat 10 s, reconcile 10 s, status streams' poll 2 s), %d
users each at the limits of API.md: %d tunnels and %d open status streams, %d tunnels and %d
streams in all. The tunnels are cheap ones, on purpose: their source is a loopback port where
nothing listens, so each fails its first attempt at once and waits for its next (maxRetries
1000, retryInterval 1 h), holding what the service keeps per tunnel whatever its state (its
goroutine, record and sealed credentials, its lease renewed every 10 s, its status in every
reading of its owner's streams), without the SSH connections of a connected tunnel, which the
memory table above measures (per connected tunnel). Each phase: RSS and live Go memory after a
GC, then the process's CPU (user + system) over %v, in millicores (1000 = one core); the
streams' clients (reading the events) are in this process too. Connecting every tunnel took
%.1f s.`,
			r.sz.users, r.sz.tunnels, r.sz.streams, nT, nS, r.sz.window, r.started.Seconds()),
		Tables: []report.Table{t, per},
		Notes: fmt.Sprintf(`Budget: the Fargate task the CDK app deploys has %d millicores and %d MiB; all %d users at their
limits must fit in half of it (%d millicores, %d MiB), the other half left for bursts (connects,
reconnects, the GC's peaks). CPU of the load (tunnels and streams, above the service alone): %.1f
millicores, budget %d: %s. RSS of the whole process with the load: %.1f MiB, budget %d: %s.
Not measured here: the DynamoDB store's calls (in AWS the heartbeat is %d UpdateItems every 10 s,
and each owner's streams one Query every 2 s, whatever their number), and connected tunnels
(their SSH connections: see the memory per idle tunnel).`,
			taskMillicores, taskMiB, r.sz.users, budgetMillis, budgetMiB,
			loadCPU, budgetMillis, verdict(loadCPU <= budgetMillis), rssMiB, budgetMiB, verdict(rssMiB <= budgetMiB), nT),
	}
}
