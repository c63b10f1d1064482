package tunnel

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// TestPoolKey: credentials make two connections different, but are never
// in the key; another owner, pin or parent does too.
func TestPoolKey(t *testing.T) {
	p := newPool(context.Background(), nil, 0, 0, false)
	addr := netip.MustParseAddrPort("10.0.0.5:22")
	h := hop{TunnelHop: sshdeck.TunnelHop{IP: "10.0.0.5", SSHPort: 22, Username: "root", Auth: sshdeck.AuthPassword}, name: "source 10.0.0.5:22"}
	h.creds.Password = "correct horse battery staple"
	base := p.key("usr_a", nil, &h, addr, 0)
	if again := p.key("usr_a", nil, &h, addr, 0); again != base {
		t.Error("the same hop gave two keys")
	}
	if s := fmt.Sprintf("%#v", base); strings.Contains(s, h.creds.Password) {
		t.Errorf("the key holds the password: %s", s)
	}
	other := h
	other.creds.Password = "another"
	pinned := h
	pinned.HostKey = "SHA256:" + strings.Repeat("A", 43)
	parent := &node{}
	for what, k := range map[string]connKey{
		"another password": p.key("usr_a", nil, &other, addr, 0),
		"another owner":    p.key("usr_b", nil, &h, addr, 0),
		"a pin":            p.key("usr_a", nil, &pinned, addr, 0),
		"another path":     p.key("usr_a", parent, &h, addr, 0),
		"dedicated":        p.key("usr_a", nil, &h, addr, 1),
		"another pool":     newPool(context.Background(), nil, 0, 0, false).key("usr_a", nil, &h, addr, 0),
	} {
		if k == base {
			t.Errorf("%s gave the same key", what)
		}
	}
}
