package report

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/bench/proc"
)

// Machine describes where the figures were measured.
type Machine struct {
	CPU     string
	Cores   int
	Memory  string
	Kernel  string
	Go      string
	OpenSSH string
	Date    time.Time
}

// ThisMachine reads what it can of the machine; what it cannot read is "?".
func ThisMachine() Machine {
	return Machine{
		CPU:     firstValue("/proc/cpuinfo", "model name"),
		Cores:   runtime.NumCPU(),
		Memory:  memory(),
		Kernel:  strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		Go:      runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		OpenSSH: openSSH(),
		Date:    time.Now().UTC(),
	}
}

// Markdown writes the machine as a list.
func (m Machine) Markdown(w *bytes.Buffer) {
	fmt.Fprintf(w, "- CPU: %s, %d cores (GOMAXPROCS %d)\n", m.CPU, m.Cores, runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "- Memory: %s\n", m.Memory)
	fmt.Fprintf(w, "- Linux %s, %s, %s\n", m.Kernel, m.Go, m.OpenSSH)
	fmt.Fprintf(w, "- Measured %s\n", m.Date.Format("2006-01-02 15:04 MST"))
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	return string(b)
}

// firstValue is the value of the first "key : value" line of path.
func firstValue(path, key string) string {
	sc := bufio.NewScanner(strings.NewReader(readFile(path)))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func memory() string {
	kb := proc.KB("/proc/meminfo", "MemTotal")
	if kb == 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
}

// openSSH is `ssh -V`, which prints to stderr.
func openSSH() string {
	out, err := exec.Command("ssh", "-V").CombinedOutput()
	if err != nil {
		return "OpenSSH ?"
	}
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), ",")
	return v
}
