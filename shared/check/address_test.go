package check

import (
	"net/netip"
	"strings"
	"testing"
)

func TestAddress(t *testing.T) {
	good := []string{
		"10.0.0.5", "::1", "2001:db8::1", "fe80::1%eth0", "fe80::1%en0.1_a-b", "::ffff:10.0.0.5",
		"web", "web-1.example.com", "example.com.", "xn--bcher-kva.example", "127.1", "2130706433",
		strings.Repeat("a", 63) + ".com", strings.Repeat("a.", 126) + "a",
	}
	for _, s := range good {
		if err := Address("ip", s); err != nil {
			t.Errorf("Address(%q): %v", s, err)
		}
	}
	bad := []string{
		"", "-oProxyCommand=id", "web.-x", "a b", "a\tb", "a\nb", "web:22", "[::1]", "a..b", ".", "..", ".a",
		"my_host", "fe80::1%$(id)", "fe80::1%a b", "fe80::1%", "10.0.0.5/24", "a;b", "é.example", "a\x00",
		strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 127), strings.Repeat("a", 254),
	}
	for _, s := range bad {
		if err := Address("ip", s); err == nil {
			t.Errorf("Address(%q) passed", s)
		} else if !strings.Contains(err.Error(), "ip") {
			t.Errorf("Address(%q): %v does not name the field", s, err)
		}
	}
}

func TestHostRef(t *testing.T) {
	for _, s := range []string{"db", "10.0.0.5", "12", "user@10.0.0.5", "web_1", "fe80::1%eth0"} {
		if err := HostRef("endpointHost", s); err != nil {
			t.Errorf("HostRef(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "-oProxyCommand=id", "a b", "a\x1b", "fe80::1%$(id)", strings.Repeat("h", 254)} {
		if err := HostRef("endpointHost", s); err == nil {
			t.Errorf("HostRef(%q) passed", s)
		}
	}
}

func TestCanonicalIP(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"169.254.169.254", "169.254.169.254"},
		{"169.254.169.254.", "169.254.169.254"},
		{"::ffff:169.254.169.254", "169.254.169.254"},
		{"::ffff:a9fe:a9fe", "169.254.169.254"},
		{"fe80::1%eth0", "fe80::1"},
		{"FE80::1%25", "fe80::1"},
		{"::ffff:0.0.0.0", "0.0.0.0"},
		{"::", "::"},
		{"0", "0.0.0.0"},
		{"0.0", "0.0.0.0"},
		{"2852039166", "169.254.169.254"},
		{"0xa9fea9fe", "169.254.169.254"},
		{"0XA9FEA9FE", "169.254.169.254"},
		{"0251.0376.0251.0376", "169.254.169.254"},
		{"0xa9.0xfe.0xa9.0xfe", "169.254.169.254"},
		{"169.254.43518", "169.254.169.254"},
		{"169.16689662", "169.254.169.254"},
		{"127.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"00", "0.0.0.0"},
		{"4294967295", "255.255.255.255"},
	} {
		got, ok := CanonicalIP(tc.in)
		if !ok || got != netip.MustParseAddr(tc.want) {
			t.Errorf("CanonicalIP(%q) = %v, %t; want %s", tc.in, got, ok, tc.want)
		}
	}
	for _, s := range []string{"", "web", "4294967296", "1.2.3.4.5", "256.1.1.1", "1.2.3.256", "1.65536.1", "08", "0x", "1..2", "-1", "+1", "1_000", "0x1g", "1.2.3.4..", "example.com."} {
		if got, ok := CanonicalIP(s); ok {
			t.Errorf("CanonicalIP(%q) = %v, want a name", s, got)
		}
	}
}
