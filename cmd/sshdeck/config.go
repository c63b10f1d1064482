package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// config is every setting of the sshdeck command, from flags over the
// SSHDECK_* environment over defaults.
type config struct {
	Data       string // SSHDECK_DATA
	Addr       string // SSHDECK_ADDR
	TunnelAddr string // SSHDECK_TUNNEL_ADDR
	Table      string // SSHDECK_TABLE: the admin commands work on this DynamoDB table instead
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// newFlags returns a flag set with the settings every command shares.
func newFlags(name string, cfg *config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sshdeck "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Data, "data", envOr("SSHDECK_DATA", ".sshdeck"), "data directory of the embedded store (SSHDECK_DATA)")
	return fs
}

// newAdminFlags returns the flag set of an admin command: it works on the
// embedded store of --data, or on a deployment's DynamoDB table.
func newAdminFlags(name string, cfg *config, stderr io.Writer) *flag.FlagSet {
	fs := newFlags(name, cfg, stderr)
	fs.StringVar(&cfg.Table, "table", os.Getenv("SSHDECK_TABLE"), "DynamoDB table of a deployment to administer instead of --data, with the AWS credentials of the environment (SSHDECK_TABLE)")
	return fs
}

// parse parses flags wherever they stand among the positional arguments
// (`user add bob --admin` as well as `user add --admin bob`), and checks the
// count of positional arguments.
func parse(fs *flag.FlagSet, args []string, positional int, cfg *config) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(rest) != positional {
		return nil, fmt.Errorf("%w: %s takes %d argument(s), got %d", errUsage, fs.Name(), positional, len(rest))
	}
	if strings.TrimSpace(cfg.Data) == "" {
		return nil, fmt.Errorf("the data directory is empty: set --data or SSHDECK_DATA")
	}
	cfg.Data = filepath.Clean(cfg.Data)
	return rest, nil
}

func (c *config) dbPath() string     { return filepath.Join(c.Data, "sshdeck.db") }
func (c *config) keyPath() string    { return filepath.Join(c.Data, "secret.key") }
func (c *config) socketPath() string { return filepath.Join(c.Data, "admin.sock") }
