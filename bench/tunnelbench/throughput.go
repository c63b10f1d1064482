package tunnelbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/bench/proc"
	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// sameCipher is the cipher of every like-for-like comparison: the first of
// x/crypto's preferences, so the one the tunnel service negotiates with
// its defaults (which the bench checks in sshd's log rather than assumes),
// and forced on OpenSSH's client, whose own first choice is ChaCha20.
const sameCipher = "aes128-gcm@openssh.com"

// path is one way to the echo service, up for the runs.
type path struct {
	name string
	port int
	// clientPids are the processes of the tunnel's client side besides
	// this one (OpenSSH's ssh, sshdeck forward), whose CPU is the tunnel's.
	clientPids []int
	// service says the tunnel runs in this process (the tunnel service):
	// its CPU is this process's beyond what the raw TCP path costs it (the
	// streams' generation, hashing and echo, alike for every path).
	service bool
	// cipher is what every SSH connection of the path must have
	// negotiated; "" accepts whatever each side's defaults give.
	cipher     string
	negotiated []string // what sshd logged, "software: cipher"
	stop       func()
}

// contender starts one path. Adding a way to carry the streams (issue 19's
// direct mode: a tunnel connected with Mode "direct", against the
// "OpenSSH ssh -R, one hop" path) is one such function and its line in
// contenders, and its goal a line in comparisons.
type contender func(ctx context.Context, e *env, p *ports) (*path, error)

// Row names, which comparisons refer to.
const (
	rawTCP        = "raw TCP"
	opensshJump   = "OpenSSH ssh -J source -R"
	sshdeckRelay  = "sshdeck relay"
	opensshOneHop = "OpenSSH ssh -R, one hop (as on the source)"
	sshdeckDirect = "sshdeck direct"
	opensshJumpD  = "OpenSSH ssh -J source -R, OpenSSH's default cipher"
	// The direct tunnel's client is OpenSSH itself, run by the service on
	// the source with no config (-F /dev/null): its cipher is OpenSSH's
	// default, and so is its reference's.
	opensshOneHopD = "OpenSSH ssh -R, one hop (as on the source), OpenSSH's default cipher"
	// Forwards to the user's machine (this one): one SSH hop each, to the
	// source, plus a WebSocket hop to the tunnel service for sshdeck's.
	sshdeckForward = "sshdeck forward -L"
	opensshLocal   = "OpenSSH ssh -L"
)

// defaultCipher is what OpenSSH 9.2's client and server agree on by
// default: the cipher of the direct comparison, where both sides are
// OpenSSH's client.
const defaultCipher = "chacha20-poly1305@openssh.com"

// contenders are the paths in the order of the table.
var contenders = []contender{
	func(ctx context.Context, e *env, p *ports) (*path, error) {
		return &path{name: rawTCP, port: e.echo.Port, stop: func() {}}, nil
	},
	openSSHPath(opensshJump, sshRun{cipher: sameCipher}),
	relayPath,
	openSSHPath(opensshOneHop, sshRun{oneHop: true, cipher: sameCipher}),
	openSSHPath(opensshJumpD, sshRun{}),
	directPath,
	openSSHPath(opensshOneHopD, sshRun{oneHop: true, cipher: defaultCipher}),
	forwardPath,
	openSSHPath(opensshLocal, sshRun{local: true, cipher: sameCipher}),
}

// comparison is a ratio the section reports: path's throughput over ref's
// in the same runs, with a goal when it has one.
type comparison struct {
	what      string
	path, ref string
	goal      float64 // the least ratio, 0 when none
}

var comparisons = []comparison{
	{"same cipher", sshdeckRelay, opensshJump, 1.0},
	{"same cipher, OpenSSH's default", sshdeckDirect, opensshOneHopD, 0.95},
	{"each side's defaults", sshdeckRelay, opensshJumpD, 0},
	{"same cipher", sshdeckForward, opensshLocal, 0},
}

// openSSHPath is OpenSSH's client doing the tunnel's job (openssh.go).
func openSSHPath(name string, how sshRun) contender {
	return func(ctx context.Context, e *env, p *ports) (*path, error) {
		port, err := p.get()
		if err != nil {
			return nil, err
		}
		off := e.logOffsets()
		ossh, _, err := e.startOpenSSH(ctx, port, how)
		if err != nil {
			return nil, err
		}
		return &path{name: name, port: port, clientPids: descendants(ossh.cmd.Process.Pid),
			cipher: how.cipher, negotiated: e.negotiatedSince(off), stop: ossh.stop}, nil
	}
}

// relayPath is an sshdeck tunnel in relay mode, connected through the
// tunnel service's HTTP API with the service's defaults.
func relayPath(ctx context.Context, e *env, p *ports) (*path, error) {
	return e.sshdeckPath(ctx, p, sshdeckRelay, e.request("throughput-relay", 0))
}

// directPath is an sshdeck tunnel in direct mode: the service runs
// OpenSSH's ssh -N -R on the source, and the bytes go source → endpoint.
// Its cipher is the one of the connection that carries them, the source's
// OpenSSH client to the endpoint's sshd; the service's own connections
// (to the source, and its probe of the endpoint's key) carry none.
func directPath(ctx context.Context, e *env, p *ports) (*path, error) {
	req := e.request("throughput-direct", 0)
	req.Mode = string(sshdeck.TunnelDirect)
	off := e.logOffsets()
	pt, err := e.sshdeckPath(ctx, p, sshdeckDirect, req)
	if err != nil {
		return nil, err
	}
	pt.cipher = defaultCipher
	pt.negotiated = slices.DeleteFunc(negotiated(e.endpoint.Log(), off[1]), func(n string) bool { return !strings.HasPrefix(n, "OpenSSH_") })
	return pt, nil
}

// sshdeckPath connects req (its endpoint port set here) and waits until
// its endpoint port accepts.
func (e *env) sshdeckPath(ctx context.Context, p *ports, name string, req *tunnel.ConnectRequest) (_ *path, err error) {
	port, err := p.get()
	if err != nil {
		return nil, err
	}
	req.EndpointPort = &port
	stream, err := e.openStream(ctx)
	if err != nil {
		return nil, err
	}
	defer stream.close()
	off := e.logOffsets()
	if err := e.post(ctx, "/ssh/tunnel/connect", req); err != nil {
		return nil, err
	}
	stop := func() { e.disconnect(context.Background(), req.Name) }
	defer func() {
		if err != nil {
			stop()
		}
	}()
	if err := stream.wait(ctx, req.Name, sshdeck.TunnelConnected); err != nil {
		return nil, err
	}
	if err := waitListening(ctx, port, listenPatience); err != nil {
		return nil, err
	}
	return &path{name: name, port: port, service: true, cipher: sameCipher, negotiated: e.negotiatedSince(off), stop: stop}, nil
}

// logOffsets are where both sshd logs end now.
func (e *env) logOffsets() [2]int { return [2]int{len(e.source.Log()), len(e.endpoint.Log())} }

// negotiatedSince is what the connections logged by either sshd since off
// negotiated.
func (e *env) negotiatedSince(off [2]int) []string {
	return append(negotiated(e.source.Log(), off[0]), negotiated(e.endpoint.Log(), off[1])...)
}

// sample is one measurement of one path.
type sample struct {
	mbps float64 // MB/s each way (10^6 bytes; n sent and n echoed back)
	// CPU seconds per GiB carried (each way): this process, the tunnel's
	// other client processes, both sshd trees.
	selfCPU, clientCPU, sshdCPU float64
}

type throughputResult struct {
	sz         sizes
	gomaxprocs int
	paths      []*path
	single     map[string][]sample
	multi      map[string][]sample
}

// throughput carries sz.single bytes in one stream, then sz.streams
// streams of sz.each bytes at once, through each path, sz.reps times,
// the paths taking turns so that a change in the machine's load touches
// them alike. Every path is up for all the runs, through the same sshd
// pair, on the same cores (no pinning: the tunnel, its client and both
// sshd share the machine's, as they would on one host).
func (e *env) throughput(ctx context.Context, o report.Options, p *ports, sz sizes, profiles string) (*throughputResult, error) {
	r := &throughputResult{sz: sz, gomaxprocs: runtime.GOMAXPROCS(0), single: map[string][]sample{}, multi: map[string][]sample{}}
	defer func() {
		for _, pt := range r.paths {
			pt.stop()
		}
	}()
	for _, start := range contenders {
		pt, err := start(ctx, e, p)
		if err != nil {
			return nil, err
		}
		r.paths = append(r.paths, pt)
		if pt.cipher != "" {
			if len(pt.negotiated) == 0 {
				return nil, fmt.Errorf("%s: sshd logged no connection of it, so no cipher to check", pt.name)
			}
			for _, n := range pt.negotiated {
				if !strings.HasSuffix(n, ": "+pt.cipher) {
					return nil, fmt.Errorf("%s negotiated %s, not %s: the comparison would not be like with like", pt.name, list(pt.negotiated), pt.cipher)
				}
			}
		}
	}
	sshd := []int{e.source.Pid(), e.endpoint.Pid()}
	for rep := range sz.reps {
		for _, pt := range r.paths {
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
	for _, pt := range r.paths {
		if file, ok := profiled[pt.name]; ok && profiles != "" {
			if err := profile(ctx, filepath.Join(profiles, file), pt, sshd, sz); err != nil {
				return nil, fmt.Errorf("%s, profiled run: %w", pt.name, err)
			}
		}
	}
	return r, nil
}

// profiled are the paths that the tunnel service in this process carries,
// and the files of their CPU profiles (ProfileEnv).
var profiled = map[string]string{sshdeckRelay: "tunnel-cpu.pprof", sshdeckForward: "tunnel-forward-cpu.pprof"}

// profile writes the CPU profile of this process into file while pt
// carries one run of each load.
func profile(ctx context.Context, file string, pt *path, sshd []int, sz sizes) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	_, err1 := measure(ctx, pt, sshd, 1, sz.single)
	_, err2 := measure(ctx, pt, sshd, sz.streams, sz.each)
	pprof.StopCPUProfile()
	return errors.Join(err1, err2)
}

// measure carries n streams of each bytes at once to the echo through pt,
// every stream checked (sshdtest.RoundTrip: sent, echoed, SHA-256
// compared).
func measure(ctx context.Context, pt *path, sshd []int, n int, each int64) (sample, error) {
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

func mbps(s sample) float64 { return s.mbps }

// cipherNames are the ciphers of negotiated ("software: cipher"), once each.
func cipherNames(negotiated []string) []string {
	var out []string
	for _, n := range negotiated {
		if i := strings.LastIndex(n, ": "); i >= 0 {
			n = n[i+2:]
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// serviceCPU is the CPU seconds per GiB of the tunnel service, for a path
// it carries: its share of this process, the CPU beyond the raw TCP
// path's in the same runs.
func serviceCPU(samples map[string][]sample, pt *path) float64 {
	if !pt.service {
		return 0
	}
	return median(samples[pt.name], func(s sample) float64 { return s.selfCPU }) -
		median(samples[rawTCP], func(s sample) float64 { return s.selfCPU })
}

// clientCPU is the CPU seconds per GiB of the tunnel's client processes
// (OpenSSH's ssh, sshdeck forward).
func clientCPU(samples map[string][]sample, pt *path) float64 {
	return median(samples[pt.name], func(s sample) float64 { return s.clientCPU })
}

// tunnelCPU is the CPU seconds per GiB of the tunnel's own client side:
// the tunnel service's and its client processes' (for a forward, both).
func tunnelCPU(samples map[string][]sample, pt *path) float64 {
	return serviceCPU(samples, pt) + clientCPU(samples, pt)
}

func (r *throughputResult) path(name string) *path {
	for _, pt := range r.paths {
		if pt.name == name {
			return pt
		}
	}
	return nil
}

func (r *throughputResult) section() report.Section {
	loads := []struct {
		what    string
		samples map[string][]sample
	}{
		{"one stream of " + size(r.sz.single), r.single},
		{fmt.Sprintf("%d streams of %s at once (aggregate)", r.sz.streams, size(r.sz.each)), r.multi},
	}
	var tables []report.Table
	for _, l := range loads {
		t := report.Table{Header: []string{l.what, "cipher", "MB/s each way (median)", "min–max",
			"CPU s/GiB: tunnel service", "tunnel's client processes", "both sshd", "bench process"}}
		for _, pt := range r.paths {
			ss := l.samples[pt.name]
			lo, hi := spread(ss, mbps)
			service, client, cipher := "–", "–", pt.cipher
			if pt.service {
				service = fmt.Sprintf("%.2f", serviceCPU(l.samples, pt))
			}
			if len(pt.clientPids) > 0 {
				client = fmt.Sprintf("%.2f", clientCPU(l.samples, pt))
			}
			switch {
			case pt.name == rawTCP:
				cipher = "–"
			case cipher == "":
				cipher = "defaults: " + list(cipherNames(pt.negotiated))
			}
			t.Add(pt.name, cipher, fmt.Sprintf("%.0f", median(ss, mbps)), fmt.Sprintf("%.0f–%.0f", lo, hi), service, client,
				fmt.Sprintf("%.2f", median(ss, func(s sample) float64 { return s.sshdCPU })),
				fmt.Sprintf("%.2f", median(ss, func(s sample) float64 { return s.selfCPU })))
		}
		tables = append(tables, t)
	}
	goals := report.Table{Header: []string{"comparison", "× one stream", fmt.Sprintf("× %d streams", r.sz.streams), "CPU s/GiB, one stream: tunnel / reference", "goal"}}
	for _, c := range comparisons {
		pt, ref := r.path(c.path), r.path(c.ref)
		goal := "–"
		if c.goal > 0 {
			goal = fmt.Sprintf("≥ %.2f×", c.goal)
		}
		if pt == nil || ref == nil {
			goals.Add(fmt.Sprintf("%s against %s (%s)", c.path, c.ref, c.what), "not measured", "not measured", "–", goal+": no "+c.path+" path yet")
			continue
		}
		one := median(r.single[pt.name], mbps) / median(r.single[ref.name], mbps)
		many := median(r.multi[pt.name], mbps) / median(r.multi[ref.name], mbps)
		if c.goal > 0 {
			verdict := "met"
			if one < c.goal || many < c.goal {
				verdict = "not met"
			}
			goal += ": **" + verdict + "**"
		}
		goals.Add(fmt.Sprintf("%s against %s (%s)", pt.name, ref.name, c.what), fmt.Sprintf("%.2f", one), fmt.Sprintf("%.2f", many),
			fmt.Sprintf("%.2f / %.2f", tunnelCPU(r.single, pt), tunnelCPU(r.single, ref)), goal)
	}
	tables = append(tables, goals)
	var neg []string
	for _, pt := range r.paths {
		if pt.name != rawTCP {
			neg = append(neg, pt.name+": "+list(pt.negotiated))
		}
	}
	return report.Section{
		Title:   "Tunnels: throughput",
		Command: command,
		Text: fmt.Sprintf(`Bytes carried to the echo service (on the source's side) and back, through: raw TCP
straight to the echo port; OpenSSH, `+"`ssh -F <config> -J source -R 127.0.0.1:EP:127.0.0.1:SP endpoint -N`"+`
(what a relay tunnel replaces, through the same sshd pair); an sshdeck relay tunnel,
connected through the tunnel service's HTTP API; OpenSSH `+"`ssh -R`"+` without -J, as run on
the source itself (what a direct tunnel replaces); the first OpenSSH path again with
OpenSSH's default cipher; an sshdeck direct tunnel (the service runs OpenSSH's `+"`ssh -N -R`"+`
on the source) and the one-hop OpenSSH path with the same default cipher. Then forwards to
this machine, standing for the user's: `+"`sshdeck forward -L LP:127.0.0.1:SP --via source`"+`,
the real binary as a process of its own, the source stored as the bench user's host: forward
process → one WebSocket (yamux streams) over loopback HTTP → the in-process tunnel service →
a direct-tcpip channel of its SSH connection to the source (from its pool: the relay
tunnel's, idle meanwhile) → the source's sshd → echo; against OpenSSH
`+"`ssh -N -L LP:127.0.0.1:SP source`"+`: ssh → the source's sshd → echo. One SSH hop in both,
and a WebSocket hop more in sshdeck's. A path whose cipher column says
%s runs it on every SSH connection: forced on OpenSSH's client
(`+"`Ciphers`"+` in its config, read by the ProxyJump ssh too), x/crypto's first choice on
sshdeck's; the others run OpenSSH's defaults on both sides; the bench stops if sshd's log
shows anything else. Every stream sends n random bytes, half-closes, and checks that the echo
brings back the same (SHA-256). MB/s is 10^6 bytes a second each way (n sent and n received
at once); the median of %d runs, the paths taking turns, all up at once over the same two
sshd, the same data sizes and the same cores (GOMAXPROCS %d, no pinning). CPU is user +
system seconds per GiB carried each way. The tunnel service's is the bench process's CPU
(getrusage) beyond what the raw TCP runs cost it, which is the streams' generation, hashing
and echo, alike on every path. The tunnel's client processes are OpenSSH's ssh, or the
`+"`sshdeck forward`"+` process (/proc/<pid>/stat); the ssh that a direct tunnel runs on the
source counts under sshd. A comparison's CPU adds the two.

Negotiated (sshd's DEBUG1 log, client → server cipher of each SSH connection; for %s,
every connection the service made to the source, one of which it rides):
%s.`, "`"+sameCipher+"`", r.sz.reps, r.gomaxprocs, sshdeckForward, strings.Join(neg, ". ")),
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
