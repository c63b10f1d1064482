package proc

import (
	"os"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A command name with spaces and a parenthesis, as a process may name itself.
	line := "4242 (sshd: root (priv)) S 17 4242 4242 0 -1 4194560 1000 0 0 0 250 37 0 0 20 0 1 0 100 1000 100"
	p, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if p.PPID != 17 || p.CPU != 2870*time.Millisecond {
		t.Errorf("parseStat = %+v, want ppid 17, CPU 2.87s", p)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S x 1 1 0 -1 0 0 0 0 0 y 1"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) gave no error", bad)
		}
	}
}

func TestThisProcess(t *testing.T) {
	p, err := Stat(os.Getpid())
	if err != nil || p.PPID != os.Getppid() {
		t.Fatalf("Stat(self) = %+v, %v; want ppid %d", p, err, os.Getppid())
	}
	if _, ok := All()[os.Getpid()]; !ok {
		t.Error("All has no entry for this process")
	}
	if KB("/proc/self/status", "VmRSS") == 0 || KB("/proc/meminfo", "MemTotal") == 0 {
		t.Error("KB read no RSS or no MemTotal")
	}
	if KB("/proc/meminfo", "NoSuchKey") != 0 {
		t.Error("KB of a missing key is not 0")
	}
	start := SelfCPU()
	for deadline := time.Now().Add(20 * time.Millisecond); time.Now().Before(deadline); {
	}
	if SelfCPU() <= start {
		t.Error("SelfCPU did not grow while spinning")
	}
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tsshdeck\nState:\tS (sleeping)\nVmPeak:\t 1300000 kB\nVmSize:\t 1250000 kB\n" +
		"VmHWM:\t   41234 kB\nVmRSS:\t   30001 kB\nRssAnon:\t   20000 kB\nThreads:\t8\n"
	m, err := parseStatus([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if m.Peak != 41234<<10 || m.RSS != 30001<<10 {
		t.Errorf("parseStatus = %+v, want peak 41234 KiB (VmHWM, not VmPeak) and RSS 30001 KiB", m)
	}
	// A zombie has no Vm lines.
	if _, err := parseStatus([]byte("Name:\tsshdeck\nState:\tZ (zombie)\nThreads:\t1\n")); err == nil {
		t.Error("parseStatus of a zombie's status gave no error")
	}
}

func TestStatusOfThisProcess(t *testing.T) {
	m, err := Status(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Touch 32 MiB: the peak is at least that, and at least the RSS.
	b := make([]byte, 32<<20)
	for i := range b {
		b[i] = 1
	}
	after, err := Status(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS == 0 || after.Peak < after.RSS || after.Peak < m.RSS+16<<20 {
		t.Errorf("before %+v, after touching 32 MiB %+v", m, after)
	}
	if b[len(b)-1] != 1 {
		t.Fatal("unreachable")
	}
	if _, err := Status(1 << 30); err == nil {
		t.Error("Status of no process gave no error")
	}
}

func TestParseSched(t *testing.T) {
	sched := "sshdeck (4242, #threads: 5)\n-------------------\nse.exec_start                                :       8932470.953608\n" +
		"se.vruntime                                  :         14350.546299\nse.sum_exec_runtime                          :            12.774866\n"
	d, err := parseSched([]byte(sched))
	if err != nil || d != 12774866*time.Nanosecond {
		t.Errorf("parseSched = %v, %v; want 12.774866ms", d, err)
	}
	if _, err := parseSched([]byte("se.vruntime : 1\n")); err == nil {
		t.Error("parseSched without se.sum_exec_runtime gave no error")
	}
}

// TestRunTime: this process's run time grows while it spins, and is about
// what its rusage says.
func TestRunTime(t *testing.T) {
	start, err := RunTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Millisecond); time.Now().Before(deadline); {
	}
	end, err := RunTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if end-start < 10*time.Millisecond {
		t.Errorf("RunTime grew %v over 30 ms of spinning", end-start)
	}
	if self := SelfCPU(); end > self+50*time.Millisecond || end < self/2 {
		t.Errorf("RunTime %v, rusage %v: far apart", end, self)
	}
}
