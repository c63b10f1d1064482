package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestTuneGC: serve sets its GC target and memory limit, unless GOGC and
// GOMEMLIMIT say otherwise.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	tuneGC()
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Fatalf("GC percent %d, want %d", got, gcPercent)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != memoryLimit {
		t.Fatalf("memory limit %d, want %d", got, memoryLimit)
	}
	t.Setenv("GOGC", "50")
	t.Setenv("GOMEMLIMIT", "1GiB")
	tuneGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent %d with GOGC set, want it left alone", got)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Fatalf("memory limit %d with GOMEMLIMIT set, want it left alone", got)
	}
}
