package tunnelbench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/bench/proc"
	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// sourceConns is the number of TCP connections to the source's sshd, as
// the kernel has them: how many SSH connections the tunnels ride.
func (e *env) sourceConns() int {
	pids, err := e.source.Clients()
	if err != nil {
		return -1
	}
	return len(pids)
}

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
	sshdConns  int    // TCP connections to the source's sshd
	startTook  time.Duration
}

type memResult struct {
	// base and levels are tunnels with SSH connections of their own
	// (Options.DedicatedConnections), as every tunnel had before issue 18.
	base    memSnapshot
	levels  []memSnapshot
	stopped string // why the largest count was not reached, if it was not
	// sharedBase and shared are tunnels that all share one connection to
	// the source and one to the endpoint, as the service runs them.
	sharedBase    memSnapshot
	shared        []memSnapshot
	sharedStopped string
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

// idleMemory measures idle tunnels twice: with connections of their own
// (the memory per tunnel), then sharing theirs (the memory per tunnel
// added to a shared connection).
func (e *env) idleMemory(ctx context.Context, o report.Options, p *ports, counts []int, profiles string) (*memResult, error) {
	r := &memResult{}
	var err error
	if r.base, r.levels, r.stopped, err = e.idleLevels(ctx, o, p, e.dedicated, "idle", counts, profiles); err != nil {
		return nil, err
	}
	if r.sharedBase, r.shared, r.sharedStopped, err = e.idleLevels(ctx, o, p, e.manager, "shared", counts, ""); err != nil {
		return nil, err
	}
	return r, nil
}

// idleLevels starts tunnels through m up to each count in turn (they stay
// up, idle) and measures the memory they hold, against the process
// without them; it disconnects them all before it returns.
func (e *env) idleLevels(ctx context.Context, o report.Options, p *ports, m *tunnel.Manager, prefix string, counts []int, profiles string) (base memSnapshot, levels []memSnapshot, stopped string, err error) {
	sshd := []int{e.source.Pid(), e.endpoint.Pid()}
	base = snapshot(sshd)
	var names []string
	defer func() {
		// Disconnected in parallel: Shutdown would stop them one by one.
		e.forEach(context.Background(), names, func(ctx context.Context, name string) error {
			return m.Disconnect(ctx, e.owner, name, false)
		})
	}()
	for _, n := range counts {
		began := time.Now()
		var more []string
		for i := len(names); i < n; i++ {
			more = append(more, fmt.Sprintf("%s-%d", prefix, i))
		}
		var stop sync.Once
		err := e.forEach(ctx, more, func(ctx context.Context, name string) error {
			if low, why := lowMemory(); low {
				stop.Do(func() { stopped = why })
				return errStop
			}
			port, err := p.get()
			if err != nil {
				return err
			}
			if err := m.Connect(ctx, e.owner, e.request(name, port)); err != nil {
				return err
			}
			return e.waitConnected(ctx, m, name)
		}, func(name string) { names = append(names, name) })
		if err != nil {
			return base, nil, "", err
		}
		s := snapshot(sshd)
		s.tunnels, s.startTook, s.sshdConns = len(names), time.Since(began), e.sourceConns()
		levels = append(levels, s)
		o.Logf("tunnel: %d idle tunnels (%s): %s KiB heap+stacks, %s KiB RSS, %.1f goroutines per tunnel, %d connections to the source (started in %v)", s.tunnels, prefix,
			kib(perTunnel(s.heap+s.stacks, base.heap+base.stacks, s.tunnels)),
			kib(perTunnel(s.rss, base.rss, s.tunnels)),
			float64(s.goroutines-base.goroutines)/float64(max(1, s.tunnels)), s.sshdConns, s.startTook.Round(time.Millisecond))
		if stopped != "" {
			break
		}
	}
	if profiles != "" {
		for _, kind := range []string{"heap", "goroutine"} {
			if err := writeProfile(profiles, kind, "tunnel-idle-"+kind+".pprof"); err != nil {
				return base, nil, "", err
			}
		}
	}
	return base, levels, stopped, nil
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

// waitConnected polls the tunnel's status in the store. It has no deadline:
// with no retries (env.request) a tunnel ends connected or failed, after
// logins to sshd whose time is the machine's.
func (e *env) waitConnected(ctx context.Context, m *tunnel.Manager, name string) error {
	for {
		st, err := m.Status(ctx, e.owner, name)
		if err != nil {
			return err
		}
		switch st.Status {
		case sshdeck.TunnelConnected:
			return nil
		case sshdeck.TunnelFailed:
			return fmt.Errorf("tunnel %s failed: %s", name, st.Reason)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// perTunnel is (after - before) / tunnels in bytes, signed: memory is
// measured in uint64 and may well be lower after starting a tunnel than
// before (a GC cycle frees more than one tunnel holds), and the difference
// must then come out negative, not wrap around to 2⁶⁴ - a little.
func perTunnel(after, before uint64, tunnels int) float64 {
	return (float64(after) - float64(before)) / float64(max(1, tunnels))
}

func (r *memResult) section() report.Section {
	t := report.Table{Header: []string{"idle tunnels", "Go heap + stacks per tunnel (KiB)", "RSS per tunnel (KiB)", "goroutines per tunnel", "machine memory per tunnel (KiB, incl. sshd)", "sshd processes", "started in (s)"}}
	negative := false
	for _, s := range r.levels {
		n := float64(max(1, s.tunnels))
		heap := perTunnel(s.heap+s.stacks, r.base.heap+r.base.stacks, s.tunnels)
		rss := perTunnel(s.rss, r.base.rss, s.tunnels)
		machine := perTunnel(r.base.available, s.available, s.tunnels)
		negative = negative || heap < 0 || rss < 0 || machine < 0
		t.Add(s.tunnels,
			kib(heap),
			kib(rss),
			fmt.Sprintf("%.1f", float64(s.goroutines-r.base.goroutines)/n),
			kib(machine),
			s.sshdProcs,
			fmt.Sprintf("%.1f", s.startTook.Seconds()))
	}
	shared, sharedNotes := r.sharedTable()
	var notes []string
	negative = negative || sharedNotes.negative
	if negative {
		notes = append(notes, "A negative figure is the memory measured with the tunnels up being below the same with none: "+
			"at that count what the tunnels hold is smaller than what moves between two measurements (a GC cycle, pages returned to the OS, "+
			"the rest of the machine), so the figure is noise, shown as measured rather than hidden.")
	}
	if r.stopped != "" {
		notes = append(notes, fmt.Sprintf("Stopped starting tunnels at %d: %s.", r.levels[len(r.levels)-1].tunnels, r.stopped))
	}
	if r.sharedStopped != "" {
		notes = append(notes, fmt.Sprintf("Stopped starting shared tunnels at %d: %s.", r.shared[len(r.shared)-1].tunnels, r.sharedStopped))
	}
	notes = append(notes, sharedNotes.goal)
	return report.Section{
		Title:   "Tunnels: memory per idle tunnel",
		Command: command,
		Text: fmt.Sprintf(`Tunnels started through the Manager (%d at a time, each waited for until `+"`connected`"+`)
and left idle, up to each count in turn; then, after a GC that returns freed memory to the OS,
the bench process's live Go heap plus goroutine stacks, its RSS and its goroutines, and the
machine's MemAvailable (which counts sshd's processes too, and moves with whatever else the
machine runs: a rough figure), each less the same with no tunnel
(heap+stacks %s MiB, RSS %s MiB, %d goroutines, %d sshd processes), divided by the number of
tunnels. In the first table each tunnel has two SSH connections of its own (the endpoint's
inside a channel of the source's; `+"`Options.DedicatedConnections`"+`, as every tunnel had before
connections were shared), a remote forward, and the service's keepalives, lease and status.

In the second table the same tunnels, through a Manager that shares connections as the service
does, all ride one SSH connection to the source and one to the endpoint (the source's sshd's TCP
connections, counted by the kernel, are in the table), each with its own remote forward on the
endpoint's. Its first row is the first tunnel with its two connections, against none; each later
row is the memory the tunnels beyond the first added, divided by their number: what one more
idle tunnel on a shared connection costs.`,
			startConcurrency, mib(float64(r.base.heap+r.base.stacks)), mib(float64(r.base.rss)), r.base.goroutines, r.base.sshdProcs),
		Tables: []report.Table{t, shared},
		Notes:  strings.Join(notes, " "),
	}
}

// sharedGoal is the most an idle tunnel added to a shared connection may
// cost in Go heap and stacks (API.md, issue 18).
const sharedGoal = 16 << 10

type sharedNotes struct {
	negative bool
	goal     string
}

// sharedTable is the shared tunnels' table: the first row against no
// tunnel, each later one per tunnel beyond the first.
func (r *memResult) sharedTable() (report.Table, sharedNotes) {
	t := report.Table{Header: []string{"shared idle tunnels", "Go heap + stacks per added tunnel (KiB)", "RSS per added tunnel (KiB)", "goroutines per added tunnel", "machine memory per added tunnel (KiB, incl. sshd)", "SSH connections to the source", "started in (s)"}}
	var n sharedNotes
	if len(r.shared) == 0 {
		n.goal = "No shared tunnel was measured."
		return t, n
	}
	first := r.shared[0]
	var last float64
	for i, s := range r.shared {
		from, added := r.sharedBase, s.tunnels
		if i > 0 {
			from, added = first, s.tunnels-first.tunnels
		}
		heap := perTunnel(s.heap+s.stacks, from.heap+from.stacks, added)
		rss := perTunnel(s.rss, from.rss, added)
		machine := perTunnel(from.available, s.available, added)
		n.negative = n.negative || heap < 0 || rss < 0 || machine < 0
		last = heap
		t.Add(s.tunnels, kib(heap), kib(rss),
			fmt.Sprintf("%.1f", float64(s.goroutines-from.goroutines)/float64(max(1, added))),
			kib(machine), s.sshdConns, fmt.Sprintf("%.1f", s.startTook.Seconds()))
	}
	if len(r.shared) < 2 {
		n.goal = "Only the first shared tunnel was measured: no figure per added tunnel."
		return t, n
	}
	verdict := "met"
	if last > sharedGoal {
		verdict = "not met"
	}
	n.goal = fmt.Sprintf("Goal: at most %s KiB of Go heap and stacks per idle tunnel added to a shared connection: **%s** (%s KiB at %d tunnels).",
		kib(sharedGoal), verdict, kib(last), r.shared[len(r.shared)-1].tunnels)
	return t, n
}
