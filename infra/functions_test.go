package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sshdeck/sshdeck/shared/routes"
)

// TestFunctions: every function is an arm64 provided.al2023 bootstrap,
// traced, with a role and a log group of its own that keeps logs as long
// as logRetentionDays says.
func TestFunctions(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *synthesis
	}{{"default", synthDefault(t)}, {"https (logRetentionDays=731)", synthHTTPS(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			logGroups, roles := map[string]string{}, map[string]string{}
			for name, id := range s.functionIDs(t) {
				p := s.Resources[id].Properties
				if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" || !slices.Equal(strs(p["Architectures"]), []string{"arm64"}) {
					t.Errorf("function %s: Runtime %v, Handler %v, Architectures %v; want provided.al2023, bootstrap, [arm64]", name, p["Runtime"], p["Handler"], p["Architectures"])
				}
				if mode := property(p, "TracingConfig", "Mode"); mode != "Active" {
					t.Errorf("function %s: tracing %v, want Active", name, mode)
				}
				logs := refID(property(p, "LoggingConfig", "LogGroup"))
				if s.Resources[logs].Type != "AWS::Logs::LogGroup" {
					t.Errorf("function %s logs to %v, want a log group of its own", name, render(property(p, "LoggingConfig", "LogGroup")))
				} else if days := s.Resources[logs].Properties["RetentionInDays"]; days != float64(s.cfg.LogRetentionDays) {
					t.Errorf("function %s: log group %s keeps logs %v days, want %d", name, logs, days, s.cfg.LogRetentionDays)
				}
				if other, ok := logGroups[logs]; ok {
					t.Errorf("functions %s and %s share log group %s", other, name, logs)
				}
				logGroups[logs] = name
				role, _ := getAtt(p["Role"])
				if other, ok := roles[role]; ok {
					t.Errorf("functions %s and %s share role %s", other, name, role)
				}
				roles[role] = name
			}
		})
	}
}

// TestFunctionEnvironment: each function is told the table, and only what
// its route reads besides: the credentials key for the routes that seal
// credentials, the releases settings for the feed, the alerts URL for the
// alert lists. audit-events is told its event bus alone: it opens no table.
func TestFunctionEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *synthesis
	}{{"default (releasesRepo, alertsUrl)", synthDefault(t)}, {"https", synthHTTPS(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			table, _ := s.only(t, "AWS::DynamoDB::Table")
			bus, _ := s.only(t, "AWS::Events::EventBus")
			_, credentialsKey := s.keys(t)
			for name, id := range s.functionIDs(t) {
				env, _ := property(s.Resources[id].Properties, "Environment", "Variables").(map[string]any)
				want := map[string]func(any) bool{"SSHDECK_TABLE": func(v any) bool { return refID(v) == table }}
				if name == auditEventsName {
					want = map[string]func(any) bool{"SSHDECK_EVENT_BUS": func(v any) bool { return refID(v) == bus }}
				}
				r, _ := routes.ByName(name)
				if r.Credentials {
					want["SSHDECK_KMS_KEY_ID"] = func(v any) bool { return isARN(v, credentialsKey) }
				}
				setting := func(variable, value string) {
					if value != "" {
						want[variable] = func(v any) bool { return v == value }
					}
				}
				switch name {
				case "releases-feed":
					setting("SSHDECK_RELEASES_REPO", s.cfg.ReleasesRepo)
					setting("SSHDECK_RELEASES_API_URL", s.cfg.ReleasesAPIURL)
				case "list-alerts", "dismiss-alert":
					setting("SSHDECK_ALERTS_URL", s.cfg.AlertsURL)
				}
				if got, wantNames := slices.Sorted(maps.Keys(env)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, wantNames) {
					t.Errorf("function %s has environment %v, want %v", name, got, wantNames)
				}
				for variable, ok := range want {
					if v, set := env[variable]; set && !ok(v) {
						t.Errorf("function %s: %s is %v", name, variable, render(v))
					}
				}
			}
		})
	}
	// The default synth gives both settings, so the loop above saw them
	// land where they belong.
	if cfg := synthDefault(t).cfg; cfg.ReleasesRepo != testReleasesRepo || cfg.AlertsURL != testAlertsURL {
		t.Errorf("default synth: releasesRepo %q, alertsUrl %q; want %q and %q", cfg.ReleasesRepo, cfg.AlertsURL, testReleasesRepo, testAlertsURL)
	}
}

// TestFunctionCode: each function runs its own build/<name>.
func TestFunctionCode(t *testing.T) {
	s := synthDefault(t)
	keys := map[string]string{}
	for name, id := range s.functionIDs(t) {
		r := s.Resources[id]
		// With asset staging off (see synthesize), the asset's path is
		// its source directory.
		want := filepath.Join(s.cfg.Root, "build", name)
		if path := r.Metadata["aws:asset:path"]; path != want {
			t.Errorf("function %s runs the asset %v, want %s", name, path, want)
		}
		if _, err := os.Stat(filepath.Join(want, "bootstrap")); err != nil {
			t.Errorf("function %s: %v", name, err)
		}
		key := render(property(r.Properties, "Code", "S3Key"))
		if other, ok := keys[key]; ok {
			t.Errorf("functions %s and %s run the same code %s", other, name, key)
		}
		keys[key] = name
	}
}

// TestPasswordRoutesGetMoreCPU: the routes that hash passwords (argon2id:
// login, change-password, create-user) get 1024 MB, for the CPU that buys
// (routes.Route.MemoryMB); every other function 256.
func TestPasswordRoutesGetMoreCPU(t *testing.T) {
	s := synthDefault(t)
	for name, id := range s.functionIDs(t) {
		want := 256.0
		if name == "login" || name == "change-password" || name == "create-user" {
			want = 1024
		}
		if got := s.Resources[id].Properties["MemorySize"]; got != want {
			t.Errorf("function %s: MemorySize %v, want %v", name, got, want)
		}
	}
}
