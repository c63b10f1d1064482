package functions

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
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
		if _, ok := routes.ByName(e.Name()); !ok && !slices.Contains(NotRoutes, e.Name()) {
			t.Errorf("functions/%s serves no route of the route table, and is none of the functions that serve none (NotRoutes)", e.Name())
		}
		if _, err := os.Stat(filepath.Join(e.Name(), "main.go")); err != nil {
			t.Errorf("functions/%s has no main.go", e.Name())
		}
	}
	if dirs != len(routes.All)+len(NotRoutes) {
		t.Errorf("%d function directories for %d routes and %v", dirs, len(routes.All), NotRoutes)
	}
}

// TestFunctionsWithoutARouteHaveEvents: the authorizer and audit-events
// have their sample events as every route has its own, which their replay
// tests send (authorizer_test.go, audit_events_test.go).
func TestFunctionsWithoutARouteHaveEvents(t *testing.T) {
	for _, name := range NotRoutes {
		if _, ok := routes.ByName(name); ok {
			t.Errorf("%s is a route of the route table, yet one of NotRoutes", name)
		}
		if _, err := os.Stat(filepath.Join(name, "main.go")); err != nil {
			t.Errorf("functions/%s has no main.go", name)
		}
	}
	authorizer, _ := filepath.Glob(filepath.Join("..", "events", Authorizer, "*.json"))
	if len(authorizer) == 0 {
		t.Errorf("no sample events in events/%s/", Authorizer)
	}
	if _, err := os.Stat(filepath.Join("..", "events", AuditEvents+".json")); err != nil {
		t.Errorf("%s has no sample event: %v", AuditEvents, err)
	}
}
