package check

import (
	"net/netip"
	"strconv"
	"strings"
)

// MaxDNSName is the longest address, in bytes, a trailing dot included.
const MaxDNSName = 253

// Address checks a host address as a client gives it (a host's ip, a
// tunnel's sourceIP and endpointIP): an IP literal, or a DNS name of
// letters, digits, '-' and '.' (labels of 1 to 63 characters that do not
// start with '-', one trailing dot allowed, at most 253 characters in all).
// A literal's IPv6 zone may hold letters, digits, '-', '_' and '.' only. Nothing else passes: "-oProxyCommand=id", white
// space, control characters, brackets, '%' outside a zone, a port.
func Address(field, s string) error {
	if s == "" {
		return Invalid("%s is required", field)
	}
	if len(s) > MaxDNSName {
		return Invalid("%s is longer than %d characters", field, MaxDNSName)
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if !validZone(a.Zone()) {
			return Invalid("%s: an IPv6 zone may hold letters, digits, '-', '_' and '.' only", field)
		}
		return nil
	}
	if !DNSName(s) {
		return Invalid("%s must be an IP address or a DNS name (letters, digits, '-' and '.'; no label starting with '-'; at most %d characters)", field, MaxDNSName)
	}
	return nil
}

// HostRef checks what names a tunnel connection's endpoint host: an
// address as Address takes it, or a reference to one of the owner's hosts
// (its id or name; API.md, "Hosts as OpenSSH users keep them"), which may
// hold other characters than a DNS name but never white space, control
// characters or a leading '-', which an ssh command line would take for
// an option.
func HostRef(field, s string) error {
	if err := Text(field, s, 1, MaxDNSName, true); err != nil {
		return err
	}
	if s[0] == '-' {
		return Invalid("%s must not start with '-'", field)
	}
	if a, err := netip.ParseAddr(s); err == nil && !validZone(a.Zone()) {
		return Invalid("%s: an IPv6 zone may hold letters, digits, '-', '_' and '.' only", field)
	}
	return nil
}

// DNSName reports whether s is a DNS name as Address takes it.
func DNSName(s string) bool {
	if len(s) > MaxDNSName {
		return false
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func validZone(zone string) bool {
	for i := 0; i < len(zone); i++ {
		c := zone[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// CanonicalIP returns the address that s names without a DNS lookup, in
// the one form a denied range is checked against, and whether s names one:
//
//   - an IP literal, with its IPv6 zone stripped and an IPv4-mapped IPv6
//     address unmapped (::ffff:169.254.169.254 is 169.254.169.254);
//   - an IPv4 address in any spelling the C library's inet_aton and
//     getaddrinfo take, which an ssh client would dial: one to four parts
//     of decimal, octal (leading 0) or hexadecimal (0x) numbers, the last
//     filling the remaining bytes ("2852039166", "0xa9fea9fe",
//     "0251.0376.0251.0376", "169.254.43518", "127.1");
//   - either of them with one trailing dot ("169.254.169.254.").
//
// Anything else is a name to resolve (false).
func CanonicalIP(s string) (netip.Addr, bool) {
	s = strings.TrimSuffix(s, ".")
	if a, err := netip.ParseAddr(s); err == nil {
		return Canonical(a), true
	}
	return parseInetAton(s)
}

// Canonical is a resolved or parsed address in the form that is dialled and
// checked: zone stripped, IPv4-mapped IPv6 unmapped.
func Canonical(a netip.Addr) netip.Addr {
	return a.WithZone("").Unmap()
}

// parseInetAton parses the numbers-and-dots IPv4 forms of inet_aton(3).
func parseInetAton(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base, digits := 10, p
		switch {
		case len(p) > 1 && (p[:2] == "0x" || p[:2] == "0X"):
			base, digits = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		// Digits only: ParseUint would take a sign or underscores.
		if digits == "" && base != 8 || strings.IndexFunc(digits, func(r rune) bool {
			return !('0' <= r && r <= '9' || base == 16 && ('a' <= r && r <= 'f' || 'A' <= r && r <= 'F'))
		}) >= 0 {
			return netip.Addr{}, false
		}
		if digits == "" {
			vals[i] = 0
			continue
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	// Each part but the last is one byte; the last fills what is left.
	last := len(vals) - 1
	var n uint64
	for i := 0; i < last; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
		n = n<<8 | vals[i]
	}
	rest := uint(8 * (4 - last))
	if vals[last] >= 1<<rest {
		return netip.Addr{}, false
	}
	n = n<<rest | vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
