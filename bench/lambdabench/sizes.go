package lambdabench

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/bench/report"
)

// maxBootstrapBytes is the Makefile's MAX_BOOTSTRAP_BYTES.
const maxBootstrapBytes = 10_000_000

// lambdaFlags are the Makefile's LAMBDA_ARGS.
var lambdaFlags = []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w"}

// sizeSection reports each function's bootstrap and zip. A full run reads
// the deployed artifacts, build/<name>/bootstrap and build/<name>.zip,
// running `make build` first when one is missing or older than a Go file
// the functions are built from; a quick run builds its functions for
// linux/arm64 into a temporary directory and zips them there.
func sizeSection(ctx context.Context, o report.Options, fns []function) (report.Section, error) {
	s := report.Section{
		Title:   "Lambda functions: bootstrap and zip (linux/arm64)",
		Command: "make build",
		Text: "Each function's `build/<name>/bootstrap` (`GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build " +
			"-tags lambda.norpc -trimpath -ldflags='-s -w'`) and `build/<name>.zip`, as `make build` makes them " +
			"and the CDK app deploys them. MB are 10⁶ bytes; the Makefile holds each bootstrap to 10 MB.",
	}
	dir := filepath.Join(o.Root, "build")
	if o.Quick {
		tmp, err := os.MkdirTemp("", "lambdabench-arm64")
		if err != nil {
			return s, err
		}
		defer os.RemoveAll(tmp)
		o.Logf("building %d functions for linux/arm64 (quick: into %s)", len(fns), tmp)
		if err := buildFunctions(ctx, o.Root, tmp, fns, []string{"GOOS=linux", "GOARCH=arm64"}); err != nil {
			return s, err
		}
		for _, f := range fns {
			if err := zipBootstrap(filepath.Join(tmp, f.name), filepath.Join(tmp, f.name+".zip")); err != nil {
				return s, err
			}
		}
		dir = tmp
		s.Text += " (Quick run: built into a temporary directory, zipped by archive/zip.)"
	} else {
		stale, why, err := staleBuild(ctx, o.Root, fns)
		if err != nil {
			return s, err
		}
		if stale {
			o.Logf("build/ is not up to date (%s): make build", why)
			cmd := exec.CommandContext(ctx, "make", "build")
			cmd.Dir, cmd.Stdout, cmd.Stderr = o.Root, o.Log, o.Log
			if err := cmd.Run(); err != nil {
				return s, fmt.Errorf("make build: %w", err)
			}
		}
	}

	t := report.Table{Header: []string{"function", "route", "bootstrap MB", "zip MB"}}
	var over []string
	var largest, smallest int64
	for _, f := range fns {
		boot, zipped := bootstrapPath(dir, f.name, o.Quick), filepath.Join(dir, f.name+".zip")
		b, err := os.Stat(boot)
		if err != nil {
			return s, err
		}
		z, err := os.Stat(zipped)
		if err != nil {
			return s, err
		}
		t.Add(f.name, f.describe(), mb(b.Size()), mb(z.Size()))
		if b.Size() > maxBootstrapBytes {
			over = append(over, f.name)
		}
		largest = max(largest, b.Size())
		if smallest == 0 || b.Size() < smallest {
			smallest = b.Size()
		}
	}
	s.Tables = []report.Table{t}
	s.Notes = fmt.Sprintf("Bootstraps from %s to %s MB.", mb(smallest), mb(largest))
	if len(over) > 0 {
		s.Notes += " **Over 10 MB: " + strings.Join(over, ", ") + "** (make build fails on them)."
	} else {
		s.Notes += " All within the 10 MB limit."
	}
	return s, nil
}

func bootstrapPath(dir, name string, flat bool) string {
	if flat {
		return filepath.Join(dir, name)
	}
	return filepath.Join(dir, name, "bootstrap")
}

func mb(n int64) string { return fmt.Sprintf("%.2f", float64(n)/1e6) }

// buildFunctions builds the functions with the Makefile's flags into dir
// (dir/<name>), in one go build, with env added (GOOS, GOARCH).
func buildFunctions(ctx context.Context, root, dir string, fns []function, env []string) error {
	return buildWith(ctx, root, dir, fns, env, lambdaFlags)
}

// buildWith is buildFunctions with other flags.
func buildWith(ctx context.Context, root, dir string, fns []function, env, flags []string) error {
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, flags...)
	for _, f := range fns {
		args = append(args, "./functions/"+f.name)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), append([]string{"CGO_ENABLED=0"}, env...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// zipBootstrap zips the file boot as "bootstrap", as the Makefile does.
func zipBootstrap(boot, out string) error {
	in, err := os.Open(boot)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = io.Copy(w, in)
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// staleBuild reports whether build/ lacks a function's bootstrap or zip, or
// holds one older than go.mod, go.sum, the Makefile or a Go file of this
// module that a function is built from.
func staleBuild(ctx context.Context, root string, fns []function) (bool, string, error) {
	var oldest time.Time
	for _, f := range fns {
		for _, p := range []string{filepath.Join(root, "build", f.name, "bootstrap"), filepath.Join(root, "build", f.name+".zip")} {
			fi, err := os.Stat(p)
			if err != nil {
				return true, "no " + p, nil
			}
			if oldest.IsZero() || fi.ModTime().Before(oldest) {
				oldest = fi.ModTime()
			}
		}
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}{{end}}`,
		"-tags", "lambda.norpc", "./functions/...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		return false, "", fmt.Errorf("go list: %w", err)
	}
	files := append(strings.Fields(string(out)), filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"), filepath.Join(root, "Makefile"))
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil {
			return false, "", err
		}
		if fi.ModTime().After(oldest) {
			rel, _ := filepath.Rel(root, p)
			return true, rel + " is newer", nil
		}
	}
	return false, "", nil
}
