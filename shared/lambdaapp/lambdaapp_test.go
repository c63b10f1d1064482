package lambdaapp

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/internal/cloudtest"
)

// BenchmarkColdRoute is what a get-host function does from main to its
// first answer, less the process start and package init: build the
// handler from the environment, then answer one event with it (new
// clients, so new connections). Its CPU profile is the cold start's:
//
//	go test -run '^$' -bench ColdRoute -cpuprofile /tmp/cold.prof ./shared/lambdaapp/
func BenchmarkColdRoute(b *testing.B) {
	c := cloudtest.Start(b)
	for _, kv := range c.Env() {
		name, value, _ := strings.Cut(kv, "=")
		b.Setenv(name, value)
	}
	dir := filepath.Join("..", "..", "events")
	if err := c.Seed(b.Context(), dir); err != nil {
		b.Fatal(err)
	}
	event, err := cloudtest.ReadEvent(dir, "get-host")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		h, err := Route("get-host")
		if err != nil {
			b.Fatal(err)
		}
		resp, err := h.Handle(context.Background(), event)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%d %v", resp.StatusCode, err)
		}
	}
}
