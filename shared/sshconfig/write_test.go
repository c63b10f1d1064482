package sshconfig

import (
	"bytes"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func TestWrite(t *testing.T) {
	hosts := []Host{
		{Alias: "web", HostName: "10.0.1.10", User: `CORP\deploy`, Port: 2222,
			IdentityFiles: []string{"~/my keys/id_ed25519", "~/.ssh/plain", `a"b`, "#hash", "=eq"},
			ProxyJump:     []Jump{{Host: "a"}, {User: "b", Host: "c", Port: 2222}, {Host: "fe80::1", Port: 22}},
			LocalForwards: []Forward{
				{BindPort: 8080, Host: "localhost", HostPort: 80},
				{BindAddress: "::1", BindPort: 5433, Host: "fe80::1%eth0", HostPort: 5432},
				{BindAddress: "*", BindPort: 9000, Host: "metrics", HostPort: 9000},
			},
			RemoteForwards: []Forward{{BindPort: 0, Host: "localhost", HostPort: 3000}},
			Line:           99},
		{Alias: "pct", HostName: "%h.100%"},
		{Alias: "direct", ProxyJump: []Jump{{Host: "none"}}},
		{Alias: "bare"},
	}
	var b bytes.Buffer
	if err := Write(&b, hosts); err != nil {
		t.Fatal(err)
	}
	want := header + `
Host web
  HostName 10.0.1.10
  User "CORP\\deploy"
  Port 2222
  IdentityFile "~/my keys/id_ed25519"
  IdentityFile ~/.ssh/plain
  IdentityFile "a\"b"
  IdentityFile "#hash"
  IdentityFile "=eq"
  ProxyJump a,b@c:2222,[fe80::1]:22
  LocalForward 8080 localhost:80
  LocalForward [::1]:5433 [fe80::1%eth0]:5432
  LocalForward *:9000 metrics:9000
  RemoteForward 0 localhost:3000

Host pct
  HostName %%h.100%%

Host direct
  ProxyJump none

Host bare
`
	if b.String() != want {
		t.Errorf("Write:\n%s\nwant:\n%s", b.String(), want)
	}
	c := parseString(t, b.String())
	if !reflect.DeepEqual(withoutLines(c.Hosts), withoutLines(hosts)) || c.Skipped != nil {
		t.Errorf("read back:\n got %+v %+v\nwant %+v", c.Hosts, c.Skipped, withoutLines(hosts))
	}
}

func TestWriteRefuses(t *testing.T) {
	ok := Host{Alias: "ok"}
	for _, tc := range []struct {
		name  string
		hosts []Host
		msg   string
	}{
		{"empty alias", []Host{{}}, `host 0 (""): alias "" is not a single host name OpenSSH can match (no wildcards, whitespace, or shell and separator characters)`},
		{"wildcard alias", []Host{ok, {Alias: "web*"}}, `host 1 ("web*"): alias "web*" is not a single host name OpenSSH can match (no wildcards, whitespace, or shell and separator characters)`},
		{"alias with a space", []Host{{Alias: "my web"}}, `host 0 ("my web"): alias "my web" is not a single host name OpenSSH can match (no wildcards, whitespace, or shell and separator characters)`},
		{"negated alias", []Host{{Alias: "!web"}}, `host 0 ("!web"): alias "!web" is not a single host name OpenSSH can match (no wildcards, whitespace, or shell and separator characters)`},
		{"alias an option", []Host{{Alias: "-oProxyCommand=x"}}, `host 0 ("-oProxyCommand=x"): alias "-oProxyCommand=x" is not a single host name OpenSSH can match (no wildcards, whitespace, or shell and separator characters)`},
		{"alias twice", []Host{ok, ok}, `host 1: alias "ok" is used twice (OpenSSH would merge the two)`},
		{"newline in HostName", []Host{{Alias: "a", HostName: "h\nUser root"}}, `host 0 ("a"): HostName "h\nUser root" is not a host name or address`},
		{"shell in HostName", []Host{{Alias: "a", HostName: "h;id"}}, `host 0 ("a"): HostName "h;id" is not a host name or address`},
		{"space in User", []Host{{Alias: "a", User: "a b"}}, `host 0 ("a"): User "a b" is not a user name sshdeck can write (no spaces, quotes, %, $ or shell characters)`},
		{"percent in User", []Host{{Alias: "a", User: "%u"}}, `host 0 ("a"): User "%u" is not a user name sshdeck can write (no spaces, quotes, %, $ or shell characters)`},
		{"port", []Host{{Alias: "a", Port: 70000}}, `host 0 ("a"): Port 70000 is not from 1 to 65535`},
		{"negative port", []Host{{Alias: "a", Port: -1}}, `host 0 ("a"): Port -1 is not from 1 to 65535`},
		{"newline in a path", []Host{{Alias: "a", IdentityFiles: []string{"k\nUser x"}}}, `host 0 ("a"): IdentityFile "k\nUser x" is not a path sshdeck can write`},
		{"empty path", []Host{{Alias: "a", IdentityFiles: []string{""}}}, `host 0 ("a"): IdentityFile "" is not a path sshdeck can write`},
		{"path twice", []Host{{Alias: "a", IdentityFiles: []string{"k", "k"}}}, `host 0 ("a"): IdentityFile "k" is listed twice (OpenSSH would drop one)`},
		{"jump host with a comma", []Host{{Alias: "a", ProxyJump: []Jump{{Host: "b,c"}}}}, `host 0 ("a"): ProxyJump: hop "b,c" is not a host name sshdeck can write`},
		{"jump host with a %-token", []Host{{Alias: "a", ProxyJump: []Jump{{Host: "fe80::1%eth0"}}}}, `host 0 ("a"): ProxyJump: hop "fe80::1%eth0" is not a host name sshdeck can write`},
		{"jump user with a backslash", []Host{{Alias: "a", ProxyJump: []Jump{{User: `CORP\u`, Host: "b"}}}}, `host 0 ("a"): ProxyJump: hop user "CORP\\u" is not a user name sshdeck can write`},
		{"jump user with a space", []Host{{Alias: "a", ProxyJump: []Jump{{User: "u v", Host: "b"}}}}, `host 0 ("a"): ProxyJump: hop user "u v" is not a user name sshdeck can write`},
		{"jump port", []Host{{Alias: "a", ProxyJump: []Jump{{Host: "b", Port: 65536}}}}, `host 0 ("a"): ProxyJump: hop port 65536 is not from 1 to 65535`},
		{"a hop named None alone", []Host{{Alias: "a", ProxyJump: []Jump{{Host: "None"}}}}, `host 0 ("a"): ProxyJump: a single hop named "None" reads as ProxyJump none`},
		{"local forward from port 0", []Host{{Alias: "a", LocalForwards: []Forward{{BindPort: 0, Host: "h", HostPort: 1}}}}, `host 0 ("a"): LocalForward: port 0 is not from 1 to 65535`},
		{"forward to port 0", []Host{{Alias: "a", RemoteForwards: []Forward{{BindPort: 1, Host: "h"}}}}, `host 0 ("a"): RemoteForward: port 0 is not from 1 to 65535`},
		{"forward to a path", []Host{{Alias: "a", LocalForwards: []Forward{{BindPort: 1, Host: "/tmp/s", HostPort: 1}}}}, `host 0 ("a"): LocalForward: host "/tmp/s" is not a host name or address`},
		{"forward bind with a bracket", []Host{{Alias: "a", LocalForwards: []Forward{{BindAddress: "[::1]", BindPort: 1, Host: "h", HostPort: 1}}}}, `host 0 ("a"): LocalForward: bind address "[::1]" is not a host name or address`},
		{"forward too long", []Host{{Alias: "a", LocalForwards: []Forward{{BindAddress: strings.Repeat("b", 200), BindPort: 1, Host: strings.Repeat("h", 60), HostPort: 1}}}}, `host 0 ("a"): LocalForward: longer than OpenSSH reads (255 bytes)`},
		{"forward twice", []Host{{Alias: "a", LocalForwards: []Forward{{BindPort: 1, Host: "h", HostPort: 2}, {BindPort: 1, Host: "h", HostPort: 2}}}}, `host 0 ("a"): LocalForward 1 h:2 is listed twice (OpenSSH would drop one)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			err := Write(&b, tc.hosts)
			if sshdeck.ErrorCode(err) != sshdeck.Invalid {
				t.Fatalf("Write: %v, want Invalid", err)
			}
			if msg := sshdeck.ErrorMessage(err); msg != tc.msg {
				t.Errorf("message\n got %s\nwant %s", msg, tc.msg)
			}
			if b.Len() != 0 {
				t.Errorf("Write wrote %d bytes before refusing", b.Len())
			}
		})
	}
}

// TestRoundTrip: Parse(Write(hosts)) gives the hosts back, for the
// realistic file's hosts and for random ones; Write of what Parse read
// gives the same bytes again.
func TestRoundTrip(t *testing.T) {
	data, err := os.ReadFile("testdata/realistic.conf")
	if err != nil {
		t.Fatal(err)
	}
	sets := [][]Host{parseString(t, string(data)).Hosts}
	r := rand.New(rand.NewPCG(1, 2))
	g := gen{pick: r.IntN}
	for range 200 {
		sets = append(sets, g.hosts(1+r.IntN(4)))
	}
	for _, hosts := range sets {
		var b bytes.Buffer
		if err := Write(&b, hosts); err != nil {
			t.Fatalf("Write(%+v): %v", hosts, err)
		}
		c := parseString(t, b.String())
		if !reflect.DeepEqual(withoutLines(c.Hosts), withoutLines(hosts)) || c.Skipped != nil {
			t.Fatalf("wrote\n%s\nread back %+v %+v\nwant %+v", b.String(), c.Hosts, c.Skipped, withoutLines(hosts))
		}
		var again bytes.Buffer
		if err := Write(&again, c.Hosts); err != nil || again.String() != b.String() {
			t.Fatalf("second Write differs (%v):\n%s\nfirst:\n%s", err, again.String(), b.String())
		}
	}
}
