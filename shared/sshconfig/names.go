package sshconfig

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// nameForbidden are the characters no alias, host name, jump host or
// forward host may hold. OpenSSH (9.6 and later) refuses shell
// metacharacters in a host name given to ssh; '*', '?' and a leading '!' make
// a Host pattern; '@', ',', '#', '/', '[' and ']' and '=' are separators
// somewhere in ProxyJump or forward syntax. A name without them means the
// same wherever it is written.
const nameForbidden = "'\"`\\$;&<>|(){},*?!@#/[]="

// validName reports whether s can be written as an alias, a HostName, a
// jump host or a forward's host and read back the same by every OpenSSH.
// ':' and '%' are allowed for IPv6 addresses (with a zone).
func validName(s string) bool {
	if s == "" || len(s) > maxName || s[0] == '-' || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(nameForbidden, r) {
			return false
		}
	}
	return true
}

// userForbidden are the characters no user name may hold: OpenSSH's
// shell metacharacters (valid_ruser), '%' and '$' which newer OpenSSH
// expands in User, and ',' and '#' which end a ProxyJump hop.
const userForbidden = "'\"`;&<>|(){}%$,#"

// validUser reports whether s can be written as a User or a jump's user
// and read back the same. '@' is allowed (user@domain): a hop splits at
// its last '@'. A leading '-' or '=' is not (an option to ssh; the
// separator of ProxyJump's keyword).
func validUser(s string) bool {
	if s == "" || len(s) > maxName || s[0] == '-' || s[0] == '=' || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(userForbidden, r) {
			return false
		}
	}
	return true
}

// validPath reports whether s can be an IdentityFile: anything printable,
// quoted as needed when written.
func validPath(s string) bool {
	if s == "" || len(s) > maxPath || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// isAlias reports whether the pattern p of a Host line names one host that
// sshdeck can import: not negated, no wildcard, a valid name.
func isAlias(p string) bool { return validName(p) }

// maxMatchSteps bounds the pattern matching one Parse does (deciding
// aliases, naming the hosts a block also applies to): a file of many Host
// lines and hosts would otherwise cost their product. Real configs use a
// thousandth of it.
const maxMatchSteps = 1 << 25

// matcher matches Host patterns within a budget of steps; once spent,
// every match fails and the caller reports the file as too large.
type matcher struct{ left int }

func (m *matcher) spent() bool { return m.left <= 0 }

// applies reports whether a Host line with these patterns applies to
// host, as OpenSSH decides: some pattern matches it and no negated one
// does.
func (m *matcher) applies(patterns []string, host string) bool {
	matched := false
	for _, p := range patterns {
		if m.spent() {
			return false
		}
		if neg, ok := strings.CutPrefix(p, "!"); ok {
			if m.match(host, neg) {
				return false
			}
		} else if !matched && m.match(host, p) {
			matched = true
		}
	}
	return matched
}

// match is OpenSSH's match_pattern: '*' matches any bytes, '?' one byte,
// everything else itself (case matters). It is an iterative glob with one
// backtrack point, equivalent to the recursive original.
func (m *matcher) match(s, p string) bool {
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		m.left--
		if m.left <= 0 {
			return false
		}
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			si++
			pi++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			mark++
			si, pi = mark, star+1
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// expandHostName does what ssh does to a HostName before using it
// (percent_expand with the one token "h"): %h is the alias, %% a percent
// sign. ok is false for any other %-sequence, on which ssh exits.
func expandHostName(v, alias string) (string, bool) {
	if !strings.Contains(v, "%") {
		return v, true
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			b.WriteByte(v[i])
			continue
		}
		if i+1 == len(v) {
			return "", false
		}
		i++
		switch v[i] {
		case '%':
			b.WriteByte('%')
		case 'h':
			b.WriteString(alias)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// portNumber reads a port as OpenSSH's a2port does for a number (leading
// zeros allowed): ok is false for anything that is not decimal digits, or
// beyond 65535. OpenSSH also takes a service name (getservbyname) and a
// sign; sshdeck does not, since the services database is the user's.
func portNumber(s string) (int, bool) {
	if s == "" || len(s) > 10 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > 65535 {
		return 0, false
	}
	return n, true
}

// quote formats a value from the file for an error message, shortened: the
// message reaches the client, which sent the file, and should stay short.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}

// ValidAlias reports whether s can be a Host alias that Write writes: a
// single host name OpenSSH matches only itself with.
func ValidAlias(s string) bool { return isAlias(s) }
