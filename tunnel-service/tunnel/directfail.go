package tunnel

import (
	"fmt"
	"strings"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// A direct tunnel's client says why it ended on its stderr, and in its
// exit status (255 for its own errors). The failure is read from what it
// said, never guessed: a line none of these rules knows is unknown.

// clientRule is a class of the client's errors: a line containing any of
// its phrases is one of them.
type clientRule struct {
	kind    sshdeck.TunnelError
	retry   bool
	phrases []string
}

// clientRules are tried in order, each over every line kept, the last line
// first: a host key or login failure outweighs the lines it causes.
var clientRules = []clientRule{
	{sshdeck.TunnelErrHostKey, false, []string{"Host key verification failed", "REMOTE HOST IDENTIFICATION HAS CHANGED", "host key is known for"}},
	{sshdeck.TunnelErrAuthentication, false, []string{"Permission denied", "Too many authentication failures", "No more authentication methods"}},
	{sshdeck.TunnelErrPortConflict, true, []string{"remote port forwarding failed for listen port"}},
	{sshdeck.TunnelErrTimeout, true, []string{"Timeout, server", "not responding", "Connection timed out", "Operation timed out"}},
	{sshdeck.TunnelErrNetwork, true, []string{"Connection refused", "No route to host", "Could not resolve", "Network is unreachable",
		"Connection closed by", "closed by remote host", "Connection reset", "Broken pipe", "kex_exchange_identification"}},
}

// clientExit is how the client's session ended: its exit status, or the
// signal that ended it.
type clientExit struct {
	status int    // -1: none reported
	signal string // e.g. "HUP"
}

func (e clientExit) String() string {
	switch {
	case e.signal != "":
		return "killed by SIG" + e.signal
	case e.status >= 0:
		return fmt.Sprintf("exit status %d", e.status)
	}
	return "no exit status"
}

// clientFailure classifies the end of the client of the tunnel to
// endpoint (its name, as relay mode names it).
func clientFailure(endpoint string, exit clientExit, lines []string) *failure {
	for _, rule := range clientRules {
		for i := len(lines) - 1; i >= 0; i-- {
			for _, p := range rule.phrases {
				if strings.Contains(lines[i], p) {
					return fail(rule.kind, rule.retry, nil, "%s: ssh on the source: %s (%s)", endpoint, clip(lines[i]), exit)
				}
			}
		}
	}
	if n := len(lines); n > 0 {
		return fail(sshdeck.TunnelErrUnknown, true, nil, "%s: ssh on the source ended (%s): %s", endpoint, exit, clip(lines[n-1]))
	}
	return fail(sshdeck.TunnelErrUnknown, true, nil, "%s: ssh on the source ended (%s) without a word", endpoint, exit)
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
