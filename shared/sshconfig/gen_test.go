package sshconfig

import (
	"fmt"
	"strings"
)

// A host generator for the round-trip tests. pick(n) chooses in [0, n):
// math/rand for the table of random hosts, the fuzzer's bytes for
// FuzzRoundTrip. nasty draws from characters Write must refuse or quote as
// well; otherwise every host is one Write accepts.
type gen struct {
	pick  func(n int) int
	nasty bool
}

const (
	nameChars  = "abcdefghijklmnopqrstuvwxyz0123456789.-_"
	nameExtra  = "ABCZ:%+~^é"
	userExtra  = `ABC@\:+~^é.`
	pathChars  = `abc/._-~ "'\#=%$*?!,@:[]()é	` // a tab: refused in a path
	nastyChars = " \t\n\"'`\\$;&<>|(){},*?!@#/[]=%-"
)

func (g gen) str(alphabet string, min, max int) string {
	runes := []rune(alphabet)
	n := min + g.pick(max-min+1)
	var b strings.Builder
	for range n {
		b.WriteRune(runes[g.pick(len(runes))])
	}
	return b.String()
}

func (g gen) name() string {
	switch g.pick(8) {
	case 0:
		return "fe80::" + g.str("0123456789abcdef", 1, 4) // an IPv6 address
	case 1:
		return fmt.Sprintf("10.%d.%d.%d", g.pick(256), g.pick(256), g.pick(256))
	case 2:
		if g.nasty {
			return g.str(nameChars+nastyChars, 0, 6)
		}
	}
	s := g.str(nameChars[:26], 1, 1) + g.str(nameChars+nameExtra, 0, 12)
	return s
}

func (g gen) user() string {
	if g.nasty && g.pick(4) == 0 {
		return g.str(nameChars+nastyChars, 0, 6)
	}
	return g.str(nameChars[:26], 1, 1) + g.str(nameChars+userExtra, 0, 10)
}

func (g gen) port(min int) int {
	switch g.pick(4) {
	case 0:
		return min
	case 1:
		return 65535
	case 2:
		if g.nasty {
			return 65536 + g.pick(3)
		}
	}
	return 1 + g.pick(65535)
}

func (g gen) forward(remote bool) Forward {
	f := Forward{Host: g.name(), HostPort: g.port(1)}
	switch g.pick(4) {
	case 1:
		f.BindAddress = "*"
	case 2:
		f.BindAddress = g.name()
	}
	min := 1
	if remote {
		min = 0
	}
	f.BindPort = g.port(min)
	return f
}

func (g gen) host(alias string) Host {
	h := Host{Alias: alias}
	if g.pick(2) == 0 {
		h.HostName = g.name()
	}
	if g.pick(2) == 0 {
		h.User = g.user()
	}
	if g.pick(2) == 0 {
		h.Port = g.port(1)
	}
	for range g.pick(3) {
		p := g.str(pathChars, 1, 14)
		if !g.nasty && !validPath(p) {
			p = "~/.ssh/" + strings.ReplaceAll(p, "\t", " ")
		}
		if !containsString(h.IdentityFiles, p) {
			h.IdentityFiles = append(h.IdentityFiles, p)
		}
	}
	switch g.pick(4) {
	case 0:
		h.ProxyJump = []Jump{{Host: "none"}}
	case 1, 2:
		for range 1 + g.pick(3) {
			j := Jump{Host: g.name()}
			if g.pick(2) == 0 {
				j.User = g.user()
			}
			if !g.nasty {
				// OpenSSH gives a hop to the shell and %-expands it.
				j.Host = strings.ReplaceAll(j.Host, "%", "")
				j.User = strings.ReplaceAll(j.User, `\`, "")
			}
			if g.pick(2) == 0 {
				j.Port = g.port(1)
			}
			h.ProxyJump = append(h.ProxyJump, j)
		}
		if len(h.ProxyJump) == 1 && strings.EqualFold(h.ProxyJump[0].Host, "none") {
			h.ProxyJump[0].Port = 22
		}
	}
	for range g.pick(3) {
		f := g.forward(false)
		if !containsForward(h.LocalForwards, f) {
			h.LocalForwards = append(h.LocalForwards, f)
		}
	}
	for range g.pick(3) {
		f := g.forward(true)
		if !containsForward(h.RemoteForwards, f) {
			h.RemoteForwards = append(h.RemoteForwards, f)
		}
	}
	return h
}

// hosts generates n hosts with distinct aliases.
func (g gen) hosts(n int) []Host {
	var hs []Host
	seen := map[string]bool{}
	for i := range n {
		alias := g.name()
		if g.nasty && g.pick(8) == 0 {
			alias = g.str(nameChars+nastyChars, 0, 5)
		}
		if seen[alias] {
			alias = fmt.Sprintf("%s-%d", alias, i)
		}
		seen[alias] = true
		hs = append(hs, g.host(alias))
	}
	return hs
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsForward(list []Forward, f Forward) bool {
	for _, x := range list {
		if x == f {
			return true
		}
	}
	return false
}

// withoutLines returns hosts with Line zeroed: Write ignores it.
func withoutLines(hosts []Host) []Host {
	out := make([]Host, len(hosts))
	for i, h := range hosts {
		h.Line = 0
		out[i] = h
	}
	return out
}
