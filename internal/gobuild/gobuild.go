// Package gobuild builds the command of a test's package once, for tests
// that run it as a separate process (the end-to-end tests of sshdeck and of
// the tunnel service).
package gobuild

import (
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
	if out, err := exec.Command("go", "build", "-o", path, ".").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("build " + name + ": " + err.Error() + "\n" + string(out))
	}
	return path, func() { os.RemoveAll(dir) }
}
