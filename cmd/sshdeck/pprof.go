//go:build pprof

package main

// A bench-only build (go build -tags pprof) serves net/http/pprof on
// SSHDECK_PPROF_ADDR, so that the API benchmarks can take the CPU profile
// of a running `sshdeck serve`. Release builds have no such listener.

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

func init() {
	addr := os.Getenv("SSHDECK_PPROF_ADDR")
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sshdeck: pprof: %v\n", err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// The line the benchmarks wait for, in the shape of the server's log.
	fmt.Fprintf(os.Stderr, "{\"msg\":\"pprof\",\"addr\":%q}\n", ln.Addr().String())
	go http.Serve(ln, mux)
}
