package hostconfig_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/hostconfig"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshconfig"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func TestAliases(t *testing.T) {
	for _, tt := range []struct {
		name  string
		hosts []hostconfig.Host // only ID and Name matter
		want  []string
	}{
		{"plain names kept", hs(1, "web", 2, "db.example", 3, "a_b-c"), []string{"web", "db.example", "a_b-c"}},
		{"other characters made '-'", hs(1, "my web", 2, "a/b*c", 3, "é-x"), []string{"my-web", "a-b-c", "x"}},
		{"a leading '-' dropped", hs(1, "--x", 2, "-"), []string{"x", "host-2"}},
		{"nothing left: host-<id>", hs(7, "", 8, "***", 9, "éé"), []string{"host-7", "host-8", "host-9"}},
		{"taken: -<id>, whatever the case", hs(1, "web", 2, "WEB", 3, "web"), []string{"web", "WEB-2", "web-3"}},
		{"taken by a made alias", hs(1, "a", 2, "a", 3, "a-2"), []string{"a", "a-2", "a-2-3"}},
		{"taken after mapping", hs(1, "my web", 2, "my-web"), []string{"my-web", "my-web-2"}},
		{"none is ProxyJump's keyword", hs(4, "none", 5, "NONE"), []string{"none-4", "NONE-5"}},
		{"too long for an alias", hs(6, strings.Repeat("a", 300)), []string{"host-6"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := hostconfig.Aliases(tt.hosts)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Aliases = %q, want %q", got, tt.want)
			}
			seen := map[string]bool{}
			for _, a := range got {
				if !sshconfig.ValidAlias(a) || seen[strings.ToLower(a)] {
					t.Errorf("alias %q is invalid or taken twice", a)
				}
				seen[strings.ToLower(a)] = true
			}
		})
	}
}

// hs makes hosts of id, name pairs.
func hs(pairs ...any) []hostconfig.Host {
	var out []hostconfig.Host
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, hostconfig.Host{ID: int64(pairs[i].(int)), HostConfig: sshdeck.HostConfig{Name: pairs[i+1].(string)}})
	}
	return out
}

// item is an import item in short: what each test compares.
type item struct {
	Name, IP, User, Identity, Auth string
	Port                           int      // 0: none given (22)
	Hops                           []string // "item N" or "host ID"
	Tunnels                        []string // "sourcePort→endpointPort endpointHost (item N)"
	Err                            string   // a part of the item's error
}

func short(it hosts.ImportItem) item {
	in := it.Input
	o := item{Name: in.Name, IP: in.IP, User: in.Username, Identity: in.IdentityFile}
	if in.Port != nil {
		o.Port = *in.Port
	}
	if in.AuthType != nil {
		o.Auth = *in.AuthType
	}
	for j, hop := range in.JumpHosts {
		if k := it.HopItems[j]; k >= 0 {
			o.Hops = append(o.Hops, fmt.Sprintf("item %d", k))
		} else {
			o.Hops = append(o.Hops, fmt.Sprintf("host %d", hop.HostID))
		}
	}
	for j, tc := range in.TunnelConnections {
		o.Tunnels = append(o.Tunnels, fmt.Sprintf("%d→%d %s (item %d)", tc.SourcePort, tc.EndpointPort, tc.EndpointHost, it.EndpointItems[j]))
	}
	if it.Err != nil {
		o.Err = it.Err.Error()
	}
	return o
}

// skip is a skipped part in short: "line keyword host: a part of the reason".
func skip(s hostconfig.Skipped) string {
	return fmt.Sprintf("%d %s %s: %s", s.Line, s.Keyword, s.Host, s.Reason)
}

func TestImport(t *testing.T) {
	const key = string(sshdeck.AuthKey)
	for _, tt := range []struct {
		name    string
		config  string
		opt     hostconfig.Options
		want    []item
		skipped []string // each a prefix of one skipped part's short form
	}{{
		name:   "fields",
		config: "Host web\n HostName 10.0.0.5\n User deploy\n Port 2222\n IdentityFile ~/.ssh/a\n IdentityFile none\n IdentityFile ~/.ssh/b\n IdentityFile ~/.ssh/c\n",
		want:   []item{{Name: "web", IP: "10.0.0.5", User: "deploy", Port: 2222, Identity: "~/.ssh/a", Auth: key}},
		// The first identity file is kept, none is OpenSSH's "no file",
		// the others are reported.
		skipped: []string{"1 IdentityFile web: ~/.ssh/b: sshdeck keeps one identity file", "1 IdentityFile web: ~/.ssh/c: sshdeck keeps one identity file"},
	}, {
		name:   "defaults: ip is the alias, no port, no credentials",
		config: "Host db.example\n User root\n",
		want:   []item{{Name: "db.example", IP: "db.example", User: "root"}},
	}, {
		name:   "no User",
		config: "Host web\n HostName 10.0.0.5\n",
		want:   []item{{Name: "web", IP: "10.0.0.5", Err: "line 1 (Host web): User is required"}},
	}, {
		name:    "wildcard blocks are Parse's skipped lines, first",
		config:  "Host web\n User u\nHost *\n User everyone\n Port 2\n",
		want:    []item{{Name: "web", IP: "web", User: "u"}},
		skipped: []string{"3 Host *: ", "4 User *: ", "5 Port *: "},
	}, {
		name:   "ProxyJump by alias, before or after its block",
		config: "Host web\n User u\n ProxyJump bastion,gw\nHost bastion\n User b\nHost gw\n User g\n Port 2200\n",
		want: []item{
			{Name: "web", IP: "web", User: "u", Hops: []string{"item 1", "item 2"}},
			{Name: "bastion", IP: "bastion", User: "b"},
			{Name: "gw", IP: "gw", User: "g", Port: 2200},
		},
	}, {
		name:   "ProxyJump by alias with the block's own user and port",
		config: "Host bastion\n User b\nHost gw\n User g\n Port 2200\nHost web\n User u\n ProxyJump b@bastion:22,g@gw:2200\n",
		want: []item{
			{Name: "bastion", IP: "bastion", User: "b"},
			{Name: "gw", IP: "gw", User: "g", Port: 2200},
			{Name: "web", IP: "web", User: "u", Hops: []string{"item 0", "item 1"}},
		},
	}, {
		name:   "ProxyJump none",
		config: "Host web\n User u\n ProxyJump none\n",
		want:   []item{{Name: "web", IP: "web", User: "u"}},
	}, {
		name:   "ProxyJump by a stored host's name",
		config: "Host web\n User u\n ProxyJump gw\n",
		opt:    hostconfig.Options{Existing: map[string][]int64{"gw": {7}}},
		want:   []item{{Name: "web", IP: "web", User: "u", Hops: []string{"host 7"}}},
	}, {
		name:   "an alias wins over a stored host's name",
		config: "Host web\n User u\n ProxyJump gw\nHost gw\n User g\n",
		opt:    hostconfig.Options{Existing: map[string][]int64{"gw": {7}}},
		want:   []item{{Name: "web", IP: "web", User: "u", Hops: []string{"item 1"}}, {Name: "gw", IP: "gw", User: "g"}},
	}, {
		name:   "a name several stored hosts have",
		config: "Host web\n User u\n ProxyJump gw\n",
		opt:    hostconfig.Options{Existing: map[string][]int64{"gw": {7, 8}}},
		want:   []item{{Name: "web", IP: "web", User: "u", Err: "line 1 (Host web): ProxyJump: hop gw names 2 of your hosts"}},
	}, {
		name:   "ProxyJump by address: a new host, one per distinct hop",
		config: "Host a\n User u\n ProxyJump admin@10.1.1.1:2200\nHost b\n User u\n ProxyJump admin@10.1.1.1:2200,admin@10.1.1.1\n",
		want: []item{
			{Name: "a", IP: "a", User: "u", Hops: []string{"item 2"}},
			{Name: "b", IP: "b", User: "u", Hops: []string{"item 2", "item 3"}},
			{Name: "admin@10.1.1.1:2200", IP: "10.1.1.1", User: "admin", Port: 2200},
			{Name: "admin@10.1.1.1", IP: "10.1.1.1", User: "admin"},
		},
	}, {
		name:   "a stored name with a user is an address",
		config: "Host web\n User u\n ProxyJump root@gw\n",
		opt:    hostconfig.Options{Existing: map[string][]int64{"gw": {7}}},
		want: []item{
			{Name: "web", IP: "web", User: "u", Hops: []string{"item 1"}},
			{Name: "root@gw", IP: "gw", User: "root"},
		},
	}, {
		name:   "an address hop without a user",
		config: "Host web\n User u\n ProxyJump 10.9.9.9\n",
		want: []item{
			{Name: "web", IP: "web", User: "u", Hops: []string{"item 1"}},
			{Name: "10.9.9.9", IP: "10.9.9.9", Err: "ProxyJump hop 10.9.9.9: User is required"},
		},
	}, {
		// ssh reaches other@bastion with the bastion block's HostName,
		// port and identity (it runs ssh -l other bastion with the same
		// config), so the new host is at that address.
		name:   "an alias's hop with another user: a host of its own at the block's address",
		config: "Host bastion\n HostName 192.0.2.1\n User b\n Port 2022\n IdentityFile ~/.ssh/b\nHost web\n User u\n ProxyJump other@bastion\n",
		want: []item{
			{Name: "bastion", IP: "192.0.2.1", User: "b", Port: 2022, Identity: "~/.ssh/b", Auth: key},
			{Name: "web", IP: "web", User: "u", Hops: []string{"item 2"}},
			{Name: "other@bastion", IP: "192.0.2.1", User: "other", Port: 2022, Identity: "~/.ssh/b", Auth: key},
		},
	}, {
		name:   "an alias's hop with another port: the block's user",
		config: "Host bastion\n HostName 192.0.2.1\n User b\nHost web\n User u\n ProxyJump bastion:2200\n",
		want: []item{
			{Name: "bastion", IP: "192.0.2.1", User: "b"},
			{Name: "web", IP: "web", User: "u", Hops: []string{"item 2"}},
			{Name: "bastion:2200", IP: "192.0.2.1", User: "b", Port: 2200},
		},
	}, {
		name:   "an exported route comes back as the jump hosts it was made of",
		config: "Host a\n User u\nHost b\n User u\n ProxyJump a\nHost x\n User u\n ProxyJump a,a,b\nHost y\n User u\n ProxyJump b\n",
		want: []item{
			{Name: "a", IP: "a", User: "u"},
			{Name: "b", IP: "b", User: "u", Hops: []string{"item 0"}},
			{Name: "x", IP: "x", User: "u", Hops: []string{"item 0", "item 1"}},
			// b's route is not before it: b as it is.
			{Name: "y", IP: "y", User: "u", Hops: []string{"item 1"}},
		},
	}, {
		name:   "forwards without local",
		config: "Host web\n User u\n RemoteForward 8080 127.0.0.1:3000\n LocalForward 9090 localhost:5432\n",
		want:   []item{{Name: "web", IP: "web", User: "u"}},
		skipped: []string{
			"1 LocalForward web: 9090 localhost:5432: a forward is between the machine ssh runs on and the host",
			"1 RemoteForward web: 8080 127.0.0.1:3000: a forward is between the machine ssh runs on and the host",
		},
	}, {
		name: "forwards with local",
		config: "Host laptop\n User me\n HostName 127.0.0.1\n" +
			"Host web\n User u\n RemoteForward 8080 127.0.0.1:3000\n LocalForward 9090 localhost:5432\n" +
			" RemoteForward 0.0.0.0:81 127.0.0.1:80\n LocalForward 7000 10.0.0.1:22\n LocalForward localhost:7001 127.0.0.1:23\n",
		opt: hostconfig.Options{Local: "laptop"},
		want: []item{
			// RemoteForward R 127.0.0.1:P on web: laptop's tunnel to web,
			// web listening on R (ssh -R run on laptop).
			{Name: "laptop", IP: "127.0.0.1", User: "me", Tunnels: []string{"3000→8080 web (item 1)"}},
			// LocalForward R 127.0.0.1:P on web: web's tunnel to laptop,
			// laptop listening on R.
			{Name: "web", IP: "web", User: "u", Tunnels: []string{"5432→9090 laptop (item 0)", "23→7001 laptop (item 0)"}},
		},
		skipped: []string{
			"4 LocalForward web: 7000 10.0.0.1:22: reaches 10.0.0.1, not 127.0.0.1 or localhost",
			"4 RemoteForward web: 0.0.0.0:81 127.0.0.1:80: binds 0.0.0.0, not loopback",
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := sshconfig.Parse(strings.NewReader(tt.config))
			if err != nil {
				t.Fatal(err)
			}
			items, skipped, err := hostconfig.Import(cfg, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != len(tt.want) {
				t.Fatalf("%d items, want %d: %+v", len(items), len(tt.want), items)
			}
			for i, it := range items {
				got, want := short(it), tt.want[i]
				if want.Err != "" && strings.Contains(got.Err, want.Err) {
					got.Err = want.Err
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("item %d:\n got %+v\nwant %+v", i, got, want)
				}
			}
			if len(skipped) != len(tt.skipped) {
				t.Fatalf("skipped %+v, want %q", skipped, tt.skipped)
			}
			for i, s := range skipped {
				if !strings.HasPrefix(skip(s), tt.skipped[i]) {
					t.Errorf("skipped[%d] = %q, want %q…", i, skip(s), tt.skipped[i])
				}
			}
		})
	}
}

func TestImportLocalNotAHost(t *testing.T) {
	cfg, err := sshconfig.Parse(strings.NewReader("Host web\n User u\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = hostconfig.Import(cfg, hostconfig.Options{Local: "laptop"})
	if sshdeck.ErrorCode(err) != sshdeck.Invalid || !strings.Contains(err.Error(), `"laptop" is no Host of the config`) {
		t.Fatalf("Import = %v, want Invalid naming laptop", err)
	}
}

func TestExport(t *testing.T) {
	host := func(id int64, name string, jumps []int64, tunnels ...sshdeck.TunnelConnection) hostconfig.Host {
		h := hostconfig.Host{ID: id, HostConfig: sshdeck.HostConfig{Name: name, IP: "10.0.0." + fmt.Sprint(id), Port: 22, Username: "u"}}
		for _, j := range jumps {
			h.JumpHosts = append(h.JumpHosts, sshdeck.JumpHost{HostID: j})
		}
		h.TunnelConnections = tunnels
		return h
	}
	tc := func(source, endpoint int, ref string) sshdeck.TunnelConnection {
		return sshdeck.TunnelConnection{SourcePort: source, EndpointPort: endpoint, EndpointHost: ref}
	}
	// laptop (1) is local; x's route is a, c, b (b's own jump host before
	// it); broken's hop 99 is missing; p and q name each other.
	in := []hostconfig.Host{
		host(1, "laptop", nil, tc(3000, 8080, "2"), tc(3000, 8080, "a"), tc(4000, 4001, "dup"), tc(5000, 5001, "99")),
		host(2, "a", nil, tc(5432, 9090, "laptop"), tc(1, 2, "3")),
		host(3, "c", nil),
		host(4, "b", []int64{3}),
		host(5, "x", []int64{2, 4}),
		host(6, "broken", []int64{2, 99}),
		host(7, "p", []int64{8}),
		host(8, "q", []int64{7}),
		host(9, "dup", nil),
		host(10, "dup", nil),
	}
	in[0].IdentityFile = "~/.ssh/id laptop"
	out := hostconfig.Export(in, 1)
	type block struct {
		Alias, HostName, User string
		Port                  int
		Identity              []string
		Jump                  string
		Local, Remote         []sshconfig.Forward
	}
	got := make([]block, len(out))
	for i, h := range out {
		var jumps []string
		for _, j := range h.ProxyJump {
			jumps = append(jumps, j.String())
		}
		got[i] = block{h.Alias, h.HostName, h.User, h.Port, h.IdentityFiles, strings.Join(jumps, ","), h.LocalForwards, h.RemoteForwards}
	}
	fw := func(bind, port int) []sshconfig.Forward {
		return []sshconfig.Forward{{BindPort: bind, Host: "127.0.0.1", HostPort: port}}
	}
	want := []block{
		{Alias: "laptop", HostName: "10.0.0.1", User: "u", Port: 22, Identity: []string{"~/.ssh/id laptop"}},
		// laptop's tunnel to a, by id and by name: one RemoteForward. a's
		// tunnel to laptop: a LocalForward. a's tunnel to c: not local's.
		{Alias: "a", HostName: "10.0.0.2", User: "u", Port: 22, Local: fw(9090, 5432), Remote: fw(8080, 3000)},
		{Alias: "c", HostName: "10.0.0.3", User: "u", Port: 22},
		{Alias: "b", HostName: "10.0.0.4", User: "u", Port: 22, Jump: "c"},
		{Alias: "x", HostName: "10.0.0.5", User: "u", Port: 22, Jump: "a,c,b"},
		{Alias: "broken", HostName: "10.0.0.6", User: "u", Port: 22},
		{Alias: "p", HostName: "10.0.0.7", User: "u", Port: 22},
		{Alias: "q", HostName: "10.0.0.8", User: "u", Port: 22},
		{Alias: "dup", HostName: "10.0.0.9", User: "u", Port: 22},
		{Alias: "dup-10", HostName: "10.0.0.10", User: "u", Port: 22},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			if i >= len(got) || i >= len(want) || !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("host %d:\n got %+v\nwant %+v", i, got[i], want[i])
			}
		}
	}
	// With no local, or a local that is none of the hosts, no forwards.
	for _, local := range []int64{0, 42} {
		for _, h := range hostconfig.Export(in, local) {
			if len(h.LocalForwards)+len(h.RemoteForwards) > 0 {
				t.Errorf("local %d: host %s has forwards", local, h.Alias)
			}
		}
	}
}
