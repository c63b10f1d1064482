// Command vulndb builds a Go vulnerability database that govulncheck reads
// with -db file:///DIR, from the OSV entries of the golang.org/x/vulndb
// module (its data/osv/*.json): what `make vulncheck` runs where
// vuln.go.dev cannot be reached but the module proxy can.
//
//	go mod download -json golang.org/x/vulndb@latest > vulndb.json
//	go run ./internal/vulndb -download vulndb.json -out DIR
//
// (-src DIR names the directory of OSV entries instead.)
//
// The layout is the one govulncheck's client reads from a directory:
// index/db.json ({"modified"}), index/modules.json (per module path, the
// ids of its entries) and ID/<id>.json (each entry as it is). No entry's
// "fixed" version is put in the index: govulncheck then reads every entry
// of a module it uses and decides from the entry's own ranges, which is
// slower by a few files but cannot skip an entry that applies.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	download := flag.String("download", "", "the JSON of `go mod download -json golang.org/x/vulndb@VERSION`: its data/osv, modified at the version's time")
	src := flag.String("src", "", "directory of OSV entries (data/osv of golang.org/x/vulndb), instead of -download")
	out := flag.String("out", "", "directory to write the database to (replaced)")
	modified := flag.String("modified", "", "the database's modification time (RFC 3339); default: the version's time, else the newest entry's, else now")
	flag.Parse()
	var err error
	if *download != "" {
		*src, err = fromDownload(*download, modified)
		if err != nil {
			fmt.Fprintln(os.Stderr, "vulndb:", err)
			os.Exit(1)
		}
	}
	if *src == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: vulndb {-download FILE | -src DIR} -out DIR [-modified TIME]")
		os.Exit(2)
	}
	n, err := build(*src, *out, *modified)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulndb:", err)
		os.Exit(1)
	}
	fmt.Printf("vulndb: %d entries into %s\n", n, *out)
}

// fromDownload reads the answer of go mod download -json: the directory
// of the module's OSV entries, and (unless modified is set) the version's
// time as the database's modification time.
func fromDownload(file string, modified *string) (string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var d struct{ Dir, Info, Error string }
	if err := json.Unmarshal(raw, &d); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	if d.Error != "" || d.Dir == "" {
		return "", fmt.Errorf("%s: the module was not downloaded: %s", file, d.Error)
	}
	if *modified == "" && d.Info != "" {
		var info struct{ Time time.Time }
		if raw, err := os.ReadFile(d.Info); err == nil && json.Unmarshal(raw, &info) == nil && !info.Time.IsZero() {
			*modified = info.Time.UTC().Format(time.RFC3339)
		}
	}
	return filepath.Join(d.Dir, "data", "osv"), nil
}

// entry is what the index needs of an OSV entry.
type entry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
	} `json:"affected"`
}

type moduleVuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
}

type moduleMeta struct {
	Path  string       `json:"path"`
	Vulns []moduleVuln `json:"vulns"`
}

// build writes the database of the entries in src to out and returns how
// many entries it holds.
func build(src, out, modifiedFlag string) (int, error) {
	files, err := filepath.Glob(filepath.Join(src, "*.json"))
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		return 0, fmt.Errorf("no OSV entries (*.json) in %s", src)
	}
	if err := os.RemoveAll(out); err != nil {
		return 0, err
	}
	for _, dir := range []string{"index", "ID"} {
		if err := os.MkdirAll(filepath.Join(out, dir), 0o755); err != nil {
			return 0, err
		}
	}
	modules := map[string]*moduleMeta{}
	var newest time.Time
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		var e entry
		if err := json.Unmarshal(raw, &e); err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		if e.ID == "" || strings.ContainsAny(e.ID, `/\`) {
			return 0, fmt.Errorf("%s: no usable id %q", f, e.ID)
		}
		if e.Modified.After(newest) {
			newest = e.Modified
		}
		if err := os.WriteFile(filepath.Join(out, "ID", e.ID+".json"), raw, 0o644); err != nil {
			return 0, err
		}
		seen := map[string]bool{}
		for _, a := range e.Affected {
			path := a.Package.Name
			if path == "" || seen[path] {
				continue
			}
			seen[path] = true
			m := modules[path]
			if m == nil {
				m = &moduleMeta{Path: path}
				modules[path] = m
			}
			m.Vulns = append(m.Vulns, moduleVuln{ID: e.ID, Modified: e.Modified})
		}
	}
	modified := newest
	if modifiedFlag != "" {
		if modified, err = time.Parse(time.RFC3339, modifiedFlag); err != nil {
			return 0, fmt.Errorf("-modified: %w", err)
		}
	} else if modified.IsZero() || modified.Year() < 2000 {
		// The module's entries carry no modification time (vuln.go.dev
		// adds it when it serves them).
		modified = time.Now().UTC().Truncate(time.Second)
	}
	index := make([]*moduleMeta, 0, len(modules))
	for _, m := range modules {
		slices.SortFunc(m.Vulns, func(a, b moduleVuln) int { return strings.Compare(a.ID, b.ID) })
		index = append(index, m)
	}
	slices.SortFunc(index, func(a, b *moduleMeta) int { return strings.Compare(a.Path, b.Path) })
	if err := writeJSON(filepath.Join(out, "index", "modules.json"), index); err != nil {
		return 0, err
	}
	if err := writeJSON(filepath.Join(out, "index", "db.json"), map[string]time.Time{"modified": modified}); err != nil {
		return 0, err
	}
	if modules["stdlib"] == nil {
		return 0, errors.New("no entry names the standard library (stdlib): is src the data/osv of golang.org/x/vulndb?")
	}
	return len(files), nil
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
