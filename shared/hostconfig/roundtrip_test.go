package hostconfig_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/hostconfig"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshconfig"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// records are an owner's hosts made from a seed, as a store could hold
// them after creates and updates that passed the hosts service's checks:
// names that may be taken twice, be no valid alias or be "none"; jump
// hosts among the earlier hosts (so that every route can be followed,
// which is what an ssh_config can say; a broken one is
// TestExportBrokenRoute's); tunnels whose endpointHost is an id or a
// name. Host 0 stands for the user's machine (local).
func records(seed uint64) []hostconfig.Host {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	names := []string{"web", "Web", "db", "my host", "none", "-x", "é", "", "bastion.example", "db-2", "a_b"}
	n := 1 + r.IntN(8)
	id := int64(1 + r.IntN(1000))
	hs := make([]hostconfig.Host, n)
	for i := range hs {
		h := &hs[i]
		h.ID, id = id, id+1+int64(r.IntN(3))
		h.Name = names[r.IntN(len(names))]
		if r.IntN(3) == 0 {
			h.Name += strconv.Itoa(r.IntN(3))
		}
		h.IP = fmt.Sprintf("10.%d.%d.%d", r.IntN(256), r.IntN(256), r.IntN(256))
		if r.IntN(3) == 0 {
			h.IP = "host" + strconv.Itoa(i) + ".example"
		}
		h.Port = 22
		if r.IntN(2) == 0 {
			h.Port = 1 + r.IntN(65535)
		}
		h.Username = []string{"root", "deploy", "me@corp", "a.b-c"}[r.IntN(4)]
		switch r.IntN(3) {
		case 0:
			h.IdentityFile = "~/.ssh/id_" + strconv.Itoa(i)
		case 1:
			h.IdentityFile = "/keys/my key " + strconv.Itoa(i) // quoted when written
		}
		if i > 0 {
			for _, k := range r.Perm(i)[:r.IntN(min(i, 3)+1)] {
				h.JumpHosts = append(h.JumpHosts, sshdeck.JumpHost{HostID: hs[k].ID})
			}
		}
	}
	for i := range hs {
		for range r.IntN(3) {
			e := r.IntN(n)
			if i != 0 && e != 0 && r.IntN(2) == 0 {
				e = 0 // most tunnels start or end at local
			}
			ref := strconv.FormatInt(hs[e].ID, 10)
			if r.IntN(2) == 0 {
				ref = hs[e].Name
			}
			hs[i].TunnelConnections = append(hs[i].TunnelConnections, sshdeck.TunnelConnection{
				SourcePort: 1 + r.IntN(65535), EndpointPort: 1 + r.IntN(65535), EndpointHost: ref,
				MaxRetries: 3, RetryInterval: 10, AutoStart: true,
			})
		}
	}
	return hs
}

// route is sshdeck's route to host i (hostchain's): for each jump host,
// its own route and then it.
func route(hs []hostconfig.Host, i int) []int {
	var out []int
	for _, hop := range hs[i].JumpHosts {
		k := slices.IndexFunc(hs, func(h hostconfig.Host) bool { return h.ID == hop.HostID })
		out = append(append(out, route(hs, k)...), k)
	}
	return out
}

// endpoint is the index of the host a tunnel's endpointHost names, or -1
// (a name several hosts share, or none has).
func endpoint(hs []hostconfig.Host, ref string) int {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		return slices.IndexFunc(hs, func(h hostconfig.Host) bool { return h.ID == id })
	}
	k := -1
	for i, h := range hs {
		if h.Name == ref {
			if k >= 0 {
				return -1
			}
			k = i
		}
	}
	return k
}

// imported is an import's items resolved as the hosts service resolves
// them: each jump host and endpoint as the index of the item it names.
type imported struct {
	name, ip, user, identityFile string
	port                         int
	jumps                        []int
	tunnels                      []string // "sourcePort endpointPort endpoint-index"
}

func resolve(t *testing.T, items []hosts.ImportItem) []imported {
	t.Helper()
	out := make([]imported, len(items))
	for i, item := range items {
		if item.Err != nil {
			t.Fatalf("item %d: %v", i, item.Err)
		}
		in := item.Input
		o := imported{name: in.Name, ip: in.IP, user: in.Username, identityFile: in.IdentityFile, port: 22, jumps: []int{}}
		if in.Port != nil {
			o.port = *in.Port
		}
		for j := range in.JumpHosts {
			if item.HopItems == nil || item.HopItems[j] < 0 {
				t.Fatalf("item %d: jumpHosts[%d] is a stored host %d, not an item", i, j, in.JumpHosts[j].HostID)
			}
			o.jumps = append(o.jumps, item.HopItems[j])
		}
		for j, tc := range in.TunnelConnections {
			o.tunnels = append(o.tunnels, fmt.Sprintf("%d %d %d", tc.SourcePort, tc.EndpointPort, item.EndpointItems[j]))
		}
		slices.Sort(o.tunnels)
		out[i] = o
	}
	return out
}

// checkRoundTrip exports hs (local: host 0) as an ssh_config, parses it
// and imports it, and wants the same hosts back: one item per host in
// order; the name when it is a unique valid alias (else Aliases' alias);
// ip, port, user, identityFile; the same jump hosts (an export spells
// routes out whole, and the import finds the hosts' lists again); the
// tunnels that start or end at local, each once (an ssh_config cannot
// say the others, nor maxRetries, retryInterval or autoStart).
func checkRoundTrip(t *testing.T, hs []hostconfig.Host) {
	t.Helper()
	var b bytes.Buffer
	if err := sshconfig.Write(&b, hostconfig.Export(hs, hs[0].ID)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	text := b.String()
	cfg, err := sshconfig.Parse(&b)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, text)
	}
	aliases := hostconfig.Aliases(hs)
	items, skipped, err := hostconfig.Import(cfg, hostconfig.Options{Local: aliases[0]})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped %+v of\n%s", skipped, text)
	}
	if len(items) != len(hs) {
		t.Fatalf("%d items of %d hosts:\n%s", len(items), len(hs), text)
	}
	got := resolve(t, items)
	for i, h := range hs {
		want := imported{name: aliases[i], ip: h.IP, user: h.Username, identityFile: h.IdentityFile, port: h.Port, jumps: []int{}}
		if plain(h.Name) && aliases[i] != h.Name {
			// A plain name loses it only to an earlier host's alias.
			if !slices.ContainsFunc(aliases[:i], func(a string) bool { return strings.EqualFold(a, h.Name) }) && !strings.EqualFold(h.Name, "none") {
				t.Errorf("host %d: name %q exported as %q", i, h.Name, aliases[i])
			}
		}
		for _, hop := range h.JumpHosts {
			want.jumps = append(want.jumps, endpoint(hs, strconv.FormatInt(hop.HostID, 10)))
		}
		seen := map[string]bool{}
		add := func(source int, tc sshdeck.TunnelConnection, e int) {
			if source != i {
				return
			}
			s := fmt.Sprintf("%d %d %d", tc.SourcePort, tc.EndpointPort, e)
			if !seen[s] {
				seen[s] = true
				want.tunnels = append(want.tunnels, s)
			}
		}
		for k, src := range hs {
			for _, tc := range src.TunnelConnections {
				if e := endpoint(hs, tc.EndpointHost); e >= 0 && (k == 0 || e == 0) {
					add(k, tc, e)
				}
			}
		}
		slices.Sort(want.tunnels)
		if g := got[i]; fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("host %d (%q, route %v):\n got %+v\nwant %+v\nconfig:\n%s", i, h.Name, route(hs, i), g, want, text)
		}
	}
}

// TestExportImportRoundTrip is the property for records made from many
// seeds; FuzzExportImport lets the fuzzer choose the seeds.
func TestExportImportRoundTrip(t *testing.T) {
	for seed := range uint64(500) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { checkRoundTrip(t, records(seed)) })
		if t.Failed() {
			return
		}
	}
}

func FuzzExportImport(f *testing.F) {
	for _, seed := range []uint64{0, 1, 7, 42} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { checkRoundTrip(t, records(seed)) })
}

// plain tells whether an alias can be the name itself: ASCII letters,
// digits, '.', '_' and '-', not first (Aliases).
func plain(name string) bool {
	return name != "" && name[0] != '-' && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
}
