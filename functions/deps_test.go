package functions_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksOnlyWhatItRuns: the authorizer, audit-events and the tunnel
// service import no package of the base_url API's handlers, services or
// upstreams (the wiring of shared/app keeps them out; shared/api adds them
// for the routes only): neither the accounts' service (logins, passwords,
// TOTP) nor the others. audit-events, which serves no HTTP at all, imports
// neither the Lambda HTTP adapter nor the web toolkit.
func TestLinksOnlyWhatItRuns(t *testing.T) {
	api := []string{"shared/api", "shared/accounts", "shared/hosts", "shared/files", "shared/alerts", "shared/releases", "shared/upstream"}
	for pkg, forbidden := range map[string][]string{
		"./authorizer":      api,
		"../tunnel-service": api,
		"./audit-events":    append(api, "shared/lambdaapp", "shared/lambdahttp", "shared/web", "shared/routes"),
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
