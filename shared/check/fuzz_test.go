package check

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzCanonicalIP: the address canonicaliser. Whatever the input, an
// address it names is canonical (no zone, not IPv4-mapped), reads back as
// itself, and is the address netip reads for a literal; what Address
// accepts is a literal or a DNS name; a DNS name is never read as an
// address unless it is an inet_aton spelling of digits, dots and 0x.
// Seeds: testdata/fuzz/FuzzCanonicalIP.
func FuzzCanonicalIP(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := CanonicalIP(s)
		addrErr := Address("ip", s)
		if ok {
			if !a.IsValid() || a.Zone() != "" || a.Is4In6() {
				t.Fatalf("CanonicalIP(%q) = %v: not canonical", s, a)
			}
			if again, ok2 := CanonicalIP(a.String()); !ok2 || again != a {
				t.Fatalf("CanonicalIP(%q) = %v, but CanonicalIP(%v) = %v, %t", s, a, a, again, ok2)
			}
			if lit, err := netip.ParseAddr(strings.TrimSuffix(s, ".")); err == nil && Canonical(lit) != a {
				t.Fatalf("CanonicalIP(%q) = %v, netip reads %v", s, a, lit)
			}
			if _, err := netip.ParseAddr(strings.TrimSuffix(s, ".")); err != nil {
				// An inet_aton spelling: digits, dots, x and hex digits only.
				if strings.Trim(strings.ToLower(s), "0123456789abcdefx.") != "" || !a.Is4() {
					t.Fatalf("CanonicalIP(%q) = %v from something that is no IPv4 spelling", s, a)
				}
			}
		}
		if addrErr == nil {
			_, litErr := netip.ParseAddr(s)
			if litErr != nil && !DNSName(s) {
				t.Fatalf("Address(%q) passed: neither a literal nor a DNS name", s)
			}
			if len(s) > MaxDNSName || strings.HasPrefix(s, "-") || strings.ContainsAny(s, " \t\r\n\x00/[]:;$`'\"\\") && litErr != nil {
				t.Fatalf("Address(%q) passed", s)
			}
		} else if !strings.Contains(addrErr.Error(), "ip") {
			t.Fatalf("Address(%q): %v does not name the field", s, addrErr)
		}
		if err := HostRef("endpointHost", s); err == nil && (s == "" || s[0] == '-' || strings.ContainsAny(s, " \t\r\n\x00")) {
			t.Fatalf("HostRef(%q) passed", s)
		}
	})
}
