// Command sshdeck runs sshdeck on one machine over an embedded store, and
// administers its users and tokens.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

const usage = `sshdeck: a control plane for SSH access

Usage:
  sshdeck serve [--addr ADDR] [--data DIR]
  sshdeck user add NAME [--admin] [--data DIR | --table TABLE]
  sshdeck user list [--data DIR | --table TABLE]
  sshdeck user disable NAME [--data DIR | --table TABLE]
  sshdeck user enable NAME [--data DIR | --table TABLE]
  sshdeck user set-admin NAME [--admin=false] [--data DIR | --table TABLE]
  sshdeck user passwd NAME [--data DIR | --table TABLE]   (password on stdin
        or asked on the terminal; the user then logs in with POST /auth/login)
  sshdeck token create --user NAME [--ttl 720h] [--name LABEL] [--scope S,…]
        [--data DIR | --table TABLE]
  sshdeck token list [--user NAME] [--data DIR | --table TABLE]
  sshdeck token revoke ID [--data DIR | --table TABLE]
  sshdeck token revoke --all --user NAME [--data DIR | --table TABLE]
  sshdeck alert publish --title TITLE [--message TEXT] [--priority medium]
        [--type info] [--expires 24h | --expires-at TIME]
        [--action-url URL --action-text LABEL] [--data DIR | --table TABLE]
  sshdeck alert list [--data DIR | --table TABLE]
  sshdeck alert delete ID [--data DIR | --table TABLE]
  sshdeck host import FILE [--local ALIAS] [--url URL]   (FILE an OpenSSH
        client config, - for stdin; each IdentityFile's key is uploaded)
  sshdeck host export [--format ssh_config|json] [--credentials]
        [--local ID] [--url URL]

Settings come from flags, else from SSHDECK_DATA (default ./.sshdeck),
SSHDECK_ADDR (default 127.0.0.1:8080) and SSHDECK_TABLE; serve also reads
SSHDECK_RELEASES_REPO, SSHDECK_RELEASES_API_URL, SSHDECK_GITHUB_TOKEN and
SSHDECK_ALERTS_URL; token create reads SSHDECK_LIMIT_TOKENS (default 100
tokens per user, neither revoked nor expired). The admin commands
work while serve runs: they go through its admin socket in the data
directory. With --table they administer a deployment's DynamoDB table, with
the AWS credentials of the environment. The host commands call the API
of --url, else SSHDECK_URL (default http://127.0.0.1:8080), with the token
in SSHDECK_TOKEN.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sshdeck:", errorText(err))
		os.Exit(1)
	}
}

// errorText is what a person reads: the sentence of a coded error, the
// whole chain of any other.
func errorText(err error) string {
	if sshdeck.ErrorCode(err) != sshdeck.Internal {
		return sshdeck.ErrorMessage(err)
	}
	return err.Error()
}

// errUsage marks a command line that does not parse; run prints the usage.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd, rest := "", args
	if len(args) > 0 {
		cmd, rest = args[0], args[1:]
	}
	if len(rest) > 0 && (cmd == "user" || cmd == "token" || cmd == "alert" || cmd == "host") {
		cmd, rest = cmd+" "+rest[0], rest[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serveCommand(ctx, rest, stdout, stderr)
	case "user add":
		err = userAddCommand(ctx, rest, stdout, stderr)
	case "user list":
		err = userListCommand(ctx, rest, stdout, stderr)
	case "user disable":
		err = userDisableCommand(true)(ctx, rest, stdout, stderr)
	case "user enable":
		err = userDisableCommand(false)(ctx, rest, stdout, stderr)
	case "user set-admin":
		err = userSetAdminCommand(ctx, rest, stdout, stderr)
	case "user passwd":
		err = userPasswdCommand(ctx, rest, stdout, stderr)
	case "token create":
		err = tokenCreateCommand(ctx, rest, stdout, stderr)
	case "token list":
		err = tokenListCommand(ctx, rest, stdout, stderr)
	case "token revoke":
		err = tokenRevokeCommand(ctx, rest, stdout, stderr)
	case "alert publish":
		err = alertPublishCommand(ctx, rest, stdout, stderr)
	case "alert list":
		err = alertListCommand(ctx, rest, stdout, stderr)
	case "alert delete":
		err = alertDeleteCommand(ctx, rest, stdout, stderr)
	case "host import":
		err = hostImportCommand(ctx, rest, stdout, stderr)
	case "host export":
		err = hostExportCommand(ctx, rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
	if errors.Is(err, errUsage) {
		fmt.Fprint(stderr, usage)
	}
	return err
}
