// Package hostconfig maps hosts to and from an OpenSSH client config: the
// hosts of an ssh_config import (Import, from what shared/sshconfig
// parsed) and the Host blocks of an ssh_config export (Export, for
// sshconfig.Write). Pure functions: no store, no I/O; the hosts service
// creates the items, the API reads and writes the bytes.
//
// The mapping, which README.md and openapi.yaml state for users:
//
//   - Host alias → name; HostName → ip (the alias when absent); User →
//     username (required: an item without it fails, "User is required");
//     Port → port (22 when absent); the first IdentityFile → identityFile,
//     with authType key and no key (the server cannot read the user's
//     files; `sshdeck host import` uploads them), the others reported as
//     skipped. A host without IdentityFile gets what a create without
//     credentials gets: authType password, no password.
//   - ProxyJump → jumpHosts, each hop by alias of the file, else by the
//     name of one of the owner's stored hosts, else a new host of the
//     import at that address ([user@]host[:port], identical hops made
//     one); such a hop without a user fails as a host without User does.
//     A hop with a user or port that its alias's block does not have is
//     a host of its own too, at that block's HostName (its User, Port and
//     IdentityFile unless the hop says otherwise), as ssh reaches it. An
//     exported route (each hop's own route written before it) comes back
//     as the jump hosts it was made of (jumpHosts).
//   - LocalForward and RemoteForward are between the machine ssh runs on
//     and the host, and a sshdeck tunnel is between two stored hosts, so
//     they map only when the import says which Host of the file stands
//     for that machine (local): then `RemoteForward R 127.0.0.1:P` in
//     Host H's block is a tunnel of local (source) to H (endpoint),
//     endpointPort R, sourcePort P — H listens on its 127.0.0.1:R and
//     carries to local's 127.0.0.1:P, which is what ssh -R does run on
//     local — and `LocalForward R 127.0.0.1:P` in H's block is a tunnel
//     of H to local: local listens on 127.0.0.1:R and carries to H's
//     127.0.0.1:P. Forwards that bind another address than loopback or
//     reach another target than 127.0.0.1 or localhost, and every
//     forward without local, are reported as skipped.
//
// Export writes the inverse, with the aliases of Aliases.
package hostconfig

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshconfig"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Skipped is a part of a config that an import did not take: a line
// sshconfig.Parse reported, or a value this package could not map.
type Skipped struct {
	Line    int    `json:"line"`
	Keyword string `json:"keyword"`
	Host    string `json:"host"`
	Reason  string `json:"reason"`
}

// Options are what an import needs besides the config.
type Options struct {
	// Existing maps the names of the owner's stored hosts to their ids,
	// for ProxyJump hops that name no Host of the file.
	Existing map[string][]int64
	// Local is the alias of the Host of the file that stands for the
	// machine the config is used on: forwards map to tunnels only with it.
	Local string
}

// Import turns a parsed config into the items of an import, one per Host
// of the file in its order, then one per new jump host, and the parts it
// did not take, after Parse's own skipped lines. An error is the whole
// import's (a Local that is no Host of the file).
func Import(c *sshconfig.Config, opt Options) ([]hosts.ImportItem, []Skipped, error) {
	skipped := make([]Skipped, 0, len(c.Skipped))
	for _, s := range c.Skipped {
		skipped = append(skipped, Skipped(s))
	}
	aliases := make(map[string]int, len(c.Hosts))
	for i, h := range c.Hosts {
		aliases[h.Alias] = i
	}
	local := -1
	if opt.Local != "" {
		k, ok := aliases[opt.Local]
		if !ok {
			return nil, nil, sshdeck.Errorf(sshdeck.Invalid, "local: %q is no Host of the config (it names the Host that stands for the machine the config is used on)", opt.Local)
		}
		local = k
	}
	im := importer{c: c, opt: opt, aliases: aliases, local: local, hops: map[sshconfig.Jump]int{}}
	im.items = make([]hosts.ImportItem, len(c.Hosts))
	im.routes = make([][]hopRef, len(c.Hosts))
	for i := range c.Hosts {
		im.host(i)
	}
	// Every Host's ProxyJump is resolved: each Host's jumpHosts can now
	// be told from its route (jumpHosts).
	for i := range c.Hosts {
		im.jumpHosts(i)
	}
	for i := range c.Hosts {
		h := &c.Hosts[i]
		if files := identityFiles(h.IdentityFiles); len(files) > 1 {
			for _, f := range files[1:] {
				skipped = append(skipped, Skipped{Line: h.Line, Keyword: "IdentityFile", Host: h.Alias, Reason: f + ": sshdeck keeps one identity file per host, the first: not imported"})
			}
		}
		im.forwards(i, &skipped)
	}
	return im.items, skipped, nil
}

type importer struct {
	c       *sshconfig.Config
	opt     Options
	aliases map[string]int
	local   int
	items   []hosts.ImportItem
	// hops are the new hosts made of ProxyJump hops, by hop.
	hops map[sshconfig.Jump]int
	// routes are the Hosts' ProxyJump hops, resolved, as the file lists
	// them.
	routes [][]hopRef
}

// hopRef is a resolved ProxyJump hop: an item of the import (k >= 0) or
// a stored host (k = -1, id).
type hopRef struct {
	k  int
	id int64
}

// where names a Host of the file in an item's error.
func where(h *sshconfig.Host) string {
	return fmt.Sprintf("line %d (Host %s)", h.Line, h.Alias)
}

func (im *importer) host(i int) {
	h := &im.c.Hosts[i]
	in := &hosts.Input{Name: h.Alias, IP: h.HostName, Username: h.User}
	if in.IP == "" {
		in.IP = h.Alias
	}
	if h.Port != 0 {
		in.Port = &h.Port
	}
	if files := identityFiles(h.IdentityFiles); len(files) > 0 {
		in.IdentityFile = files[0]
		key := string(sshdeck.AuthKey)
		in.AuthType = &key
	}
	item := hosts.ImportItem{Input: in}
	if h.User == "" {
		item.Err = sshdeck.Errorf(sshdeck.Invalid, "%s: User is required (sshdeck logs in as a named user: add a User line)", where(h))
	}
	im.items[i] = item
	if len(h.ProxyJump) == 1 && h.ProxyJump[0] == (sshconfig.Jump{Host: "none"}) {
		return
	}
	for _, hop := range h.ProxyJump {
		k, id, err := im.hop(hop)
		if err != nil {
			if im.items[i].Err == nil {
				im.items[i].Err = sshdeck.Errorf(sshdeck.Invalid, "%s: ProxyJump: %s", where(h), err)
			}
			continue
		}
		im.routes[i] = append(im.routes[i], hopRef{k, id})
	}
}

// jumpHosts sets Host i's jumpHosts from its route. An export spells a
// host's route out whole, each jump host's own route before it
// (hostchain's Route; Export's doc), and sshdeck reaches a jump host
// through its own jump hosts wherever it appears: taken as they are, the
// hops of X [A, B] with B [A] would come back as X [A, A, B], a route
// through A twice and a list that names A twice, which a save refuses.
// So, from the last hop back, a hop that is a Host of the file with its
// own route written just before it is that route's end: it stays a jump
// host and its route goes, since sshdeck follows it anyway. This gives
// back the lists an export came from, and means the same route for any
// file. A hop whose own route is not before it stays as it is.
func (im *importer) jumpHosts(i int) {
	route := im.routes[i]
	var out []hopRef
	for end := len(route); end > 0; {
		hop := route[end-1]
		end--
		if hop.k >= 0 && hop.k < len(im.routes) {
			if own := im.routes[hop.k]; len(own) > 0 && end >= len(own) && slices.Equal(route[end-len(own):end], own) {
				end -= len(own)
			}
		}
		out = append(out, hop)
	}
	slices.Reverse(out)
	for _, hop := range out {
		im.items[i].Input.JumpHosts = append(im.items[i].Input.JumpHosts, sshdeck.JumpHost{HostID: hop.id})
		im.items[i].HopItems = append(im.items[i].HopItems, hop.k)
	}
}

// identityFiles are the host's identity files but "none", OpenSSH's "no
// identity file".
func identityFiles(files []string) []string {
	var out []string
	for _, f := range files {
		if f != "none" {
			out = append(out, f)
		}
	}
	return out
}

// hop resolves a ProxyJump hop: the item it names (k >= 0), or a stored
// host's id (k = -1).
func (im *importer) hop(hop sshconfig.Jump) (k int, id int64, err error) {
	if a, ok := im.aliases[hop.Host]; ok {
		h := &im.c.Hosts[a]
		if (hop.User == "" || hop.User == h.User) && (hop.Port == 0 || hop.Port == max(h.Port, 0) || h.Port == 0 && hop.Port == sshdeck.DefaultSSHPort) {
			return a, 0, nil
		}
	}
	if hop.User == "" && hop.Port == 0 {
		switch ids := im.opt.Existing[hop.Host]; len(ids) {
		case 1:
			return -1, ids[0], nil
		case 0:
		default:
			return 0, 0, fmt.Errorf("hop %s names %d of your hosts; name one by an alias of this config", hop, len(ids))
		}
	}
	// A new host at the hop's address, one per distinct hop.
	if k, ok := im.hops[hop]; ok {
		return k, 0, nil
	}
	k = len(im.items)
	in := &hosts.Input{Name: hop.String(), IP: hop.Host, Username: hop.User}
	port := hop.Port
	if a, ok := im.aliases[hop.Host]; ok {
		// A Host of the file with another user or port: ssh reaches the
		// hop as ssh -l user -p port alias, with that block's HostName,
		// Port (when the hop gives none) and IdentityFile, not at an
		// address named like the alias.
		h := &im.c.Hosts[a]
		in.IP, in.Username = cmp.Or(h.HostName, h.Alias), cmp.Or(hop.User, h.User)
		port = cmp.Or(port, h.Port)
		if files := identityFiles(h.IdentityFiles); len(files) > 0 {
			key := string(sshdeck.AuthKey)
			in.IdentityFile, in.AuthType = files[0], &key
		}
	}
	if port != 0 {
		in.Port = &port
	}
	item := hosts.ImportItem{Input: in}
	if in.Username == "" {
		item.Err = sshdeck.Errorf(sshdeck.Invalid, "ProxyJump hop %s: User is required (the hop names no Host of the config and none of your hosts, so it is imported as a host of its own: give it a user, user@%s, or a Host block)", hop, hop.Host)
	}
	im.items = append(im.items, item)
	im.hops[hop] = k
	return k, 0, nil
}

// forwards maps the forwards of Host i to tunnels (see the package doc).
func (im *importer) forwards(i int, skipped *[]Skipped) {
	h := &im.c.Hosts[i]
	for _, fw := range []struct {
		keyword string
		list    []sshconfig.Forward
	}{{"LocalForward", h.LocalForwards}, {"RemoteForward", h.RemoteForwards}} {
		for _, f := range fw.list {
			skip := func(reason string) {
				*skipped = append(*skipped, Skipped{Line: h.Line, Keyword: fw.keyword, Host: h.Alias, Reason: forwardString(f) + ": " + reason})
			}
			switch {
			case im.local < 0:
				skip("a forward is between the machine ssh runs on and the host, and a sshdeck tunnel between two stored hosts: import with local=<the Host that stands for that machine> to map it, else not imported")
				continue
			case !loopback(f.BindAddress, true):
				skip("binds " + f.BindAddress + ", not loopback, as a sshdeck tunnel does: not imported")
				continue
			case !loopback(f.Host, false):
				skip("reaches " + f.Host + ", not 127.0.0.1 or localhost, as a sshdeck tunnel does: not imported")
				continue
			case f.BindPort == 0:
				skip("a port the server picks: not imported")
				continue
			}
			// RemoteForward on H: local's tunnel to H. LocalForward on H:
			// H's tunnel to local.
			source, endpoint := im.local, i
			if fw.keyword == "LocalForward" {
				source, endpoint = i, im.local
			}
			item := &im.items[source]
			item.Input.TunnelConnections = append(item.Input.TunnelConnections, hosts.TunnelInput{
				SourcePort:   f.HostPort,
				EndpointPort: f.BindPort,
				EndpointHost: im.c.Hosts[endpoint].Alias,
			})
			item.EndpointItems = append(item.EndpointItems, endpoint)
		}
	}
}

// loopback tells whether a forward's address is loopback as sshdeck's
// tunnels are: 127.0.0.1 or localhost (and, for a bind address, none).
func loopback(addr string, bind bool) bool {
	return addr == "127.0.0.1" || strings.EqualFold(addr, "localhost") || bind && addr == ""
}

func forwardString(f sshconfig.Forward) string {
	bind := strconv.Itoa(f.BindPort)
	if f.BindAddress != "" {
		bind = f.BindAddress + ":" + bind
	}
	return bind + " " + f.Host + ":" + strconv.Itoa(f.HostPort)
}
