package routes

import (
	"regexp"
	"testing"
)

// Names become directory names (functions/<name>, events/<name>.json) and
// Lambda function names: lower-case words joined by hyphens.
var namePattern = regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)

func TestTableIsConsistent(t *testing.T) {
	names, ops := map[string]bool{}, map[string]bool{}
	for _, r := range All {
		if !namePattern.MatchString(r.Name) {
			t.Errorf("route name %q is not lower-case words joined by hyphens", r.Name)
		}
		if names[r.Name] || ops[r.Method+" "+r.Path] {
			t.Errorf("route %s (%s %s) is listed twice", r.Name, r.Method, r.Path)
		}
		names[r.Name], ops[r.Method+" "+r.Path] = true, true
		if r.Access == Public && (r.Credentials || r.Admin) {
			t.Errorf("public route %s handles credentials or is for admins", r.Name)
		}
		if got, ok := ByName(r.Name); !ok || got != r {
			t.Errorf("ByName(%q) = %v, %t", r.Name, got, ok)
		}
	}
	if _, ok := ByName("nope"); ok {
		t.Error("ByName found a route that does not exist")
	}
}
