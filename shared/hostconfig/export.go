package hostconfig

import (
	"strconv"
	"strings"

	"github.com/sshdeck/sshdeck/shared/sshconfig"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Host is what an export needs of a stored host: its id and configuration
// (never its credentials).
type Host struct {
	ID int64
	sshdeck.HostConfig
}

// Aliases gives each host, in order, the alias it has in an exported
// config: its name with every character but letters, digits, '.', '_' and
// '-' made '-', and a leading '-' dropped; "host-<id>" when that leaves
// nothing; "<alias>-<id>" when an earlier host has it already (OpenSSH
// matches aliases without regard to case, so neither does this) or when
// it is "none" (ProxyJump's keyword).
func Aliases(hs []Host) []string {
	out := make([]string, len(hs))
	taken := make(map[string]bool, len(hs))
	for i, h := range hs {
		a := strings.TrimLeft(strings.Map(func(r rune) rune {
			switch {
			case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '_', r == '-':
				return r
			}
			return '-'
		}, h.Name), "-")
		id := strconv.FormatInt(h.ID, 10)
		if a == "" || !sshconfig.ValidAlias(a) {
			a = "host-" + id
		}
		if taken[strings.ToLower(a)] || strings.EqualFold(a, "none") {
			a += "-" + id
		}
		taken[strings.ToLower(a)] = true
		out[i] = a
	}
	return out
}

// Export turns the owner's hosts (all of them: a jump host must be among
// them to be named) into Host blocks, with the aliases of Aliases:
// HostName (the ip), User, Port, IdentityFile (identityFile, when set),
// ProxyJump and, when local is the id of one of the hosts, the forwards
// of the tunnels that start or end there (see the package doc).
//
// ProxyJump spells out the route sshdeck follows, the hops' own jump hosts
// included (hostchain's Route): OpenSSH reaches the first hop through that
// hop's own ProxyJump but the others straight from the hop before (ssh -G
// -J A B shows proxyjump A, whatever B's config says), so the route is
// listed whole, and its first hop is a host without jump hosts. A host
// whose route cannot be followed (a hop deleted, a cycle made by
// concurrent saves) gets no ProxyJump: its JSON export still has its
// jumpHosts. Tunnels that neither start nor end at local cannot be said in
// a config that one machine uses, and are not written.
func Export(hs []Host, local int64) []sshconfig.Host {
	aliases := Aliases(hs)
	byID := make(map[int64]int, len(hs))
	byName := make(map[string][]int, len(hs))
	for i, h := range hs {
		byID[h.ID] = i
		byName[h.Name] = append(byName[h.Name], i)
	}
	out := make([]sshconfig.Host, len(hs))
	for i, h := range hs {
		c := sshconfig.Host{Alias: aliases[i], HostName: h.IP, User: h.Username, Port: h.Port}
		if h.IdentityFile != "" {
			c.IdentityFiles = []string{h.IdentityFile}
		}
		if route, ok := routeOf(hs, byID, i); ok {
			for _, k := range route {
				c.ProxyJump = append(c.ProxyJump, sshconfig.Jump{Host: aliases[k]})
			}
		}
		out[i] = c
	}
	l, ok := byID[local]
	if !ok {
		return out
	}
	// endpoint finds a tunnel's endpoint: a host id, else a unique name.
	endpoint := func(ref string) (int, bool) {
		if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
			k, ok := byID[id]
			return k, ok
		}
		if ks := byName[ref]; len(ks) == 1 {
			return ks[0], true
		}
		return 0, false
	}
	for i, h := range hs {
		for _, t := range h.TunnelConnections {
			e, ok := endpoint(t.EndpointHost)
			if !ok {
				continue
			}
			f := sshconfig.Forward{BindPort: t.EndpointPort, Host: "127.0.0.1", HostPort: t.SourcePort}
			switch {
			case i == l:
				// The endpoint listens, carrying back to local: ssh -R.
				out[e].RemoteForwards = appendNew(out[e].RemoteForwards, f)
			case e == l:
				// local listens, carrying to the source: ssh -L.
				out[i].LocalForwards = appendNew(out[i].LocalForwards, f)
			}
		}
	}
	return out
}

// appendNew appends f unless it is there: OpenSSH drops a repeated
// forward, and Write refuses one.
func appendNew(list []sshconfig.Forward, f sshconfig.Forward) []sshconfig.Forward {
	for _, g := range list {
		if g == f {
			return list
		}
	}
	return append(list, f)
}

// routeOf is the route to host i, as indexes: for each of its jump hosts,
// that hop's route, then the hop. ok is false when a hop is missing or
// the route comes back to a host it passes.
func routeOf(hs []Host, byID map[int64]int, i int) (route []int, ok bool) {
	var walk func(k int, path []int) bool
	walk = func(k int, path []int) bool {
		for _, hop := range hs[k].JumpHosts {
			j, found := byID[hop.HostID]
			if !found || len(route) > 64 {
				return false
			}
			for _, p := range path {
				if p == j {
					return false
				}
			}
			if !walk(j, append(path, j)) {
				return false
			}
			route = append(route, j)
		}
		return true
	}
	if !walk(i, []int{i}) {
		return nil, false
	}
	return route, true
}
