// Package gobuild builds commands of this module for the tests and
// benchmarks that run them as separate processes (the end-to-end tests of
// sshdeck and of the tunnel service, the benchmarks of the local API and of
// the Lambda bootstraps).
package gobuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Command builds the package in the working directory (a test's own) into
// a temporary directory and returns the binary's path and a function that
// removes it. It panics when the build fails, with the compiler's output:
// it is meant for TestMain, where no test has started yet.
func Command(name string) (path string, remove func()) {
	dir, err := os.MkdirTemp("", name)
	if err != nil {
		panic(err)
	}
	path = filepath.Join(dir, name)
	if err := Build(".", path, nil); err != nil {
		os.RemoveAll(dir)
		panic(err)
	}
	return path, func() { os.RemoveAll(dir) }
}

// Build runs `go build -o out [args] pkg` with env added to this process's
// environment (e.g. GOARCH=arm64), in the working directory. Its error holds
// the compiler's output. It has no deadline: a build takes what the machine
// gives it.
func Build(pkg, out string, env []string, args ...string) error {
	return BuildIn("", pkg, out, env, args...)
}

// BuildIn is Build in the directory dir (another checkout of the module,
// e.g.); "" is the working directory.
func BuildIn(dir, pkg, out string, env []string, args ...string) error {
	cmd := exec.Command("go", append(append([]string{"build", "-o", out}, args...), pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}
