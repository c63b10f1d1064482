package sshconfig

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// realisticHosts and realisticSkipped are what testdata/realistic.conf
// holds: comments, quoted values, Key=value, mixed-case keywords, Include,
// Match, wildcards, an unknown keyword, a two-hop ProxyJump and forwards of
// every form.
var realisticHosts = []Host{
	{Alias: "bastion", HostName: "bastion.example.com", User: "jump", Port: 2222,
		IdentityFiles: []string{"~/my keys/id_ed25519"}, Line: 10},
	{Alias: "web", HostName: "10.0.1.10", User: "deploy",
		IdentityFiles: []string{"~/.ssh/web_ed25519"},
		ProxyJump:     []Jump{{Host: "bastion"}},
		LocalForwards: []Forward{
			{BindPort: 8080, Host: "localhost", HostPort: 80},
			{BindAddress: "127.0.0.1", BindPort: 8443, Host: "localhost", HostPort: 443},
			{BindAddress: "::1", BindPort: 5433, Host: "fe80::1", HostPort: 5432},
			{BindAddress: "*", BindPort: 9000, Host: "metrics", HostPort: 9000},
		},
		RemoteForwards: []Forward{
			{BindPort: 2222, Host: "localhost", HostPort: 22},
			{BindAddress: "0.0.0.0", BindPort: 9100, Host: "::1", HostPort: 9100},
			{BindPort: 0, Host: "localhost", HostPort: 3000},
		},
		Line: 17},
	{Alias: "db", HostName: "db.internal", User: "postgres", Port: 22022,
		IdentityFiles: []string{"~/.ssh/db_rsa", "~/.ssh/old db key"},
		ProxyJump:     []Jump{{Host: "a"}, {User: "b", Host: "c", Port: 2222}},
		Line:          33},
	{Alias: "legacy", HostName: "legacy.example.com", Line: 44},
	{Alias: "nas", HostName: "nas.home.arpa", Port: 2200, Line: 49},
	{Alias: "gateway", HostName: "192.0.2.7", ProxyJump: []Jump{{Host: "none"}}, Line: 64},
}

const (
	preambleReason = "before the first Host line: OpenSSH applies it to every host; not imported"
	wildcard53     = "*.example.com !bastion.example.com"
)

var realisticSkipped = []Skipped{
	{3, "IgnoreUnknown", "", preambleReason},
	{4, "AddKeysToAgent", "", preambleReason},
	{5, "UseKeychain", "", preambleReason},
	{7, "Include", "", reasonInclude},
	{15, "ForwardAgent", "bastion", reasonUnsupported},
	{17, "Host", "web", "patterns other than the alias are not imported: web.example.com"},
	{29, "RemoteForward", "web", "a dynamic (SOCKS) RemoteForward is not supported: not imported"},
	{30, "LocalForward", "web", "forwards of Unix-domain sockets are not supported: not imported"},
	{31, "ServerAliveInterval", "web", reasonUnsupported},
	{41, "User", "db", "OpenSSH uses the User of line 35 for this host: not imported"},
	{42, "Include", "db", reasonInclude},
	{46, "ProxyCommand", "legacy", reasonUnsupported},
	{47, "ProxyJump", "legacy", "OpenSSH uses the ProxyCommand of line 46 for this host: not imported"},
	{53, "Host", wildcard53, "names no single host: not imported"},
	{54, "User", wildcard53, "in the Host block of line 53, which names no single host: not imported"},
	{55, "Compression", wildcard53, "in the Host block of line 53, which names no single host: not imported"},
	{57, "Match", "", "Match block (lines 57-62) not imported: sshdeck does not evaluate Match conditions"},
	{68, "Host", "*", "names no single host: not imported; OpenSSH also applies this block to bastion, web, db, legacy, nas, gateway"},
	{69, "ServerAliveInterval", "*", "in the Host block of line 68, which names no single host: not imported"},
	{70, "IdentitiesOnly", "*", "in the Host block of line 68, which names no single host: not imported"},
}

func parseString(t *testing.T, s string) *Config {
	t.Helper()
	c, err := Parse(strings.NewReader(s))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func TestParseRealistic(t *testing.T) {
	data, err := os.ReadFile("testdata/realistic.conf")
	if err != nil {
		t.Fatal(err)
	}
	c := parseString(t, string(data))
	if len(c.Hosts) != len(realisticHosts) {
		t.Errorf("%d hosts, want %d", len(c.Hosts), len(realisticHosts))
	}
	for i := range min(len(c.Hosts), len(realisticHosts)) {
		if !reflect.DeepEqual(c.Hosts[i], realisticHosts[i]) {
			t.Errorf("host %d:\n got %+v\nwant %+v", i, c.Hosts[i], realisticHosts[i])
		}
	}
	if !reflect.DeepEqual(c.Skipped, realisticSkipped) {
		t.Errorf("Skipped:")
		for _, s := range c.Skipped {
			t.Errorf("  got  %+v", s)
		}
		for _, s := range realisticSkipped {
			t.Errorf("  want %+v", s)
		}
	}
}

// TestParseSmall covers the rules one at a time.
func TestParseSmall(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		hosts    []Host
		skipped  []Skipped
	}{
		{"empty", "", nil, nil},
		{"comments and blanks", "# c\n\n   \n\t# indented\n", nil, nil},
		{"key=value forms", "Host a\nUser=u1\nHostName = h.example\n  Port =22\n",
			[]Host{{Alias: "a", User: "u1", HostName: "h.example", Port: 22, Line: 1}}, nil},
		{"CRLF", "Host a\r\nUser u\r\n", []Host{{Alias: "a", User: "u", Line: 1}}, nil},
		{"quoted keyword", `"Host" a` + "\n" + `"User" u`, []Host{{Alias: "a", User: "u", Line: 1}}, nil},
		{"quotes and escapes", `Host a` + "\n" + `IdentityFile "x y"z` + "\n" + `IdentityFile 'q"r'` + "\n" + `IdentityFile a\ b\\c\d`,
			[]Host{{Alias: "a", IdentityFiles: []string{"x yz", `q"r`, `a b\c\d`}, Line: 1}}, nil},
		{"comment at a token's start only", "Host a # the a host\nIdentityFile x#y # z",
			[]Host{{Alias: "a", IdentityFiles: []string{"x#y"}, Line: 1}}, nil},
		{"port with leading zeros", "Host a\nPort 0022", []Host{{Alias: "a", Port: 22, Line: 1}}, nil},
		{"two blocks of one alias merge", "Host a\nUser u\nHost b\nHost a\nUser v\nPort 2\nIdentityFile k",
			[]Host{{Alias: "a", User: "u", Port: 2, IdentityFiles: []string{"k"}, Line: 1}, {Alias: "b", Line: 3}},
			[]Skipped{{5, "User", "a", "OpenSSH uses the User of line 2 for this host: not imported"}}},
		{"negated alias", "Host a !a b\nUser u",
			[]Host{{Alias: "b", User: "u", Line: 1}},
			[]Skipped{{1, "Host", "b", "patterns other than the alias are not imported: a !a"}}},
		{"wildcard block reaching other hosts", "Host w1\nHost w2 x\nHost w*\nUser u",
			[]Host{{Alias: "w1", Line: 1}, {Alias: "w2", Line: 2}},
			[]Skipped{
				{2, "Host", "w2", "patterns other than the alias are not imported: x"},
				{3, "Host", "w*", "names no single host: not imported; OpenSSH also applies this block to w1, w2"},
				{4, "User", "w*", "in the Host block of line 3, which names no single host: not imported"},
			}},
		{"other patterns reaching another host", "Host a b\nHost b",
			[]Host{{Alias: "a", Line: 1}, {Alias: "b", Line: 2}},
			[]Skipped{{1, "Host", "a", "patterns other than the alias are not imported: b; OpenSSH also applies this block to b"}}},
		{"Host with no pattern", "Host # nothing\nUser u",
			nil,
			[]Skipped{
				{1, "Host", "", "names no single host: not imported"},
				{2, "User", "", "in the Host block of line 1, which names no single host: not imported"},
			}},
		{"pattern with shell characters is no alias", "Host a;b\nUser u",
			nil,
			[]Skipped{
				{1, "Host", "a;b", "names no single host: not imported"},
				{2, "User", "a;b", "in the Host block of line 1, which names no single host: not imported"},
			}},
		{"Match then Host", "Match all\nUser u\nHost a\nUser v",
			[]Host{{Alias: "a", User: "v", Line: 3}},
			[]Skipped{{1, "Match", "", "Match block (lines 1-2) not imported: sshdeck does not evaluate Match conditions"}}},
		{"Match of one line, then Match", "Match all\n\nMatch user x",
			nil,
			[]Skipped{
				{1, "Match", "", "Match block (line 1) not imported: sshdeck does not evaluate Match conditions"},
				{3, "Match", "", "Match block (line 3) not imported: sshdeck does not evaluate Match conditions"},
			}},
		{"an earlier block for several hosts comes first", "User me\nHost web web2\nUser u\nPort 2022\nHost web2\nUser v\nHostName h2\n" +
			"Host *\nPort 2200\nProxyCommand nc %h %p\nHost web\nHostName hweb\nProxyJump j\nPort 1",
			[]Host{{Alias: "web", HostName: "hweb", Port: 2022, Line: 2}, {Alias: "web2", HostName: "h2", Line: 5}},
			[]Skipped{
				{1, "User", "", preambleReason},
				{2, "Host", "web", "patterns other than the alias are not imported: web2; OpenSSH also applies this block to web2"},
				{3, "User", "web", "OpenSSH uses the User of line 1 for this host: not imported"},
				{6, "User", "web2", "OpenSSH uses the User of line 1 for this host: not imported"},
				{8, "Host", "*", "names no single host: not imported; OpenSSH also applies this block to web, web2"},
				{9, "Port", "*", "in the Host block of line 8, which names no single host: not imported"},
				{10, "ProxyCommand", "*", "in the Host block of line 8, which names no single host: not imported"},
				{13, "ProxyJump", "web", "OpenSSH uses the ProxyCommand of line 10 for this host: not imported"},
				{14, "Port", "web", "OpenSSH uses the Port of line 4 for this host: not imported"},
			}},
		{"HostName tokens", "Host a\nHostName %h.x%%y", []Host{{Alias: "a", HostName: "a.x%y", Line: 1}}, nil},
		{"IdentityFile2 and duplicates", "Host a\nIdentityFile2 k\nidentityfile k",
			[]Host{{Alias: "a", IdentityFiles: []string{"k"}, Line: 1}}, nil},
		{"ProxyJump forms", "Host a\nProxyJump u@[::1]:2200,ssh://v%41;fp=x@h.example.:22/,[10.0.0.1],h:",
			[]Host{{Alias: "a", ProxyJump: []Jump{
				{User: "u", Host: "::1", Port: 2200}, {User: "vA", Host: "h.example", Port: 22},
				{Host: "10.0.0.1"}, {Host: "h"},
			}, Line: 1}}, nil},
		{"ProxyJump none, case-insensitive", "Host a\nProxyJump NONE", []Host{{Alias: "a", ProxyJump: []Jump{{Host: "none"}}, Line: 1}}, nil},
		{"ProxyJump through a host named none", "Host a\nProxyJump none:22", []Host{{Alias: "a", ProxyJump: []Jump{{Host: "none", Port: 22}}, Line: 1}}, nil},
		{"ProxyJump first wins, ProxyCommand after it is reported", "Host a\nProxyJump j\nProxyJump k\nProxyCommand nc %h %p",
			[]Host{{Alias: "a", ProxyJump: []Jump{{Host: "j"}}, Line: 1}},
			[]Skipped{
				{3, "ProxyJump", "a", "OpenSSH uses the ProxyJump of line 2 for this host: not imported"},
				{4, "ProxyCommand", "a", reasonUnsupported},
			}},
		{"forwards", "Host a\n" +
			"LocalForward 1 h:2\nLocalForward b:3 [::1]:4\nLocalForward []:5 h\\:x:6\nLocalForward *:7 h:8\n" +
			"LocalForward 1 h:2\nRemoteForward 0 h:9\nRemoteForward [fe80::1%eth0]:10 h:11\nRemoteForward 12 \"\"\n" +
			"LocalForward 13 ${HOST}:14\nLocalForward 15 /sock\nRemoteForward /sock h:16\nLocalForward \" 17\" h:18",
			[]Host{{Alias: "a", LocalForwards: []Forward{
				{BindPort: 1, Host: "h", HostPort: 2},
				{BindAddress: "b", BindPort: 3, Host: "::1", HostPort: 4},
				{BindAddress: "*", BindPort: 5, Host: "h:x", HostPort: 6},
				{BindAddress: "*", BindPort: 7, Host: "h", HostPort: 8},
				{BindPort: 17, Host: "h", HostPort: 18},
			}, RemoteForwards: []Forward{
				{BindPort: 0, Host: "h", HostPort: 9},
				{BindAddress: "fe80::1%eth0", BindPort: 10, Host: "h", HostPort: 11},
			}, Line: 1}},
			[]Skipped{
				{9, "RemoteForward", "a", "a dynamic (SOCKS) RemoteForward is not supported: not imported"},
				{10, "LocalForward", "a", "${...} in a forward is expanded from the user's environment: not imported"},
				{11, "LocalForward", "a", "forwards of Unix-domain sockets are not supported: not imported"},
				{12, "RemoteForward", "a", "forwards of Unix-domain sockets are not supported: not imported"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := parseString(t, tc.in)
			if !reflect.DeepEqual(c.Hosts, tc.hosts) {
				t.Errorf("Hosts\n got %+v\nwant %+v", c.Hosts, tc.hosts)
			}
			if !reflect.DeepEqual(c.Skipped, tc.skipped) {
				t.Errorf("Skipped\n got %+v\nwant %+v", c.Skipped, tc.skipped)
			}
		})
	}
}

// parseErrors are lines that do not parse: each is an Invalid error
// naming its line and keyword. openssh says whether `ssh -G` rejects the
// file too (TestOpenSSHRejects); where it does not, sshdeck is stricter on
// purpose and why is in the comment.
var parseErrors = []struct {
	name, in, msg string
	openssh       bool
}{
	{"unterminated quote", "Host a\nUser \"bob", `line 2: User: unterminated quote`, true},
	{"unterminated single quote", "Host a\nIdentityFile 'k", `line 2: IdentityFile: unterminated quote`, true},
	{"keyword without value", "Host a\nHostName", `line 2: HostName: no argument after the keyword`, true},
	{"keyword = nothing", "Host a\nUser=", `line 2: User: no argument after the keyword`, true},
	{"only a comment", "Host a\nUser # nobody", `line 2: User: missing argument`, true},
	{"empty quoted value", "Host a\nIdentityFile \"\"", `line 2: IdentityFile: missing argument`, true},
	{"extra argument", "Host a\nUser a b", `line 2: User: extra arguments at end of line`, true},
	{"unknown keyword without value", "Host a\nForwardAgent", `line 2: ForwardAgent: no argument after the keyword`, true},
	{"port not a number", "Host a\nPort abc", `line 2: Port: "abc" is not a port number from 1 to 65535`, true},
	{"port 0", "Host a\nPort 0", `line 2: Port: "0" is not a port number from 1 to 65535`, true},
	{"port too big", "Host a\nPort 65536", `line 2: Port: "65536" is not a port number from 1 to 65535`, true},
	// OpenSSH looks service names up in the user's /etc/services.
	{"port a service name", "Host a\nPort ssh", `line 2: Port: "ssh" is not a port number from 1 to 65535`, false},
	{"bad port in a wildcard block", "Host *\nPort x", `line 2: Port: "x" is not a port number from 1 to 65535`, true},
	{"bad port in a Match block", "Match all\nPort 99999", `line 2: Port: "99999" is not a port number from 1 to 65535`, true},
	{"bad port before any Host", "Port -1", `line 1: Port: "-1" is not a port number from 1 to 65535`, true},
	{"forward without target", "Host a\nLocalForward 8080", `line 2: LocalForward: missing target argument`, true},
	{"forward without port", "Host a\nLocalForward 8080 db", `line 2: LocalForward: bad forwarding specification "8080:db"`, true},
	{"forward to port 0", "Host a\nLocalForward 8080 db:0", `line 2: LocalForward: bad forwarding specification "8080:db:0"`, true},
	{"local forward from port 0", "Host a\nLocalForward 0 db:1", `line 2: LocalForward: bad forwarding specification "0:db:1"`, true},
	{"forward bracket not closed", "Host a\nLocalForward [::1:80 db:1", `line 2: LocalForward: bad forwarding specification "[::1:80:db:1"`, true},
	{"forward too many fields", "Host a\nRemoteForward a:1:b:2 c:3", `line 2: RemoteForward: bad forwarding specification "a:1:b:2:c:3"`, true},
	{"forward extra argument", "Host a\nLocalForward 1 h:2 x", `line 2: LocalForward: extra arguments at end of line`, true},
	{"forward port too big", "Host a\nRemoteForward 70000 h:1", `line 2: RemoteForward: bad forwarding specification "70000:h:1"`, true},
	// OpenSSH reads an empty host and connects to nothing.
	{"forward to an empty host", "Host a\nLocalForward 1 :2", `line 2: LocalForward: host "" is not a host name or address`, false},
	// OpenSSH cuts the two arguments at 255 bytes (here what is left is no
	// forward; elsewhere it could be another one).
	{"forward too long", "Host a\nLocalForward 1 " + strings.Repeat("h", 260) + ":2", `line 2: LocalForward: longer than OpenSSH reads (255 bytes)`, true},
	{"jump without hop", "Host a\nProxyJump # none", `line 2: ProxyJump: missing argument`, true},
	{"jump empty hop", "Host a\nProxyJump a,,b", `line 2: ProxyJump: hop "": not host[:port]`, true},
	{"jump empty user", "Host a\nProxyJump @b", `line 2: ProxyJump: hop "@b": empty user`, true},
	{"jump port 0", "Host a\nProxyJump b:0", `line 2: ProxyJump: hop "b:0": port "0" is not a number from 1 to 65535`, true},
	{"jump URI with a path", "Host a\nProxyJump ssh://b/x", `line 2: ProxyJump: hop "ssh://b/x": a path is not allowed`, true},
	// OpenSSH 9.2 (Debian) reads "b", upstream "b c".
	{"jump with a space", "Host a\nProxyJump b c", `line 2: ProxyJump: "b c": write the hops without spaces, quotes or backslashes (OpenSSH reads ProxyJump unquoted)`, false},
	// OpenSSH takes the quotes as part of the host name.
	{"jump quoted", "Host a\nProxyJump \"a\"", `line 2: ProxyJump: "\"a\"": write the hops without spaces, quotes or backslashes (OpenSSH reads ProxyJump unquoted)`, false},
	// OpenSSH jumps through a host named none.
	{"jump none and a comment", "Host a\nProxyJump none # direct", `line 2: ProxyJump: none followed by a comment: OpenSSH then reads a host named none`, false},
	// Upstream OpenSSH takes "b # via c" as a hop.
	{"jump comment with a comma", "Host a\nProxyJump b # via c,d", `line 2: ProxyJump: a comma in the comment after it: OpenSSH versions read that line differently`, false},
	// ssh gives the hops to the shell after %-expanding them: it exits on
	// "%e" when it connects.
	{"jump host with a %-token", "Host a\nProxyJump [fe80::1%eth0]", `line 2: ProxyJump: hop "fe80::1%eth0" is not a host name sshdeck can write`, false},
	{"empty Host pattern", "Host a \"\"", `line 1: Host: empty pattern`, true},
	{"HostName unknown token", "Host a\nHostName %x.example", `line 2: HostName: "%x.example": OpenSSH expands only %h and %% in a HostName`, true},
	{"HostName with a space", "Host a\nHostName \"a b\"", `line 2: HostName: "a b" is not a host name or address`, false},
	// Newer OpenSSH expands %-tokens in User; 9.2 does not.
	{"User with a percent", "Host a\nUser a%b", `line 2: User: "a%b" is not a user name sshdeck can store (no spaces, quotes, %, $ or shell characters)`, false},
	{"Include empty", "Include \"\"", `line 1: Include: empty argument`, true},
	// OpenSSH takes a control character as part of a value.
	{"control character", "Host a\nUser a\x01b", `line 2: User: control character in an argument`, false},
	{"long odd keyword", "Host a\n" + strings.Repeat("\x01", 70), `line 2: "\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01…": control character in the keyword`, true},
	{"byte order mark", "\xef\xbb\xbfHost a", `line 1: starts with a byte order mark, which OpenSSH reads as part of the keyword`, true},
	{"line too long", "Host a\n#" + strings.Repeat("x", MaxLine), `line 2: longer than 16384 bytes`, false},
	{"too many identity files", "Host a\n" + identityLines(101),
		`line 102: IdentityFile: more than 100 identity files for "a" (OpenSSH's limit)`, true},
}

func identityLines(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("IdentityFile k")
		b.WriteString(strings.Repeat("x", i))
		b.WriteString("\n")
	}
	return b.String()
}

func TestParseErrors(t *testing.T) {
	for _, tc := range parseErrors {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(strings.NewReader(tc.in))
			if err == nil {
				t.Fatalf("Parse = %+v, want an error", c)
			}
			if c != nil {
				t.Errorf("Parse returned a config with its error")
			}
			if code := sshdeck.ErrorCode(err); code != sshdeck.Invalid {
				t.Errorf("code %s, want invalid", code)
			}
			if msg := sshdeck.ErrorMessage(err); msg != tc.msg {
				t.Errorf("message\n got %s\nwant %s", msg, tc.msg)
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	in := strings.Repeat("# padding\n", MaxInput/10+1)
	_, err := Parse(strings.NewReader(in))
	if sshdeck.ErrorCode(err) != sshdeck.TooLarge {
		t.Fatalf("Parse of %d bytes: %v, want TooLarge", len(in), err)
	}
	if _, err := Parse(strings.NewReader(in[:MaxInput])); err != nil {
		t.Fatalf("Parse of MaxInput bytes: %v", err)
	}
}

func TestMatchPattern(t *testing.T) {
	for _, tc := range []struct {
		s, p string
		want bool
	}{
		{"web", "web", true}, {"web", "Web", false}, {"web", "w*", true}, {"web", "*", true},
		{"", "*", true}, {"web", "w?b", true}, {"web", "w?", false}, {"a.b.c", "*.c", true},
		{"abcbc", "a*bc", true}, {"abcbd", "a*bc", false}, {"x", "", false}, {"", "", true},
		{"aaa", "a*a*a", true}, {"aa", "a*a*a", false},
	} {
		m := matcher{left: maxMatchSteps}
		if got := m.match(tc.s, tc.p); got != tc.want {
			t.Errorf("matchPattern(%q, %q) = %v", tc.s, tc.p, got)
		}
	}
}

// TestParseReachCapped: a block's report names ten of the hosts it also
// applies to and counts the others.
func TestParseReachCapped(t *testing.T) {
	var b strings.Builder
	for i := range 12 {
		fmt.Fprintf(&b, "Host h%d\n", i)
	}
	b.WriteString("Host *\n")
	c := parseString(t, b.String())
	want := "names no single host: not imported; OpenSSH also applies this block to h0, h1, h2, h3, h4, h5, h6, h7, h8, h9 and 2 more"
	if got := c.Skipped[0].Reason; got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
}

// TestParseMatchBudget: a file of many hosts and many wildcard blocks,
// whose matching would cost their product, is refused as too large in
// bounded time; many forwards are not (duplicates are found by a map).
func TestParseMatchBudget(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < MaxInput-40; i++ {
		fmt.Fprintf(&b, "Host a%d\nHost z%d*\n", i, i)
	}
	if _, err := Parse(strings.NewReader(b.String())); sshdeck.ErrorCode(err) != sshdeck.TooLarge {
		t.Errorf("Parse of %d Host lines: %v, want TooLarge", strings.Count(b.String(), "\n"), err)
	}
	b.Reset()
	b.WriteString("Host a\n")
	for i := 0; b.Len() < MaxInput-40; i++ {
		fmt.Fprintf(&b, "LocalForward %d h:%d\n", i%65535+1, i/65535+1)
	}
	c, err := Parse(strings.NewReader(b.String()))
	if err != nil || len(c.Hosts[0].LocalForwards) < 40000 {
		t.Errorf("Parse of many forwards: %v", err)
	}
}
