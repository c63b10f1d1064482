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
