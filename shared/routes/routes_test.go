package routes

import (
	"regexp"
	"testing"
)

// Names become directory names (functions/<name>, events/<name>.json) and
// Lambda function names: lower-case words joined by hyphens.
var namePattern = regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)

func TestTableIsConsistent(t *testing.T) {
	testTable(t, All)
	testTable(t, Tunnel)
}

func testTable(t *testing.T, table []Route) {
	names, ops := map[string]bool{}, map[string]bool{}
	for _, r := range table {
		if !namePattern.MatchString(r.Name) {
			t.Errorf("route name %q is not lower-case words joined by hyphens", r.Name)
		}
		if names[r.Name] || ops[r.Method+" "+r.Path] {
			t.Errorf("route %s (%s %s) is listed twice", r.Name, r.Method, r.Path)
		}
		names[r.Name], ops[r.Method+" "+r.Path] = true, true
		if r.Public && r.Scope != "" {
			t.Errorf("public route %s names a scope", r.Name)
		}
		if r.Access != Read && r.Access != Write {
			t.Errorf("route %s has no access level", r.Name)
		}
		if got, ok := ByName(r.Name); (!ok || got != r) && &table[0] == &All[0] {
			t.Errorf("ByName(%q) = %v, %t", r.Name, got, ok)
		}
	}
	if _, ok := ByName("nope"); ok {
		t.Error("ByName found a route that does not exist")
	}
}
