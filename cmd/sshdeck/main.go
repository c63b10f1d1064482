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
	"slices"
	"strings"
	"syscall"

	"github.com/sshdeck/sshdeck/client"

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
  sshdeck login --url URL [--tunnel-url URL] [--profile NAME] [--user NAME]
        [--token-stdin]   (the password, and a TOTP code when the user has
        one, asked on the terminal or read one line each from stdin)
  sshdeck logout [--profile NAME]   (revokes the login's token)
  sshdeck host ls [--json [--credentials]]
  sshdeck host get ID|NAME [--json [--credentials]]
  sshdeck host add --ip ADDR --user USER [--name NAME] [--port 22]
        [--password-stdin | --key FILE [--key-passphrase-stdin]]
        [--jump ID|NAME,...] [--folder F] [--tags T,...]   (prints the id)
  sshdeck host rm ID|NAME
  sshdeck host import FILE [--local ALIAS]   (FILE an OpenSSH client
        config, - for stdin; each IdentityFile's key is uploaded)
  sshdeck host export [--format ssh_config|json] [--credentials] [--local ID]
  sshdeck tunnel ls [--json]
  sshdeck tunnel connect NAME   (a host's tunnel, H:i)
  sshdeck tunnel connect NAME --source HOST --endpoint HOST
        --source-port N --endpoint-port N [--mode direct] [--auto-start]
        [--max-retries N]
  sshdeck tunnel disconnect NAME
  sshdeck tunnel rm NAME
  sshdeck tunnel watch [NAME] [--json]   (one line per change, until ^C)
  sshdeck forward -L [bind_address:]port:host:hostport --via HOST [-q]
        (ssh -L: connections to the local port reach host:hostport from
        the stored host HOST, through the tunnel service, until ^C)
  sshdeck forward -D [bind_address:]port --via HOST [-q]
        (ssh -D: a SOCKS5 proxy whose connections are made from HOST)
  sshdeck audit [--since 24h | --since TIME] [--actor ID] [--json]
        (your audit records, or an admin's everyone's; --json: NDJSON)

Settings come from flags, else from SSHDECK_DATA (default ./.sshdeck),
SSHDECK_ADDR (default 127.0.0.1:8080) and SSHDECK_TABLE; serve also reads
SSHDECK_RELEASES_REPO, SSHDECK_RELEASES_API_URL, SSHDECK_GITHUB_TOKEN and
SSHDECK_ALERTS_URL; token create reads SSHDECK_LIMIT_TOKENS (default 100
tokens per user, neither revoked nor expired). The admin commands
work while serve runs: they go through its admin socket in the data
directory. With --table they administer a deployment's DynamoDB table, with
the AWS credentials of the environment.

The client commands (login, logout, host, tunnel, forward, audit) call the API of the
profile that sshdeck login stored: --profile NAME (or SSHDECK_PROFILE, or
the last login). Profiles are kept in $SSHDECK_CONFIG, else
sshdeck/config.json in the user's config directory (mode 0600).
SSHDECK_URL, SSHDECK_TUNNEL_URL and SSHDECK_TOKEN override the profile's
URL, tunnel URL and token; --url the URL. Without any URL they call
serve's defaults, http://127.0.0.1:8080 and :8081. Every client command
takes --profile and --url, and --json prints the API's JSON.
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

// globalProfile moves a --profile given before the command
// (`sshdeck --profile work host ls`) after it, where every client command
// parses it.
func globalProfile(args []string) []string {
	if len(args) >= 2 && (args[0] == "--profile" || args[0] == "-profile") {
		return append(slices.Clone(args[2:]), "--profile", args[1])
	}
	if len(args) >= 1 && (strings.HasPrefix(args[0], "--profile=") || strings.HasPrefix(args[0], "-profile=")) {
		return append(slices.Clone(args[1:]), args[0])
	}
	return args
}

// errUsage marks a command line that does not parse; run prints the usage.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	args = globalProfile(args)
	cmd, rest := "", args
	if len(args) > 0 {
		cmd, rest = args[0], args[1:]
	}
	if len(rest) > 0 && (cmd == "user" || cmd == "token" || cmd == "alert" || cmd == "host" || cmd == "tunnel") {
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
	case "host ls":
		err = hostLsCommand(ctx, rest, stdout, stderr)
	case "host get":
		err = hostGetCommand(ctx, rest, stdout, stderr)
	case "host add":
		err = hostAddCommand(ctx, rest, stdout, stderr)
	case "host rm":
		err = hostRmCommand(ctx, rest, stdout, stderr)
	case "login":
		err = loginCommand(ctx, rest, stdout, stderr)
	case "logout":
		err = logoutCommand(ctx, rest, stdout, stderr)
	case "tunnel ls":
		err = tunnelLsCommand(ctx, rest, stdout, stderr)
	case "tunnel connect":
		err = tunnelConnectCommand(ctx, rest, stdout, stderr)
	case "tunnel disconnect":
		err = tunnelNameCommand("disconnect", "Tunnel disconnected", (*client.Client).Disconnect)(ctx, rest, stdout, stderr)
	case "tunnel rm":
		err = tunnelNameCommand("rm", "Tunnel deleted", (*client.Client).DeleteTunnel)(ctx, rest, stdout, stderr)
	case "tunnel watch":
		err = tunnelWatchCommand(ctx, rest, stdout, stderr)
	case "forward":
		err = forwardCommand(ctx, rest, stdout, stderr)
	case "audit":
		err = auditCommand(ctx, rest, stdout, stderr)
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
