package tunnel

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// The command line of a direct tunnel's client: OpenSSH's ssh, run on the
// source by its user's shell (an exec request is a command line that the
// shell parses), so every argument is quoted, whatever it holds.

// directArgs are what the client's command line is made of. None of it is
// a secret: the login's key stays in the service's agent, the password is
// typed into the client's prompt (prompt.go).
type directArgs struct {
	host         string // the endpoint's address, as resolved and checked
	port         int    // its SSH port
	user         string
	password     bool          // log in with a password, else with the agent's key
	hostKey      ssh.PublicKey // the endpoint's key, as the probe checked it
	endpointPort int           // where the endpoint listens
	sourcePort   int           // what the source connects to
	keepalive    time.Duration // the service's keepalive interval
	misses       int           // and misses
	timeout      time.Duration // the service's dial timeout
}

// knownHostsAlias is the name the client knows the endpoint's key by
// (HostKeyAlias): the address, so that its messages and its password
// prompt ("user@host's password: ") name the endpoint as ours do.
func (a *directArgs) knownHostsAlias() string { return a.host }

// forwardSpec is ssh -R's argument, loopback at both ends as in relay mode.
func (a *directArgs) forwardSpec() string {
	return fmt.Sprintf("%s:%d:%s:%d", loopback, a.endpointPort, loopback, a.sourcePort)
}

// command is the exec request's command line. exec replaces the shell, so
// that the session's process is the client itself: the one a signal
// request reaches and a hangup of the pty ends.
func (a *directArgs) command() string {
	args := []string{"ssh", "-N",
		// The source user's config and files play no part.
		"-F", "/dev/null",
		"-o", "ControlMaster=no", "-o", "ControlPath=none",
		"-o", "ProxyCommand=none", "-o", "ProxyJump=none",
		"-o", "PermitLocalCommand=no", "-o", "ForwardAgent=no", "-o", "ForwardX11=no",
		"-o", "ClearAllForwardings=no", "-o", "RequestTTY=no",
		"-o", "GSSAPIAuthentication=no", "-o", "HostbasedAuthentication=no",
		// The endpoint's key is the one the probe checked, and only that:
		// no file is read or written for it.
		"-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "-o", "CheckHostIP=no",
		"-o", "UserKnownHostsFile=/dev/null", "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "HostKeyAlias=" + a.knownHostsAlias(),
		"-o", "KnownHostsCommand=" + a.knownHostsCommand(),
		"-o", "HostKeyAlgorithms=" + strings.Join(keyAlgorithms(a.hostKey), ","),
		// Supervision: the forward or nothing, a dead endpoint found as the
		// service finds its peers dead, and the line that says the forward
		// is up (LogLevel DEBUG1: "remote forward success for: …").
		"-o", "ExitOnForwardFailure=yes",
		"-o", "ServerAliveInterval=" + strconv.Itoa(seconds(a.keepalive)),
		"-o", "ServerAliveCountMax=" + strconv.Itoa(max(a.misses, 1)),
		"-o", "ConnectTimeout=" + strconv.Itoa(seconds(a.timeout)),
		"-o", "LogLevel=DEBUG1",
		"-o", "KbdInteractiveAuthentication=no",
	}
	if a.password {
		args = append(args,
			"-o", "BatchMode=no", // the one prompt the service answers
			"-o", "PasswordAuthentication=yes", "-o", "NumberOfPasswordPrompts=1",
			"-o", "PubkeyAuthentication=no", "-o", "IdentityAgent=none",
		)
	} else {
		args = append(args,
			"-o", "BatchMode=yes",
			"-o", "PasswordAuthentication=no", "-o", "PubkeyAuthentication=yes",
			// The agent's key only: naming an identity file keeps the
			// user's default ones (~/.ssh/id_*) from being offered.
			"-o", "IdentityFile=none",
		)
	}
	args = append(args, "-R", a.forwardSpec(),
		"-l", a.user, "-p", strconv.Itoa(a.port),
		// The address last, after --: nothing in it is read as an option.
		"--", a.host)
	var b strings.Builder
	b.WriteString("exec")
	for _, arg := range args {
		b.WriteByte(' ')
		b.WriteString(shellQuote(arg))
	}
	return b.String()
}

// knownHostsCommand prints the endpoint's known_hosts line. ssh splits it
// into words and runs it without a shell (8.5+); the key is base64 and
// the alias an address, neither with a quote or a % token in it.
func (a *directArgs) knownHostsCommand() string {
	return "/bin/echo " + a.knownHostsAlias() + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(a.hostKey)))
}

// keyAlgorithms are the host key algorithms that make the endpoint
// present the key type the probe saw, as verifier.prepare does for the
// service's own connections.
func keyAlgorithms(key ssh.PublicKey) []string {
	if key.Type() == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	}
	return []string{key.Type()}
}

// seconds rounds d up to whole seconds, at least one: ssh's settings take
// no fractions.
func seconds(d time.Duration) int {
	return max(int((d+time.Second-1)/time.Second), 1)
}

// shellQuote quotes s for a POSIX shell: in single quotes, where nothing is
// special but the quote itself, which is closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
