// Package lambdabench is the "lambda" group of sshdeck's bench: the shape of
// the Lambda functions. It reports each function's deployed bootstrap and
// zip (linux/arm64, from `make build`), its cold start (the real bootstrap
// run as a process against a Runtime API on loopback, bench/runtimeapi, over
// DynamoDB, KMS and the upstream services of internal/cloudtest), and the
// DynamoDB calls each function's first event makes.
package lambdabench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/shared/routes"
)

// Group is the "lambda" group.
var Group = report.Group{Name: "lambda", Run: run}

// authorizer is the directory of the authorizer function (functions.Authorizer).
const authorizer = "authorizer"

// runs is how many cold starts each function gets in a full run.
const runs = 10

// quickFunctions are the functions of a quick run: a route that opens
// credentials (KMS), login (an argon2id hash) and the authorizer.
var quickFunctions = []string{"get-host", "login", authorizer}

// goalColdStart is the goal for the worst function's median cold start.
const goalColdStartMS = 50

// oneCall are the routes whose request must be one DynamoDB call.
var oneCall = []string{"list-hosts", "get-host", "update-host"}

// function is one Lambda function and the event it is given.
type function struct {
	name  string
	route routes.Route // zero for the authorizer
	event string       // path of its event
}

func (f function) isAuthorizer() bool { return f.name == authorizer }

// describe is the route of the function, or what the authorizer does.
func (f function) describe() string {
	if f.isAuthorizer() {
		return "REQUEST authorizer (valid token)"
	}
	return "`" + f.route.Method + " " + f.route.Path + "`"
}

// functions returns every function, in the route table's order with the
// authorizer last, or the quick ones.
func functions(root string, quick bool) []function {
	var fns []function
	for _, r := range routes.All {
		fns = append(fns, function{name: r.Name, route: r, event: filepath.Join(root, "events", r.Name+".json")})
	}
	fns = append(fns, function{name: authorizer, event: filepath.Join(root, "events", "authorizer", "valid.json")})
	if quick {
		fns = slices.DeleteFunc(fns, func(f function) bool { return !slices.Contains(quickFunctions, f.name) })
	}
	return fns
}

func run(ctx context.Context, o report.Options) ([]report.Section, error) {
	fns := functions(o.Root, o.Quick)
	sizes, err := sizeSection(ctx, o, fns)
	if err != nil {
		return nil, fmt.Errorf("sizes: %w", err)
	}
	results, err := coldStarts(ctx, o, fns)
	if err != nil {
		return nil, fmt.Errorf("cold starts: %w", err)
	}
	return []report.Section{sizes, coldStartSection(o, fns, results), callsSection(o, fns, results)}, nil
}

// command is the command that reproduces the group.
func command(o report.Options) string {
	if o.Quick {
		return "go run ./bench -quick -only lambda"
	}
	return "go run ./bench -only lambda"
}

// formatCalls writes counts by operation as "GetItem 1, Query 2", sorted
// by operation, or "none".
func formatCalls(calls map[string]int) string {
	var ops []string
	for op, n := range calls {
		if n > 0 {
			ops = append(ops, fmt.Sprintf("%s %d", op, n))
		}
	}
	if len(ops) == 0 {
		return "none"
	}
	slices.Sort(ops)
	return strings.Join(ops, ", ")
}

func total(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}
