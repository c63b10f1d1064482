package tunnel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// The engine's tests run tunnels between the real OpenSSH hosts of a
// tunneltest.World, through the Manager; the few internals they look at
// are exported to them by export_test.go.

const owner = "usr_alice"

// waitFor polls the tunnel's status until ok, failing after a deadline
// with the last status seen. The deadline is sshdtest.WaitPatience (two
// minutes): these are protocol waits (logins to running sshd hosts, retries,
// keepalives) of seconds at most, and it only turns a hang into a failure.
func waitFor(t testing.TB, m *tunnel.Manager, name string, what string, ok func(tunnel.Status) bool) tunnel.Status {
	t.Helper()
	deadline := time.Now().Add(sshdtest.WaitPatience)
	var last tunnel.Status
	for time.Now().Before(deadline) {
		st, err := m.Status(context.Background(), owner, name)
		if err == nil {
			last = st
			if ok(st) {
				return st
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("tunnel %q never became %s; last status %s", name, what, statusText(last))
	return last
}

// statusText is st as the API shows it, its counts' values rather than
// their pointers.
func statusText(st tunnel.Status) string {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Sprintf("%+v", st)
	}
	return string(b)
}

func state(want sshdeck.TunnelState) func(tunnel.Status) bool {
	return func(st tunnel.Status) bool { return st.Status == want }
}
