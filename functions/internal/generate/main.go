// Command generate writes functions/<route>/main.go for every route of the
// route table. `go generate ./functions` runs it in the functions directory.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sshdeck/sshdeck/functions"
	"github.com/sshdeck/sshdeck/shared/routes"
)

func main() {
	for _, r := range routes.All {
		if err := write(r); err != nil {
			fmt.Fprintln(os.Stderr, "generate:", err)
			os.Exit(1)
		}
	}
}

func write(r routes.Route) error {
	if err := os.MkdirAll(r.Name, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.Name, "main.go"), functions.Main(r), 0o644)
}
