package sshconfig

import (
	"strconv"
	"strings"
)

// String is the hop as ProxyJump writes it: [user@]host[:port], an IPv6
// address in brackets.
func (j Jump) String() string {
	var b strings.Builder
	if j.User != "" {
		b.WriteString(j.User)
		b.WriteByte('@')
	}
	if strings.Contains(j.Host, ":") {
		b.WriteByte('[')
		b.WriteString(j.Host)
		b.WriteByte(']')
	} else {
		b.WriteString(j.Host)
	}
	if j.Port != 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(j.Port))
	}
	return b.String()
}

// isNone reports whether hops is "ProxyJump none".
func isNone(hops []Jump) bool {
	return len(hops) == 1 && hops[0] == Jump{Host: "none"}
}

// parseProxyJump reads a ProxyJump value. OpenSSH reads it raw, not split
// into arguments: quotes are not removed, and OpenSSH versions differ on
// what follows a space (9.2 as Debian ships it stops there, upstream keeps
// it) and on a comment holding a comma (upstream's chain then takes part
// of the comment). sshdeck takes only what every version reads alike: the
// hops with no space, quote or backslash, then optionally a comment.
func parseProxyJump(raw string) ([]Jump, string) {
	v, comment, hasComment := strings.Cut(raw, "#")
	v = strings.TrimRight(v, " \t\r\n\v\f")
	switch {
	case v == "":
		return nil, "missing argument"
	case hasComment && strings.Contains(comment, ","):
		return nil, "a comma in the comment after it: OpenSSH versions read that line differently"
	case strings.ContainsAny(v, " \t\"'\\"):
		return nil, quote(v) + ": write the hops without spaces, quotes or backslashes (OpenSSH reads ProxyJump unquoted)"
	}
	if strings.EqualFold(v, "none") {
		if hasComment {
			// OpenSSH compares the whole line to "none": with a comment it
			// is a jump through a host named none.
			return nil, "none followed by a comment: OpenSSH then reads a host named none"
		}
		return []Jump{{Host: "none"}}, ""
	}
	var hops []Jump
	for _, s := range strings.Split(v, ",") {
		j, problem := parseHop(s)
		if problem != "" {
			return nil, problem
		}
		hops = append(hops, j)
	}
	return hops, ""
}

// parseHop reads one hop as OpenSSH does: an ssh:// URI (parse_ssh_uri),
// else [user@]host[:port] (parse_user_host_port: the user up to the last
// '@', an IPv6 host in brackets).
func parseHop(s string) (Jump, string) {
	if strings.HasPrefix(s, "ssh://") {
		return parseHopURI(s)
	}
	var j Jump
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		if at == 0 {
			return j, "hop " + quote(s) + ": empty user"
		}
		j.User, s = s[:at], s[at+1:]
	}
	host, _, port, ok := hostPort(s, false)
	if !ok || host == "" {
		return j, "hop " + quote(s) + ": not host[:port]"
	}
	j.Host = cleanHostName(host)
	if port != "" {
		n, ok := portNumber(port)
		if !ok || n == 0 {
			return j, "hop " + quote(s) + ": port " + quote(port) + " is not a number from 1 to 65535"
		}
		j.Port = n
	}
	return j, ""
}

// parseHopURI reads ssh://[user[;params]@]host[:port][/] as OpenSSH's
// parse_uri does: the user percent-decoded ('+' is a space), connection
// parameters ignored, the host a domain name (its trailing dot dropped), no
// path.
func parseHopURI(s string) (Jump, string) {
	var j Jump
	rest := strings.TrimPrefix(s, "ssh://")
	if userinfo, after, ok := strings.Cut(rest, "@"); ok {
		userinfo, _, _ = strings.Cut(userinfo, ";")
		if userinfo == "" {
			return j, "hop " + quote(s) + ": empty user"
		}
		user, ok := urlDecode(userinfo)
		if !ok {
			return j, "hop " + quote(s) + ": bad %-escape in the user"
		}
		j.User, rest = user, after
	}
	host, delim, tail, ok := hostPort(rest, true)
	if !ok || host == "" {
		return j, "hop " + quote(s) + ": not a host"
	}
	host = cleanHostName(host)
	if !validDomain(host) {
		return j, "hop " + quote(s) + ": not a domain name"
	}
	j.Host = strings.TrimSuffix(host, ".")
	if tail != "" {
		if delim == ':' {
			var port string
			port, tail, _ = strings.Cut(tail, "/")
			n, ok := portNumber(port)
			if !ok || n == 0 {
				return j, "hop " + quote(s) + ": port " + quote(port) + " is not a number from 1 to 65535"
			}
			j.Port = n
		}
		if tail != "" {
			return j, "hop " + quote(s) + ": a path is not allowed"
		}
	}
	return j, ""
}

// hostPort splits host from what follows it as OpenSSH's hpdelim2 does: a
// host in brackets runs to the ']', else to the first ':' or '/'; delim is
// the byte that ended it (0 at the end of s). A '/' is refused where
// OpenSSH's hpdelim refuses it (outside URIs).
func hostPort(s string, slash bool) (host string, delim byte, rest string, ok bool) {
	end := len(s)
	if strings.HasPrefix(s, "[") {
		i := strings.IndexByte(s, ']')
		if i < 0 {
			return "", 0, "", false
		}
		end = i + 1
	} else if i := strings.IndexAny(s, ":/"); i >= 0 {
		end = i
	}
	if end == len(s) {
		return s, 0, "", true
	}
	switch s[end] {
	case ':':
	case '/':
		if !slash {
			return "", 0, "", false
		}
	default:
		return "", 0, "", false
	}
	return s[:end], s[end], s[end+1:], true
}

// cleanHostName is OpenSSH's cleanhostname: brackets around a host go.
func cleanHostName(h string) string {
	if len(h) >= 2 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}

// validDomain is OpenSSH's valid_domain, as parse_uri applies it.
func validDomain(h string) bool {
	if h == "" || !isAlnum(h[0]) {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c == '.' && i > 0 && h[i-1] == '.' {
			return false
		}
		if c != '.' && c != '-' && c != '_' && !isAlnum(c) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// urlDecode is OpenSSH's urldecode: %XX is a byte, '+' a space.
func urlDecode(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b.WriteByte(' ')
		case '%':
			if i+2 >= len(s) {
				return "", false
			}
			n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			b.WriteByte(byte(n))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// OpenSSH runs a ProxyJump as a ProxyCommand, "ssh -l user -p port -W
// '[%h]:%p' host", which it %-expands and gives to the shell: a hop's
// host and user must not hold what either would change (names and users
// are free of shell metacharacters already).

// validHopHost reports whether h can be a hop: a valid name with no '%'
// (a %-token) and no leading '~' (the shell's home directory).
func validHopHost(h string) bool {
	return validName(h) && !strings.Contains(h, "%") && h[0] != '~'
}

// validHopUser reports whether u can be a hop's user: a valid user with no
// backslash (the shell's escape) and no leading '~'.
func validHopUser(u string) bool {
	return validUser(u) && !strings.Contains(u, `\`) && u[0] != '~'
}

// checkJumps reports why sshdeck cannot write hops as a ProxyJump that
// OpenSSH reads back the same, and otherwise returns the line's value.
func checkJumps(hops []Jump) (string, string) {
	if len(hops) == 0 {
		return "", ""
	}
	if isNone(hops) {
		return "none", ""
	}
	parts := make([]string, len(hops))
	for i, j := range hops {
		switch {
		case !validHopHost(j.Host):
			return "", "hop " + quote(j.Host) + " is not a host name sshdeck can write"
		case j.User != "" && !validHopUser(j.User):
			return "", "hop user " + quote(j.User) + " is not a user name sshdeck can write"
		case j.Port < 0 || j.Port > 65535:
			return "", "hop port " + strconv.Itoa(j.Port) + " is not from 1 to 65535"
		case len(hops) == 1 && j.User == "" && j.Port == 0 && strings.EqualFold(j.Host, "none"):
			// Alone, it would read as the keyword none.
			return "", "a single hop named " + quote(j.Host) + " reads as ProxyJump none"
		}
		parts[i] = j.String()
	}
	v := strings.Join(parts, ",")
	if len(v) > maxJump {
		return "", "longer than " + strconv.Itoa(maxJump) + " bytes"
	}
	return v, ""
}
