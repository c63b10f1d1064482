package tunnel_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
)

// Stack budget of an idle tunnel's loop (loop.go). The GC halves a
// goroutine's stack only while less than a quarter of it is in use,
// counting the 800 bytes the runtime keeps free for nosplit functions
// (runtime.shrinkstack, stackNosplit on linux/amd64): a loop parked with
// less than 2048-800 bytes in use is shrunk to 4 KiB; one more byte and
// it keeps 8 KiB, for as long as the tunnel is up.
const (
	idleStackSize   = 4 << 10
	stackNosplit    = 800
	idleStackBudget = idleStackSize/2 - stackNosplit // bytes in use, at most
)

// TestIdleStack connects a few tunnels, carries a connection through
// each, lets the GC shrink what it can, and reads every tunnel loop's
// stack from a heap dump: each must be idleStackSize at most, with
// idleStackBudget in use at most, which the bench's memory per idle
// tunnel (bench/tunnelbench/memory.go) counts on. A failure lists the
// loop's frames.
//
// The budget is a build's without -race, whose frames are larger (the
// loop takes about 1.5 KiB there): under -race, the test runs itself
// again without it.
func TestIdleStack(t *testing.T) {
	if raceBuild() {
		runWithoutRace(t)
		return
	}
	w := tunneltest.NewWorld(t)
	m := w.Manager("a")
	const tunnels = 3
	for i := range tunnels {
		port := sshdtest.FreePort(t)
		name := fmt.Sprintf("stack-%d", i)
		connect(t, m, w.Request(name, port))
		waitFor(t, m, name, "connected", state(sshdeck.TunnelConnected))
		if err := sshdtest.RoundTrip(port, 64<<10); err != nil {
			t.Fatal(err)
		}
	}
	// Each GC halves a stack at most once; a loop woken by a keepalive
	// tick is not idle at that moment: dump again.
	var loops []goroutineStack
	for i := 0; ; i++ {
		runtime.GC()
		loops = tunnelLoops(t)
		settled := len(loops) == tunnels
		for _, g := range loops {
			settled = settled && g.parked() && g.size() <= idleStackSize
		}
		if settled || i == 20 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(loops) != tunnels {
		t.Fatalf("found %d tunnel loops in the heap dump, want %d", len(loops), tunnels)
	}
	for _, g := range loops {
		t.Logf("goroutine %d: stack %d bytes, %d in use (budget %d, %d to spare)\n%s", g.id, g.size(), g.used(), idleStackBudget, int(idleStackBudget)-int(g.used()), g.frameList())
		if !g.parked() {
			t.Errorf("goroutine %d never parked in the loop's select:\n%s", g.id, g.frameList())
		} else if g.size() > idleStackSize || g.used() > idleStackBudget {
			t.Errorf("an idle tunnel's loop holds a stack of %d bytes with %d in use; want at most %d with at most %d in use. Its frames:\n%s",
				g.size(), g.used(), idleStackSize, idleStackBudget, g.frameList())
		}
	}
}

// noRaceEnv marks the run of TestIdleStack that runWithoutRace starts.
const noRaceEnv = "SSHDECK_TEST_IDLE_STACK_NO_RACE"

func raceBuild() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// runWithoutRace runs TestIdleStack in a test binary of this package built
// without -race, and fails as it does.
func runWithoutRace(t *testing.T) {
	t.Helper()
	if os.Getenv(noRaceEnv) != "" {
		t.Fatal("go test -race=false built a -race test binary")
	}
	cmd := exec.Command("go", "test", "-race=false", "-count=1", "-run", "^TestIdleStack$", "-v", ".")
	cmd.Env = append(os.Environ(), noRaceEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("go test -race=false -run '^TestIdleStack$' .:\n%s", out)
	if err != nil {
		t.Fatalf("TestIdleStack without -race: %v", err)
	}
}

// goroutineStack is one goroutine of a heap dump: its stack's bounds
// and its frames, innermost first.
type goroutineStack struct {
	id, g, sp uint64
	lo, hi    uint64
	frames    []stackFrame
}

type stackFrame struct {
	name string
	size uint64
}

func (g *goroutineStack) size() uint64 { return g.hi - g.lo }

// parked reports whether the goroutine waits in runner.serve's select,
// as an idle tunnel's loop does.
func (g *goroutineStack) parked() bool {
	return len(g.frames) > 3 && g.frames[0].name == "runtime.gopark" && g.frames[1].name == "runtime.selectgo" &&
		strings.HasSuffix(g.frames[2].name, ".(*runner).serve")
}
func (g *goroutineStack) used() uint64 { return g.hi - g.sp }

func (g *goroutineStack) frameList() string {
	var b strings.Builder
	for _, f := range g.frames {
		fmt.Fprintf(&b, "\t%5d  %s\n", f.size, f.name)
	}
	return b.String()
}

// tunnelLoops writes a heap dump (runtime/debug.WriteHeapDump) and
// returns the goroutines that run a tunnel's loop (runner.serve).
func tunnelLoops(t *testing.T) []goroutineStack {
	t.Helper()
	path := filepath.Join(t.TempDir(), "heap.dump")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	debug.WriteHeapDump(f.Fd())
	f.Close()
	defer os.Remove(path)

	gs, err := readHeapDump(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var loops []goroutineStack
	want := map[uint64]*goroutineStack{}
	for _, g := range gs {
		for _, fr := range g.frames {
			if strings.HasSuffix(fr.name, ".(*runner).serve") {
				loops = append(loops, g)
				break
			}
		}
	}
	for i := range loops {
		want[loops[i].g] = &loops[i]
	}
	// The stack's bounds are the first two words of runtime.g (its
	// field stack, whose offset the runtime's assembly relies on), an
	// object of the dump's own.
	if _, err := readHeapDump(path, want); err != nil {
		t.Fatal(err)
	}
	for _, g := range loops {
		if g.hi == 0 || g.hi < g.sp || g.sp < g.lo {
			t.Fatalf("goroutine %d: stack bounds [%#x, %#x) do not hold its sp %#x", g.id, g.lo, g.hi, g.sp)
		}
	}
	return loops
}

// Records of the heap dump format (runtime/heapdump.go).
const (
	tagEOF         = 0
	tagObject      = 1
	tagOtherRoot   = 2
	tagType        = 3
	tagGoroutine   = 4
	tagStackFrame  = 5
	tagParams      = 6
	tagFinalizer   = 7
	tagItab        = 8
	tagOSThread    = 9
	tagDefer       = 14
	tagPanic       = 15
	fieldKindEol   = 0
	heapDumpHeader = "go1.7 heap dump\n"
)

// readHeapDump reads the goroutines of a heap dump up to its first
// record past them. With objects, it fills in the stack bounds of the
// goroutines it holds, by address.
func readHeapDump(path string, objects map[uint64]*goroutineStack) ([]goroutineStack, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &dumpReader{r: bufio.NewReaderSize(f, 1<<20)}
	header := make([]byte, len(heapDumpHeader))
	if _, err := io.ReadFull(r.r, header); err != nil || string(header) != heapDumpHeader {
		return nil, fmt.Errorf("not a heap dump (%q, %v)", header, err)
	}
	var gs []goroutineStack
	for {
		tag := r.uint()
		if r.err != nil {
			return nil, fmt.Errorf("heap dump: %w", r.err)
		}
		switch tag {
		case tagParams:
			r.uint()
			r.uint()
			r.uint()
			r.uint()
			r.skipBytes()
			r.skipBytes()
			r.uint()
		case tagType:
			r.uint()
			r.uint()
			r.skipBytes()
			r.uint()
		case tagItab:
			r.uint()
			r.uint()
		case tagObject:
			addr := r.uint()
			g := objects[addr]
			if g == nil {
				r.skipBytes()
				r.skipFields()
				continue
			}
			if contents := r.bytes(); len(contents) >= 16 {
				g.lo = binary.LittleEndian.Uint64(contents)
				g.hi = binary.LittleEndian.Uint64(contents[8:])
			}
			r.skipFields()
		case tagGoroutine:
			var g goroutineStack
			g.g = r.uint()
			g.sp = r.uint()
			g.id = r.uint()
			for range 5 { // gopc, status, system, background, waitsince
				r.uint()
			}
			r.skipBytes() // waitreason
			for range 4 { // ctxt, m, defer, panic
				r.uint()
			}
			gs = append(gs, g)
		case tagStackFrame:
			for range 3 { // sp, depth, child sp
				r.uint()
			}
			size := r.skipBytes()
			for range 3 { // entry, pc, continpc
				r.uint()
			}
			name := string(r.bytes())
			r.skipFields()
			if len(gs) > 0 {
				g := &gs[len(gs)-1]
				g.frames = append(g.frames, stackFrame{name, uint64(size)})
			}
		case tagDefer:
			for range 7 {
				r.uint()
			}
		case tagPanic:
			for range 6 {
				r.uint()
			}
		case tagOSThread, tagOtherRoot, tagFinalizer, tagEOF:
			// Past the goroutines.
			return gs, nil
		default:
			return nil, fmt.Errorf("heap dump: unexpected record %d", tag)
		}
	}
}

type dumpReader struct {
	r   *bufio.Reader
	err error
}

func (d *dumpReader) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	if err != nil {
		d.err = err
	}
	return v
}

// bytes reads a length and that many bytes.
func (d *dumpReader) bytes() []byte {
	n := d.uint()
	if d.err != nil {
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		d.err = err
	}
	return b
}

// skipBytes skips a length and that many bytes, and returns the length.
func (d *dumpReader) skipBytes() int {
	n := d.uint()
	if d.err == nil {
		if _, err := d.r.Discard(int(n)); err != nil {
			d.err = err
		}
	}
	return int(n)
}

func (d *dumpReader) skipFields() {
	for d.err == nil && d.uint() != fieldKindEol {
		d.uint()
	}
}
