package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/config"
)

// settings are a command's settings: config.Config from the SSHDECK_*
// environment over its defaults, with the command's flags over both.
type settings struct {
	config.Config
	// envErr is a malformed setting of the environment, reported once the
	// command line parses (so that --help still works).
	envErr error
}

// newFlags returns a flag set with the settings every command shares.
func newFlags(name string, s *settings, stderr io.Writer) *flag.FlagSet {
	s.Config, s.envErr = config.FromEnv()
	fs := flag.NewFlagSet("sshdeck "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&s.Data, "data", s.Data, "data directory of the embedded store ("+config.Data+")")
	return fs
}

// newAdminFlags returns the flag set of an admin command: it works on the
// embedded store of --data, or on a deployment's DynamoDB table.
func newAdminFlags(name string, s *settings, stderr io.Writer) *flag.FlagSet {
	fs := newFlags(name, s, stderr)
	fs.StringVar(&s.Table, "table", s.Table, "DynamoDB table of a deployment to administer instead of --data, with the AWS credentials of the environment ("+config.Table+")")
	return fs
}

// anyCount is the positional count of a command that checks its own.
const anyCount = -1

// parse parses flags wherever they stand among the positional arguments
// (`user add bob --admin` as well as `user add --admin bob`), and checks the
// count of positional arguments (unless it is anyCount).
func parse(fs *flag.FlagSet, args []string, positional int, s *settings) ([]string, error) {
	rest, err := parseArgs(fs, args, positional)
	if err != nil {
		return nil, err
	}
	if s.envErr != nil {
		return nil, s.envErr
	}
	if strings.TrimSpace(s.Data) == "" {
		return nil, fmt.Errorf("the data directory is empty: set --data or %s", config.Data)
	}
	s.Data = filepath.Clean(s.Data)
	return rest, nil
}

// parseArgs is parse without the settings: the flags wherever they stand,
// and the count of positional arguments.
func parseArgs(fs *flag.FlagSet, args []string, positional int) ([]string, error) {
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
	if positional != anyCount && len(rest) != positional {
		return nil, fmt.Errorf("%w: %s takes %d argument(s), got %d", errUsage, fs.Name(), positional, len(rest))
	}
	return rest, nil
}

func (s *settings) dbPath() string     { return app.DBPath(s.Data) }
func (s *settings) socketPath() string { return filepath.Join(s.Data, "admin.sock") }
