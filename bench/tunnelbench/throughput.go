package tunnelbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/bench/proc"
	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// path is one way to the echo service.
type path struct {
	name string
	port int
	// clientPids are the processes of the tunnel's client side besides
	// this one (OpenSSH's two ssh), whose CPU is counted.
	clientPids []int
}

// sample is one measurement of one path.
type sample struct {
	mbps float64 // MB/s each way (10^6 bytes; n sent and n echoed back)
	// CPU seconds per GiB carried (each way): this process, the tunnel's
	// other client processes, both sshd trees.
	selfCPU, clientCPU, sshdCPU float64
}

type throughputResult struct {
	sz      sizes
	paths   []string
	single  map[string][]sample
	multi   map[string][]sample
	ciphers map[string][]string // path → what sshd logged it negotiated
}

// throughput carries sz.single bytes in one stream, then sz.streams
// streams of sz.each bytes at once, through each path, sz.reps times,
// the paths taking turns so that a change in the machine's load touches
// them alike.
func (e *env) throughput(ctx context.Context, o report.Options, p *ports, sz sizes, profiles string) (*throughputResult, error) {
	srcLog, dstLog := len(e.source.Log()), len(e.endpoint.Log())
	sshPort, err := p.get()
	if err != nil {
		return nil, err
	}
	ossh, _, err := e.startOpenSSH(ctx, sshPort)
	if err != nil {
		return nil, err
	}
	defer ossh.stop()
	r := &throughputResult{sz: sz, single: map[string][]sample{}, multi: map[string][]sample{}, ciphers: map[string][]string{}}
	r.ciphers["OpenSSH"] = append(negotiated(e.source.Log(), srcLog), negotiated(e.endpoint.Log(), dstLog)...)

	srcLog, dstLog = len(e.source.Log()), len(e.endpoint.Log())
	tunnelPort, err := p.get()
	if err != nil {
		return nil, err
	}
	stream, err := e.openStream(ctx)
	if err != nil {
		return nil, err
	}
	defer stream.close()
	if err := e.post(ctx, "/ssh/tunnel/connect", e.request("throughput", tunnelPort)); err != nil {
		return nil, err
	}
	if err := stream.wait(ctx, "throughput", sshdeck.TunnelConnected); err != nil {
		return nil, err
	}
	defer e.disconnect(context.Background(), "throughput")
	if err := waitListening(ctx, tunnelPort, listenPatience); err != nil {
		return nil, err
	}
	r.ciphers["sshdeck"] = append(negotiated(e.source.Log(), srcLog), negotiated(e.endpoint.Log(), dstLog)...)

	paths := []path{
		{name: "raw TCP", port: e.echo.Port},
		{name: "OpenSSH", port: sshPort, clientPids: descendants(ossh.cmd.Process.Pid)},
		{name: "sshdeck", port: tunnelPort},
	}
	for _, pt := range paths {
		r.paths = append(r.paths, pt.name)
	}
	sshd := []int{e.source.Pid(), e.endpoint.Pid()}
	for rep := range sz.reps {
		for _, pt := range paths {
			s, err := measure(ctx, pt, sshd, 1, sz.single)
			if err != nil {
				return nil, fmt.Errorf("%s, one stream: %w", pt.name, err)
			}
			r.single[pt.name] = append(r.single[pt.name], s)
			m, err := measure(ctx, pt, sshd, sz.streams, sz.each)
			if err != nil {
				return nil, fmt.Errorf("%s, %d streams: %w", pt.name, sz.streams, err)
			}
			r.multi[pt.name] = append(r.multi[pt.name], m)
			o.Logf("tunnel: run %d/%d %s: one stream %.0f MB/s, %d streams %.0f MB/s", rep+1, sz.reps, pt.name, s.mbps, sz.streams, m.mbps)
		}
	}
	if profiles != "" {
		f, err := os.Create(filepath.Join(profiles, "tunnel-cpu.pprof"))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		_, err1 := measure(ctx, paths[2], sshd, 1, sz.single)
		_, err2 := measure(ctx, paths[2], sshd, sz.streams, sz.each)
		pprof.StopCPUProfile()
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("profiled run: %v %v", err1, err2)
		}
	}
	return r, nil
}

// measure carries n streams of each bytes at once to the echo through pt,
// every stream checked (sshdtest.RoundTrip: sent, echoed, SHA-256
// compared).
func measure(ctx context.Context, pt path, sshd []int, n int, each int64) (sample, error) {
	if err := ctx.Err(); err != nil {
		return sample{}, err
	}
	self0, client0, sshd0 := cpu([]int{os.Getpid()}, false), cpu(pt.clientPids, false), cpu(sshd, true)
	began := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = sshdtest.RoundTrip(pt.port, each) })
	}
	wg.Wait()
	took := time.Since(began)
	for _, err := range errs {
		if err != nil {
			return sample{}, err
		}
	}
	total := float64(n) * float64(each)
	gib := total / (1 << 30)
	return sample{
		mbps:      total / took.Seconds() / 1e6,
		selfCPU:   (cpu([]int{os.Getpid()}, false) - self0) / gib,
		clientCPU: (cpu(pt.clientPids, false) - client0) / gib,
		sshdCPU:   (cpu(sshd, true) - sshd0) / gib,
	}, nil
}

func (r *throughputResult) section() report.Section {
	var tables []report.Table
	for _, k := range []struct {
		what    string
		samples map[string][]sample
	}{
		{"one stream of " + size(r.sz.single), r.single},
		{fmt.Sprintf("%d streams of %s at once (aggregate)", r.sz.streams, size(r.sz.each)), r.multi},
	} {
		t := report.Table{Header: []string{k.what, "MB/s each way (median)", "min–max", "× OpenSSH", "CPU s/GiB: bench process", "ssh clients", "both sshd"}}
		ossh := median(k.samples["OpenSSH"], func(s sample) float64 { return s.mbps })
		for _, name := range r.paths {
			ss := k.samples[name]
			mbps := func(s sample) float64 { return s.mbps }
			lo, hi := spread(ss, mbps)
			ratio := median(ss, mbps) / ossh
			client := fmt.Sprintf("%.2f", median(ss, func(s sample) float64 { return s.clientCPU }))
			if name != "OpenSSH" {
				client = "–"
			}
			t.Add(name, fmt.Sprintf("%.0f", median(ss, mbps)), fmt.Sprintf("%.0f–%.0f", lo, hi), fmt.Sprintf("%.2f", ratio),
				fmt.Sprintf("%.2f", median(ss, func(s sample) float64 { return s.selfCPU })), client,
				fmt.Sprintf("%.2f", median(ss, func(s sample) float64 { return s.sshdCPU })))
		}
		tables = append(tables, t)
	}
	return report.Section{
		Title:   "Tunnels: throughput",
		Command: command,
		Text: fmt.Sprintf(`Bytes carried to the echo service (on the source's side) and back, through: raw TCP
straight to the echo port; OpenSSH, `+"`ssh -F <config> -J source -R 127.0.0.1:EP:127.0.0.1:SP endpoint -N`"+`
(what the contract says a tunnel replaces, through the same sshd pair); and an sshdeck
tunnel, connected through the tunnel service's HTTP API. Every stream sends n random bytes,
half-closes, and checks that the echo brings back the same (SHA-256). MB/s is 10^6 bytes a
second each way (n sent and n received at once); the median of %d runs, the paths taking turns.
The bench process is the client of every path (and the sshdeck tunnel's service); its CPU
includes generating and hashing the streams, the same for every path. CPU is user + system
seconds per GiB carried each way.

Negotiated (sshd's DEBUG1 log, client → server cipher of each SSH connection):
OpenSSH: %s. sshdeck: %s.`, r.sz.reps, list(r.ciphers["OpenSSH"]), list(r.ciphers["sshdeck"])),
		Tables: tables,
	}
}

func size(b int64) string {
	if b >= 1<<20 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%d KiB", b>>10)
}

func median(ss []sample, f func(sample) float64) float64 {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func spread(ss []sample, f func(sample) float64) (lo, hi float64) {
	for i, s := range ss {
		v := f(s)
		if i == 0 || v < lo {
			lo = v
		}
		if i == 0 || v > hi {
			hi = v
		}
	}
	return lo, hi
}

// tree returns roots and all their descendants.
func tree(all map[int]proc.Process, roots []int) []int {
	in := map[int]bool{}
	for _, r := range roots {
		if r > 0 {
			in[r] = true
		}
	}
	for grew := true; grew; {
		grew = false
		for pid, p := range all {
			if !in[pid] && in[p.PPID] {
				in[pid], grew = true, true
			}
		}
	}
	out := make([]int, 0, len(in))
	for pid := range in {
		out = append(out, pid)
	}
	return out
}

// descendants returns pid and the processes below it.
func descendants(pid int) []int { return tree(proc.All(), []int{pid}) }

// cpu sums the CPU seconds of pids, and of their descendants when deep.
func cpu(pids []int, deep bool) float64 {
	if len(pids) == 1 && pids[0] == os.Getpid() && !deep {
		return proc.SelfCPU().Seconds()
	}
	all := proc.All()
	if deep {
		pids = tree(all, pids)
	}
	var sum time.Duration
	for _, pid := range pids {
		sum += all[pid].CPU
	}
	return sum.Seconds()
}
