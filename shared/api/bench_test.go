package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Run with: go test -run '^$' -bench . -benchmem ./shared/api
// Requests go through the whole router (request id, log line, bearer token
// check, store read, opening sealed credentials) into a recorder.

func benchmarkGet(b *testing.B, hosts int, path func(i int) string) {
	e := newEnv(b)
	for i := range hosts {
		e.createHost(e.alice, map[string]any{"name": fmt.Sprintf("h%d", i), "password": "pw"})
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op") }()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			req := httptest.NewRequest("GET", path(i), nil)
			req.Header.Set("Authorization", "Bearer "+e.alice)
			rec := httptest.NewRecorder()
			e.handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("status %d", rec.Code)
			}
			i++
		}
	})
}

func BenchmarkGetHost(b *testing.B) {
	benchmarkGet(b, 10, func(i int) string { return fmt.Sprintf("/ssh/db/host/%d", i%10+1) })
}

func BenchmarkListHosts10(b *testing.B) {
	benchmarkGet(b, 10, func(int) string { return "/ssh/db/host" })
}

func BenchmarkListHosts1000(b *testing.B) {
	benchmarkGet(b, 1000, func(int) string { return "/ssh/db/host" })
}

// BenchmarkReleasesCached: the page is in the cache (the first request,
// before the timer, fetched it).
func BenchmarkReleasesCached(b *testing.B) {
	benchmarkGet(b, 0, func(int) string { return "/releases/rss" })
}

// BenchmarkAddRecentFull: adds to a host whose recent files are at their
// cap, cycling through more paths than it, so that every add trims.
func BenchmarkAddRecentFull(b *testing.B) {
	e := newEnv(b)
	h := e.createHost(e.alice, map[string]any{"name": "h", "password": "pw"})
	post := func(i int) {
		body := fmt.Sprintf(`{"path":"/var/log/app/%03d.log","isSSH":true,"hostId":%d}`, i%150, h.ID)
		req := httptest.NewRequest("POST", "/ssh/file_manager/recent", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.alice)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	for i := range 100 {
		post(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := range b.N {
		post(100 + i)
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time this process used: with fsync in the path, wall
// time says little about the work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
