package functions

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/sshdeck/sshdeck/shared/routes"
)

// TestEveryRouteHasAFunctionAndAnEvent keeps the functions and events in step
// with the route table: a route added to the table fails here until
// `go generate ./functions` wrote its function and events/<route>.json exists.
func TestEveryRouteHasAFunctionAndAnEvent(t *testing.T) {
	for _, r := range routes.All {
		got, err := os.ReadFile(filepath.Join(r.Name, "main.go"))
		if err != nil {
			t.Errorf("route %s has no function: %v (run go generate ./functions)", r.Name, err)
		} else if !bytes.Equal(got, Main(r)) {
			t.Errorf("functions/%s/main.go differs from what the route table generates (run go generate ./functions)", r.Name)
		}
		if _, err := os.Stat(filepath.Join("..", "events", r.Name+".json")); err != nil {
			t.Errorf("route %s has no sample event: %v", r.Name, err)
		}
	}
}

// TestNoFunctionWithoutARoute catches a function left behind by a route
// removed from the table: it would still be built and deployed.
func TestNoFunctionWithoutARoute(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	dirs := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "internal" {
			continue
		}
		dirs++
		if _, ok := routes.ByName(e.Name()); !ok && e.Name() != Authorizer {
			t.Errorf("functions/%s serves no route of the route table", e.Name())
		}
		if _, err := os.Stat(filepath.Join(e.Name(), "main.go")); err != nil {
			t.Errorf("functions/%s has no main.go", e.Name())
		}
	}
	if dirs != len(routes.All)+1 {
		t.Errorf("%d function directories for %d routes and the authorizer", dirs, len(routes.All))
	}
}
