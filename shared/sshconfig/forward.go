package sshconfig

import (
	"strconv"
	"strings"
)

// fwdKind is what a LocalForward or RemoteForward line asks for.
type fwdKind int

const (
	fwdTCP     fwdKind = iota // a Forward
	fwdSocket                 // a Unix-domain socket on either side
	fwdDynamic                // RemoteForward with one argument: a SOCKS proxy
	fwdEnv                    // ${VAR}: the user's environment decides
)

// parseForwardLine reads the arguments of a LocalForward or RemoteForward
// line as readconf.c does: two arguments joined with ':' (OpenSSH formats
// them into a 256-byte buffer), or for a RemoteForward one argument, a
// dynamic forward. strict also checks the hosts are names sshdeck can
// store; lines of blocks it does not import are only checked as OpenSSH
// would.
func parseForwardLine(args []string, remote, strict bool) (Forward, fwdKind, string) {
	var f Forward
	if len(args) == 0 || args[0] == "" {
		return f, 0, "missing argument"
	}
	if len(args) > 2 {
		return f, 0, "extra arguments at end of line"
	}
	dynamic := len(args) == 1 || args[1] == ""
	if dynamic && !remote {
		return f, 0, "missing target argument"
	}
	spec := args[0]
	if !dynamic {
		spec += ":" + args[1]
	}
	if len(spec) > maxForwardSpec {
		return f, 0, "longer than OpenSSH reads (" + strconv.Itoa(maxForwardSpec) + " bytes)"
	}
	if strings.Contains(spec, "${") {
		// OpenSSH expands ${VAR} from the environment of the ssh that
		// reads the file before parsing.
		return f, fwdEnv, ""
	}
	f, kind, ok := parseForwardSpec(spec, dynamic, remote)
	if !ok {
		return f, 0, "bad forwarding specification " + quote(spec)
	}
	if strict && kind == fwdTCP {
		if _, problem := renderForward(f, remote); problem != "" {
			return f, 0, problem
		}
	}
	return f, kind, ""
}

// fwdField is one ':'-separated field of a forward specification.
type fwdField struct {
	arg    string
	isPath bool
}

// splitForward splits a forward specification into at most four fields
// as OpenSSH's parse_fwd_field does: a field in brackets is taken
// literally (it must end the spec or be followed by ':'), else a backslash
// escapes the next byte and ':' ends the field; a '/' anywhere makes the
// field a path. Anything past four fields, or a bad field, fails.
func splitForward(spec string) ([]fwdField, bool) {
	s := strings.TrimLeft(spec, " \t\n\v\f\r")
	var fields []fwdField
	pos := 0
	for len(fields) < 4 && pos < len(s) {
		f, next, ok := forwardField(s, pos)
		if !ok {
			return nil, false
		}
		fields = append(fields, f)
		pos = next
	}
	if pos < len(s) {
		return nil, false
	}
	return fields, true
}

func forwardField(s string, pos int) (fwdField, int, bool) {
	var f fwdField
	if s[pos] == '[' {
		end := pos + 1
		for end < len(s) && s[end] != ']' {
			if s[end] == '/' {
				f.isPath = true
			}
			end++
		}
		if end == len(s) || (end+1 < len(s) && s[end+1] != ':') {
			return f, 0, false
		}
		f.arg = s[pos+1 : end]
		next := end + 1
		if next < len(s) {
			next++ // the ':'
		}
		return f, next, true
	}
	var b strings.Builder
	i := pos
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return f, 0, false
			}
			i++
			b.WriteByte(s[i])
		case ':':
			f.arg = b.String()
			return f, i + 1, true
		case '/':
			f.isPath = true
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	f.arg = b.String()
	return f, i, true
}

// parseForwardSpec is OpenSSH's parse_forward on a split specification:
// which fields are ports, hosts or paths depends on how many there are and
// which are paths; then its checks (a connect port above 0, a listen port
// above 0 for a LocalForward, 0 allowed for a RemoteForward). Ports are
// decimal numbers only (see portNumber).
func parseForwardSpec(spec string, dynamic, remote bool) (Forward, fwdKind, bool) {
	var f Forward
	fields, ok := splitForward(spec)
	if !ok {
		return f, 0, false
	}
	// port reads a port field; -1 stands for "not a port", as a2port's -1.
	port := func(i int) int {
		n, ok := portNumber(fields[i].arg)
		if !ok {
			return -1
		}
		return n
	}
	listenPath, connectPath := false, false
	hasBind := false
	listenPort, connectPort := 0, 0
	switch len(fields) {
	case 1:
		if fields[0].isPath {
			listenPath = true
		} else {
			listenPort = port(0)
		}
	case 2:
		switch {
		case fields[0].isPath && fields[1].isPath:
			listenPath, connectPath = true, true
		case fields[1].isPath:
			listenPort, connectPath = port(0), true
		default:
			hasBind, f.BindAddress, listenPort = true, fields[0].arg, port(1)
		}
	case 3:
		switch {
		case fields[0].isPath:
			listenPath, f.Host, connectPort = true, fields[1].arg, port(2)
		case fields[2].isPath:
			hasBind, f.BindAddress, listenPort, connectPath = true, fields[0].arg, port(1), true
		default:
			listenPort, f.Host, connectPort = port(0), fields[1].arg, port(2)
		}
	case 4:
		hasBind, f.BindAddress, listenPort = true, fields[0].arg, port(1)
		f.Host, connectPort = fields[2].arg, port(3)
	default:
		return f, 0, false
	}
	n := len(fields)
	if dynamic {
		if n != 1 && n != 2 {
			return f, 0, false
		}
	} else {
		if n != 3 && n != 4 && !listenPath && !connectPath {
			return f, 0, false
		}
		if connectPort <= 0 && !connectPath {
			return f, 0, false
		}
	}
	if !listenPath && (listenPort < 0 || (!remote && listenPort == 0)) {
		return f, 0, false
	}
	f.BindPort, f.HostPort = listenPort, connectPort
	if hasBind && f.BindAddress == "" {
		// OpenSSH binds every address for an empty bind address, as for
		// "*" (channel_fwd_bind_addr).
		f.BindAddress = "*"
	}
	switch {
	case listenPath || connectPath:
		return f, fwdSocket, true
	case dynamic:
		return f, fwdDynamic, true
	}
	return f, fwdTCP, true
}

// renderForward returns the two arguments of a forward's line, or why
// sshdeck cannot write it so that OpenSSH reads it back the same.
func renderForward(f Forward, remote bool) ([2]string, string) {
	var out [2]string
	minBind := 1
	if remote {
		minBind = 0
	}
	switch {
	case f.BindAddress != "" && f.BindAddress != "*" && !validName(f.BindAddress):
		return out, "bind address " + quote(f.BindAddress) + " is not a host name or address"
	case f.BindPort < minBind || f.BindPort > 65535:
		return out, "port " + strconv.Itoa(f.BindPort) + " is not from " + strconv.Itoa(minBind) + " to 65535"
	case !validName(f.Host):
		return out, "host " + quote(f.Host) + " is not a host name or address"
	case f.HostPort < 1 || f.HostPort > 65535:
		return out, "port " + strconv.Itoa(f.HostPort) + " is not from 1 to 65535"
	}
	out[0] = strconv.Itoa(f.BindPort)
	if f.BindAddress != "" {
		out[0] = bracket(f.BindAddress) + ":" + out[0]
	}
	out[1] = bracket(f.Host) + ":" + strconv.Itoa(f.HostPort)
	if len(out[0])+1+len(out[1]) > maxForwardSpec {
		return out, "longer than OpenSSH reads (" + strconv.Itoa(maxForwardSpec) + " bytes)"
	}
	return out, ""
}

// bracket puts an address with ':' (IPv6) in brackets, as a forward's
// fields are separated by ':'.
func bracket(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}
