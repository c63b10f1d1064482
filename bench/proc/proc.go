// Package proc reads what the benchmarks need of Linux's /proc: processes'
// CPU time and parents, their resident memory (now and at its peak), and
// "Key: 123 kB" lines of memory figures.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tick is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, which
// Linux fixes at 100 on every architecture Go runs on.
const tick = 10 * time.Millisecond

// Process is what /proc/<pid>/stat says of one process.
type Process struct {
	PPID int
	CPU  time.Duration // user + system
}

// Stat reads /proc/<pid>/stat.
func Stat(pid int) (Process, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Process{}, err
	}
	return parseStat(b)
}

// parseStat reads the fields after the command name, which is in
// parentheses and may hold spaces: ppid is field 4, utime 14, stime 15.
func parseStat(b []byte) (Process, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Process{}, errors.New("unreadable /proc/<pid>/stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return Process{}, errors.New("unreadable /proc/<pid>/stat: too few fields")
	}
	ppid, err1 := strconv.Atoi(f[1])
	utime, err2 := strconv.ParseInt(f[11], 10, 64)
	stime, err3 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Process{}, fmt.Errorf("unreadable /proc/<pid>/stat: %w", err)
	}
	return Process{PPID: ppid, CPU: time.Duration(utime+stime) * tick}, nil
}

// RunTime is the CPU time the process's threads have used so far as the
// scheduler counts it, to the nanosecond: the sum of se.sum_exec_runtime
// (milliseconds) in /proc/<pid>/task/*/sched. The user and system times of
// its rusage, once it has exited, add up to the same count (the kernel
// scales them to it), so the two subtract. Threads that have exited are
// not in it (Go's rarely exit). Where the kernel keeps no sched files
// (built without CONFIG_SCHED_DEBUG) it is Stat's CPU, to 10 ms.
func RunTime(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/sched", pid, task.Name()))
		if errors.Is(err, os.ErrNotExist) && total == 0 {
			p, err := Stat(pid)
			return p.CPU, err
		}
		if err != nil {
			continue // the thread exited while we read
		}
		d, err := parseSched(b)
		if err != nil {
			return 0, err
		}
		total += d
	}
	return total, nil
}

// parseSched reads se.sum_exec_runtime of a /proc/<pid>/task/<tid>/sched,
// "se.sum_exec_runtime   :   12.345678" (milliseconds).
func parseSched(b []byte) (time.Duration, error) {
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "se.sum_exec_runtime" {
			continue
		}
		ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, fmt.Errorf("unreadable se.sum_exec_runtime %q: %w", strings.TrimSpace(v), err)
		}
		return time.Duration(ms * float64(time.Millisecond)), nil
	}
	return 0, errors.New("no se.sum_exec_runtime in /proc/<pid>/task/<tid>/sched")
}

// All reads every process's parent and CPU time, by pid. Processes that
// end while it reads are left out.
func All() map[int]Process {
	out := map[int]Process{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := Stat(pid); err == nil {
			out[pid] = p
		}
	}
	return out
}

// SelfCPU is the CPU time (user + system) this process has used, more
// precise than /proc's ticks.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// KB reads the "Key:   123 kB" line of path (/proc/meminfo,
// /proc/self/status), 0 when it has none.
func KB(path, key string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := kb(b, key)
	return n
}

// kb is the value of the "Key:   123 kB" line of text, and whether there
// is one.
func kb(text []byte, key string) (uint64, bool) {
	for line := range strings.Lines(string(text)) {
		k, v, ok := strings.Cut(line, ":")
		if ok && k == key {
			var n uint64
			fmt.Sscanf(strings.TrimSpace(v), "%d kB", &n)
			return n, true
		}
	}
	return 0, false
}

// Memory is what /proc/<pid>/status says of a process's resident memory,
// in bytes (the kernel's "kB" are KiB).
type Memory struct {
	// RSS is VmRSS, the resident set now; Peak is VmHWM, the largest
	// resident set the process has had (its high-water mark) as far as the
	// kernel has recorded it: it raises the mark lazily (when it unmaps,
	// e.g.), so a VmRSS read earlier may be above a later VmHWM.
	RSS, Peak uint64
}

// Status reads the resident memory of a running process from
// /proc/<pid>/status.
func Status(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	return parseStatus(b)
}

func parseStatus(b []byte) (Memory, error) {
	rss, ok1 := kb(b, "VmRSS")
	peak, ok2 := kb(b, "VmHWM")
	if !ok1 || !ok2 {
		// A zombie's status has no Vm lines: it holds no memory to read.
		return Memory{}, errors.New("no VmRSS or VmHWM in /proc/<pid>/status: the process has exited")
	}
	return Memory{RSS: rss << 10, Peak: peak << 10}, nil
}
