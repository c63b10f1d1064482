package iam

import (
	"bufio"
	"go/build"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/routes"
)

// TestEveryRoute: every route of the table has its actions, and every list
// here belongs to a route (a renamed route would otherwise keep a stale
// list and get none).
func TestEveryRoute(t *testing.T) {
	for _, r := range routes.All {
		if actions, ok := RouteActions(r.Name); !ok || len(actions) == 0 {
			t.Errorf("route %s has no actions", r.Name)
		}
	}
	for name := range routeActions {
		if _, ok := routes.ByName(name); !ok {
			t.Errorf("actions for %s, which is not in routes.All", name)
		}
	}
	if _, ok := RouteActions("no-such-route"); ok {
		t.Error("RouteActions found a route outside the table")
	}
}

// TestWellFormed: each list is what an IAM policy takes as is, sorted and
// without duplicates, so that the CDK app's policies are stable: DynamoDB
// actions only, named one by one.
func TestWellFormed(t *testing.T) {
	lists := map[string][]string{"Authorizer": Authorizer, "TunnelService": TunnelService, "ReadActions": ReadActions}
	if !slices.IsSorted(routeIndexQueries) || len(slices.Compact(slices.Clone(routeIndexQueries))) != len(routeIndexQueries) {
		t.Errorf("routeIndexQueries %v is not sorted or has duplicates", routeIndexQueries)
	}
	for _, name := range routeIndexQueries {
		if _, ok := routes.ByName(name); !ok {
			t.Errorf("routeIndexQueries names %s, which is not in routes.All", name)
		}
	}
	for name, actions := range routeActions {
		lists["route "+name] = actions
	}
	for name, actions := range lists {
		if !slices.IsSorted(actions) || len(slices.Compact(slices.Clone(actions))) != len(actions) {
			t.Errorf("%s: %v is not sorted or has duplicates", name, actions)
		}
		for _, a := range actions {
			if !strings.HasPrefix(a, "dynamodb:") || strings.ContainsAny(a, "*?") || a == "dynamodb:" {
				t.Errorf("%s: %q is not one DynamoDB action", name, a)
			}
		}
	}
}

// TestReadersOnlyRead: a route that only reads (Access Read) gets read
// actions alone, on the table and the index; so does the authorizer, but
// for one write: UpdateItem of tokens (TouchToken, their lastUsedAt), on
// TOKEN#* alone.
func TestReadersOnlyRead(t *testing.T) {
	for _, r := range routes.All {
		if r.Access == routes.Write {
			continue
		}
		p, _ := RoutePolicy(r.Name)
		if extra := outside(p.Actions(), ReadActions); len(extra) > 0 {
			t.Errorf("route %s is %s but gets %v", r.Name, r.Access, extra)
		}
	}
	if extra := outside(Authorizer, ReadActions); !slices.Equal(extra, []string{updateItem}) {
		t.Errorf("the authorizer gets %v besides reads, want UpdateItem alone (TouchToken)", extra)
	}
	p := AuthorizerPolicy()
	if !p.Allows(updateItem, "TOKEN#h") {
		t.Error("the authorizer may not touch a token (UpdateItem of TOKEN#<hash>)")
	}
	for _, pk := range []string{"USER#usr_1", "USERNAMES", "TOKENID#tok_1", "LOGIN#usr_1", "LOGINFAIL#name:x", "OWNER#usr_1", "ALERTS"} {
		if p.Allows(updateItem, pk) {
			t.Errorf("the authorizer may UpdateItem on %s", pk)
		}
	}
}

// TestRouteActionsIsACopy: a caller appending to or changing its list
// changes no one else's.
func TestRouteActionsIsACopy(t *testing.T) {
	a, _ := RouteActions("delete-host")
	a[0] = "dynamodb:*"
	if b, _ := RouteActions("delete-host"); b[0] == "dynamodb:*" {
		t.Fatal("RouteActions returned its own list")
	}
}

// TestImports: the package stays readable by the CDK module without the
// AWS SDK: it imports the standard library and shared/routes only.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pkg.Imports {
		first, _, _ := strings.Cut(path, "/")
		if strings.Contains(first, ".") && path != "github.com/sshdeck/sshdeck/shared/routes" {
			t.Errorf("imports %s", path)
		}
	}
}

// TestREADME: the IAM column of README.md's "Calls per route" (its route
// table, the rows of one route joined, and its tunnel service table) says
// what the lists here say.
func TestREADME(t *testing.T) {
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	documented := map[string][]string{}
	section := ""
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			section = line
			continue
		case section != "## Calls per route" && section != "### tunnel service",
			!strings.HasPrefix(line, "| "), strings.HasPrefix(line, "| ---"),
			strings.HasPrefix(line, "| route |"), strings.HasPrefix(line, "| store methods |"):
			continue
		}
		cols := strings.Split(line, "|") // "", the cells, ""
		who, _, _ := strings.Cut(strings.TrimSpace(cols[1]), ",")
		if section == "### tunnel service" {
			who = "tunnel service"
		}
		if _, ok := documented[who]; !ok {
			documented[who] = []string{}
		}
		// "Query on gsi1" is an action on the index.
		for a := range strings.SplitSeq(cols[len(cols)-2], ",") {
			a = strings.TrimSpace(a)
			name := who
			if action, ok := strings.CutSuffix(a, " on "+TokenIndex); ok {
				a, name = action, who+" on "+TokenIndex
				if _, ok := documented[name]; !ok {
					documented[name] = []string{}
				}
			}
			if a != "" && !slices.Contains(documented[name], "dynamodb:"+a) {
				documented[name] = append(documented[name], "dynamodb:"+a)
			}
		}
	}
	if len(documented) == 0 {
		t.Fatal(`README.md has no table under "Calls per route"`)
	}
	want := map[string][]string{"authorizer": Authorizer, "tunnel service": TunnelService}
	for name, actions := range routeActions {
		want[name] = actions
	}
	for _, name := range routeIndexQueries {
		want[name+" on "+TokenIndex] = []string{query}
	}
	for name, actions := range want {
		got := documented[name]
		slices.Sort(got)
		if !slices.Equal(got, actions) {
			t.Errorf("README.md gives %s %v, the code %v", name, got, actions)
		}
		delete(documented, name)
	}
	for name := range documented {
		t.Errorf("README.md lists %s, which has no list here", name)
	}
}

// outside returns the actions not in allowed.
func outside(actions, allowed []string) []string {
	var extra []string
	for _, a := range actions {
		if !slices.Contains(allowed, a) {
			extra = append(extra, a)
		}
	}
	return extra
}
