package functions_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLinksOnlyWhatItRuns: the authorizer, audit-events and the tunnel
// service import no package of the base_url API's handlers, services or
// upstreams (the wiring of shared/app keeps them out; shared/api adds them
// for the routes only): neither the accounts' service (logins, passwords,
// TOTP) nor the others. audit-events, which serves no HTTP at all, imports
// neither the Lambda HTTP adapter nor the web toolkit. No function but
// audit-events links the EventBridge client (shared/app/auditapp).
func TestLinksOnlyWhatItRuns(t *testing.T) {
	api := []string{"shared/api", "shared/accounts", "shared/hosts", "shared/files", "shared/alerts", "shared/releases", "shared/upstream"}
	events := []string{"shared/app/auditapp", "shared/auditevents"}
	for pkg, forbidden := range map[string][]string{
		"./authorizer":      append(slices.Clone(api), events...),
		"../tunnel-service": append(slices.Clone(api), events...),
		"./get-host":        events,
		"./audit-events":    append(slices.Clone(api), "shared/lambdaapp", "shared/lambdahttp", "shared/web", "shared/routes"),
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for dep := range strings.FieldsSeq(string(out)) {
			for _, f := range forbidden {
				if dep == "github.com/sshdeck/sshdeck/"+f {
					t.Errorf("%s imports %s", pkg, dep)
				}
			}
		}
	}
}
