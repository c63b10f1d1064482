package tunnel_test

import (
	"testing"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
)

// directUser is the source user of the direct tests that log in to the
// source with a password: a user with a shell and a home of its own.
const directUser = "sshdeck-direct"

// eachMode runs test in a World of its own for each tunnel mode: the
// fault tests hold for relay and direct tunnels alike.
func eachMode(t *testing.T, test func(t *testing.T, w *tunneltest.World)) {
	for _, mode := range []string{"relay", "direct"} {
		t.Run(mode, func(t *testing.T) {
			w := tunneltest.NewWorld(t)
			w.Mode = mode
			test(t, w)
		})
	}
}

// TestDirectCarries: a direct tunnel's bytes go through OpenSSH's client
// on the source.
func TestDirectCarries(t *testing.T) {
	w := tunneltest.NewWorld(t)
	w.Mode = "direct"
	m := w.Manager("a")
	port := sshdtest.FreePort(t)
	connect(t, m, w.Request("direct", port))
	st := waitFor(t, m, "direct", "connected", state(sshdeck.TunnelConnected))
	if st.Mode != sshdeck.TunnelDirect {
		t.Errorf("status mode %q, want direct", st.Mode)
	}
	if err := sshdtest.RoundTrip(port, 1<<20); err != nil {
		t.Fatal(err)
	}
}
