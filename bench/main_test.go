package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/bench/report"
)

// TestWriteGroup: a group's run replaces its part of the file and nothing
// else: the prose and the hand-written record of fixes around it stay.
func TestWriteGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	groups = []report.Group{{Name: "api"}, {Name: "tunnel"}}

	write := func(name, body string) string {
		t.Helper()
		if err := writeGroup(path, name, []byte(body)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// No file yet: one is made with the group's part.
	got := write("api", "api figures 1\n")
	if !strings.HasPrefix(got, "# sshdeck benchmarks\n") || !strings.Contains(got, "api figures 1") {
		t.Fatalf("new file:\n%s", got)
	}

	// Hand-written text around the parts.
	apiBegin, apiEnd := markers("api")
	text := "# Title\n\nintro\n\n" + apiBegin + "\nold api\n" + apiEnd + "\n\n## Profiles and fixes\n\nby hand\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got = write("api", "api figures 2\n")
	want := "# Title\n\nintro\n\n" + apiBegin + "\napi figures 2\n" + apiEnd + "\n\n## Profiles and fixes\n\nby hand\n"
	if got != want {
		t.Fatalf("after rewriting api:\n%s\nwant:\n%s", got, want)
	}

	// A group not in the file yet goes at its end; rewriting it again
	// leaves the rest as it was.
	got = write("tunnel", "tunnel figures 1\n")
	tunnelBegin, tunnelEnd := markers("tunnel")
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, tunnelBegin+"\ntunnel figures 1\n"+tunnelEnd+"\n") {
		t.Fatalf("after adding tunnel:\n%s", got)
	}
	if again := write("tunnel", "tunnel figures 2\n"); again != strings.Replace(got, "tunnel figures 1", "tunnel figures 2", 1) {
		t.Fatalf("after rewriting tunnel:\n%s", again)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left behind: %v", err)
	}
}

func TestSelectGroups(t *testing.T) {
	groups = []report.Group{{Name: "api"}, {Name: "lambda"}, {Name: "tunnel"}}
	if got, err := selectGroups(""); err != nil || len(got) != 3 {
		t.Errorf(`selectGroups("") = %d groups, %v`, len(got), err)
	}
	if got, err := selectGroups("tunnel,api"); err != nil || len(got) != 2 || got[0].Name != "tunnel" || got[1].Name != "api" {
		t.Errorf(`selectGroups("tunnel,api") = %v, %v`, got, err)
	}
	if _, err := selectGroups("apis"); err == nil || !strings.Contains(err.Error(), "api,lambda,tunnel") {
		t.Errorf(`selectGroups("apis") = %v, want an error naming the groups`, err)
	}
}

func TestBaselineNeedsTheAPIGroup(t *testing.T) {
	groups = []report.Group{{Name: "api"}, {Name: "tunnel"}}
	err := run(t.Context(), filepath.Join(t.TempDir(), "BENCHMARKS.md"), "tunnel", true, "HEAD")
	if err == nil || !strings.Contains(err.Error(), "-baseline") {
		t.Errorf("run with -baseline and no api group: %v", err)
	}
}
