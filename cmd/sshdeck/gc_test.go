package main

import (
	"runtime/debug"
	"testing"
)

// TestGCPercent: serve sets its GC target, unless GOGC says otherwise.
func TestGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	setGCPercent()
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Fatalf("GC percent %d, want %d", got, gcPercent)
	}
	t.Setenv("GOGC", "50")
	setGCPercent()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent %d with GOGC set, want it left alone", got)
	}
}
