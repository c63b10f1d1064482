package sshconfig

import (
	"bytes"
	"io"
	"strconv"
	"strings"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// header opens every file Write writes. It holds nothing variable, so that
// the same hosts always give the same bytes.
const header = `# OpenSSH client configuration written by sshdeck: one Host block per host.
# ssh -G -F <this file> <alias> prints what OpenSSH makes of a host.
`

// Write writes hosts as an OpenSSH client config that OpenSSH (and Parse)
// reads back to the same values: one Host block per host, in order, with
// only the keywords that are set, values quoted and escaped as OpenSSH's
// parser expects (and a HostName's '%' doubled, as ssh expands %-tokens
// there).
//
// A host that OpenSSH could not read back as it is (an alias with a
// wildcard, whitespace or shell characters, two hosts with one alias, a
// value with a newline, a port out of range...) is refused with an Invalid
// error naming it, and then nothing is written: a file that meant
// something else would be worse than none.
func Write(w io.Writer, hosts []Host) error {
	var b bytes.Buffer
	b.WriteString(header)
	seen := make(map[string]bool, len(hosts))
	for i := range hosts {
		h := &hosts[i]
		if seen[h.Alias] {
			return sshdeck.Errorf(sshdeck.Invalid, "host %d: alias %s is used twice (OpenSSH would merge the two)", i, quote(h.Alias))
		}
		seen[h.Alias] = true
		if err := writeHost(&b, h); err != "" {
			return sshdeck.Errorf(sshdeck.Invalid, "host %d (%s): %s", i, quote(h.Alias), err)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeHost appends the Host block of h, or returns why it cannot.
func writeHost(b *bytes.Buffer, h *Host) string {
	if !isAlias(h.Alias) {
		return "alias " + quote(h.Alias) + " is not a single host name OpenSSH can match (no wildcards, whitespace, or shell and separator characters)"
	}
	var lines []string
	add := func(keyword, value string) { lines = append(lines, "  "+keyword+" "+value) }
	if h.HostName != "" {
		if !validName(h.HostName) {
			return "HostName " + quote(h.HostName) + " is not a host name or address"
		}
		add("HostName", strings.ReplaceAll(h.HostName, "%", "%%"))
	}
	if h.User != "" {
		if !validUser(h.User) {
			return "User " + quote(h.User) + " is not a user name sshdeck can write (no spaces, quotes, %, $ or shell characters)"
		}
		add("User", quoteArg(h.User))
	}
	if h.Port != 0 {
		if h.Port < 1 || h.Port > 65535 {
			return "Port " + strconv.Itoa(h.Port) + " is not from 1 to 65535"
		}
		add("Port", strconv.Itoa(h.Port))
	}
	if len(h.IdentityFiles) > maxIdentityFiles {
		return "more than " + strconv.Itoa(maxIdentityFiles) + " identity files (OpenSSH's limit)"
	}
	ids := make(map[string]bool, len(h.IdentityFiles))
	for _, f := range h.IdentityFiles {
		if !validPath(f) {
			return "IdentityFile " + quote(f) + " is not a path sshdeck can write"
		}
		if ids[f] {
			return "IdentityFile " + quote(f) + " is listed twice (OpenSSH would drop one)"
		}
		ids[f] = true
		add("IdentityFile", quoteArg(f))
	}
	if v, problem := checkJumps(h.ProxyJump); problem != "" {
		return "ProxyJump: " + problem
	} else if v != "" {
		add("ProxyJump", v)
	}
	for _, fw := range []struct {
		keyword string
		list    []Forward
	}{{"LocalForward", h.LocalForwards}, {"RemoteForward", h.RemoteForwards}} {
		seen := make(map[Forward]bool, len(fw.list))
		for _, f := range fw.list {
			args, problem := renderForward(f, fw.keyword == "RemoteForward")
			if problem != "" {
				return fw.keyword + ": " + problem
			}
			if seen[f] {
				return fw.keyword + " " + args[0] + " " + args[1] + " is listed twice (OpenSSH would drop one)"
			}
			seen[f] = true
			add(fw.keyword, quoteArg(args[0])+" "+quoteArg(args[1]))
		}
	}
	b.WriteString("\nHost " + quoteArg(h.Alias) + "\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return ""
}
