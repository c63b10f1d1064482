package tunnelbench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/bench/proc"
	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// startConcurrency bounds the tunnels being connected at once: far below
// sshd's MaxStartups (200 in sshdtest's config), and gentle on 2 cores.
const startConcurrency = 8

// memSnapshot is this process's memory and the machine's at one moment,
// after a full GC.
type memSnapshot struct {
	tunnels    int
	heap       uint64 // live heap objects (HeapAlloc right after GC)
	stacks     uint64 // goroutine stacks (StackInuse)
	rss        uint64 // VmRSS
	goroutines int
	available  uint64 // the machine's MemAvailable
	sshdProcs  int    // processes of both sshd trees
	startTook  time.Duration
}

type memResult struct {
	base    memSnapshot
	levels  []memSnapshot
	stopped string // why the largest count was not reached, if it was not
}

func snapshot(sshd []int) memSnapshot {
	// Let what was just closed finish (goroutines ending, connections
	// closing), then collect twice (sync.Pool keeps objects one GC more)
	// and give freed pages back to the OS, so that RSS follows.
	time.Sleep(200 * time.Millisecond)
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSnapshot{
		heap:       ms.HeapAlloc,
		stacks:     ms.StackInuse,
		rss:        proc.KB("/proc/self/status", "VmRSS") << 10,
		goroutines: runtime.NumGoroutine(),
		available:  proc.KB("/proc/meminfo", "MemAvailable") << 10,
		sshdProcs:  len(tree(proc.All(), sshd)),
	}
}

// lowMemory is when the machine is too short of memory to start more
// tunnels (each holds two SSH connections: sshd forks processes for each).
func lowMemory() (bool, string) {
	avail := proc.KB("/proc/meminfo", "MemAvailable") << 10
	total := proc.KB("/proc/meminfo", "MemTotal") << 10
	floor := max(uint64(4)<<30, total/5)
	if avail < floor {
		return true, fmt.Sprintf("the machine's available memory fell to %.1f GiB (floor %.1f GiB)", float64(avail)/(1<<30), float64(floor)/(1<<30))
	}
	return false, ""
}

// idleMemory starts tunnels up to each count in turn (they stay up, idle)
// and measures the memory they hold, against the process with none.
func (e *env) idleMemory(ctx context.Context, o report.Options, p *ports, counts []int, profiles string) (*memResult, error) {
	sshd := []int{e.source.Pid(), e.endpoint.Pid()}
	r := &memResult{base: snapshot(sshd)}
	var names []string
	defer func() {
		// Disconnected in parallel: Shutdown would stop them one by one.
		e.forEach(context.Background(), names, func(ctx context.Context, name string) error {
			return e.manager.Disconnect(ctx, e.owner, name, false)
		})
	}()
	for _, n := range counts {
		began := time.Now()
		var more []string
		for i := len(names); i < n; i++ {
			more = append(more, fmt.Sprintf("idle-%d", i))
		}
		var stop sync.Once
		err := e.forEach(ctx, more, func(ctx context.Context, name string) error {
			if low, why := lowMemory(); low {
				stop.Do(func() { r.stopped = why })
				return errStop
			}
			port, err := p.get()
			if err != nil {
				return err
			}
			if err := e.manager.Connect(ctx, e.owner, e.request(name, port)); err != nil {
				return err
			}
			return e.waitConnected(ctx, name)
		}, func(name string) { names = append(names, name) })
		if err != nil {
			return nil, err
		}
		s := snapshot(sshd)
		s.tunnels, s.startTook = len(names), time.Since(began)
		r.levels = append(r.levels, s)
		o.Logf("tunnel: %d idle tunnels: %.1f KiB heap+stacks, %.1f KiB RSS, %.1f goroutines per tunnel (started in %v)", s.tunnels,
			(float64(s.heap+s.stacks)-float64(r.base.heap+r.base.stacks))/float64(max(1, s.tunnels))/1024,
			(float64(s.rss)-float64(r.base.rss))/float64(max(1, s.tunnels))/1024,
			float64(s.goroutines-r.base.goroutines)/float64(max(1, s.tunnels)), s.startTook.Round(time.Millisecond))
		if r.stopped != "" {
			break
		}
	}
	if profiles != "" {
		for _, kind := range []string{"heap", "goroutine"} {
			if err := writeProfile(profiles, kind, "tunnel-idle-"+kind+".pprof"); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

var errStop = fmt.Errorf("stop")

// forEach runs f on every name, startConcurrency at once; ok is told of
// every name f succeeded with (under a lock). errStop stops it quietly.
func (e *env) forEach(ctx context.Context, names []string, f func(context.Context, string) error, ok ...func(string)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range startConcurrency {
		wg.Go(func() {
			for name := range work {
				err := f(ctx, name)
				mu.Lock()
				switch {
				case err == nil:
					for _, o := range ok {
						o(name)
					}
				case first == nil:
					first = err
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	for _, name := range names {
		select {
		case work <- name:
			continue
		case <-ctx.Done():
		}
		break
	}
	close(work)
	wg.Wait()
	if first == errStop {
		return nil
	}
	return first
}

// waitConnected polls the tunnel's status in the store.
func (e *env) waitConnected(ctx context.Context, name string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := e.manager.Status(ctx, e.owner, name)
		if err != nil {
			return err
		}
		switch st.Status {
		case sshdeck.TunnelConnected:
			return nil
		case sshdeck.TunnelFailed:
			return fmt.Errorf("tunnel %s failed: %s", name, st.Reason)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("tunnel %s not connected after a minute: %s, %s", name, st.Status, st.Reason)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (r *memResult) section() report.Section {
	t := report.Table{Header: []string{"idle tunnels", "Go heap + stacks per tunnel (KiB)", "RSS per tunnel (KiB)", "goroutines per tunnel", "machine memory per tunnel (KiB, incl. sshd)", "sshd processes", "started in (s)"}}
	for _, s := range r.levels {
		n := float64(max(1, s.tunnels))
		t.Add(s.tunnels,
			kib((float64(s.heap+s.stacks)-float64(r.base.heap+r.base.stacks))/n),
			kib((float64(s.rss)-float64(r.base.rss))/n),
			fmt.Sprintf("%.1f", float64(s.goroutines-r.base.goroutines)/n),
			kib((float64(r.base.available)-float64(s.available))/n),
			s.sshdProcs,
			fmt.Sprintf("%.1f", s.startTook.Seconds()))
	}
	notes := ""
	if r.stopped != "" {
		notes = fmt.Sprintf("Stopped starting tunnels at %d: %s.", r.levels[len(r.levels)-1].tunnels, r.stopped)
	}
	return report.Section{
		Title:   "Tunnels: memory per idle tunnel",
		Command: command,
		Text: fmt.Sprintf(`Tunnels started through the Manager (%d at a time, each waited for until `+"`connected`"+`)
and left idle, up to each count in turn; then, after a GC that returns freed memory to the OS,
the bench process's live Go heap plus goroutine stacks, its RSS and its goroutines, and the
machine's MemAvailable (which counts sshd's processes too, and moves with whatever else the
machine runs: a rough figure), each less the same with no tunnel
(heap+stacks %s MiB, RSS %s MiB, %d goroutines, %d sshd processes), divided by the number of
tunnels. Each tunnel is two SSH connections (the endpoint's inside a channel of the source's),
a remote forward, and the service's keepalives, lease and status.`,
			startConcurrency, mib(float64(r.base.heap+r.base.stacks)), mib(float64(r.base.rss)), r.base.goroutines, r.base.sshdProcs),
		Tables: []report.Table{t},
		Notes:  notes,
	}
}
