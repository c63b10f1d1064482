package sshconfig

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests here take OpenSSH as the judge: `ssh -G -F <file> <alias>`
// prints what ssh would use for a host, without connecting. They compare
// what is comparable:
//   - hostname: ssh lowercases it (ASCII) unless it looks like an address
//     (a ':', a '%', or only digits and dots), prints an IP address in its
//     canonical form, and prints the alias when HostName is unset;
//   - user, port: ssh prints its defaults (the local user, 22) when unset;
//   - identityfile: OpenSSH 9.2 prints them as written, newer ones may
//     expand a leading ~, so both sides are compared with ~ expanded; when
//     none is set ssh lists its defaults (~/.ssh/id_*);
//   - proxyjump: ssh prints the hops it will use (an IPv4 address in
//     brackets, the hops before the last as written), read back here with
//     the same hop parser; "none" and no ProxyJump print nothing;
//   - localforward, remoteforward: ssh prints every forward it read, "[bind]:port
//     [host]:port", socket and SOCKS ones too (which sshdeck reports as
//     skipped: they are counted against Skipped), and lists a LocalForward
//     to a socket again as a dynamicforward (a quirk of its dump), which is
//     ignored.

// sshBinary returns the path of ssh, or skips the test.
func sshBinary(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("ssh (the OpenSSH client) is not installed: the tests that take OpenSSH as the judge need it; CI installs openssh-client")
	}
	return path
}

// sshG runs `ssh -G -F file alias` and returns its values by keyword.
func sshG(ssh, file, alias string) (map[string][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, ssh, "-G", "-F", file, alias)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ssh -G -F %s %s: %v: %s", file, alias, err, strings.TrimSpace(stderr.String()))
	}
	out := map[string][]string{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		k, v, _ := strings.Cut(line, " ")
		if k != "" {
			out[k] = append(out[k], v)
		}
	}
	return out, nil
}

// view is what ssh -G says of the fields sshdeck imports, in sshdeck's
// terms.
type view struct {
	User, HostName string
	Port           int
	ProxyJump      []Jump
	IdentityFiles  []string
	Local, Remote  []Forward
	// Others counts the forwards ssh lists that sshdeck does not import
	// (sockets, SOCKS), by keyword.
	Others map[string]int
}

func viewOf(out map[string][]string) (view, error) {
	v := view{Others: map[string]int{}}
	one := func(k string) string {
		if len(out[k]) != 1 {
			return ""
		}
		return out[k][0]
	}
	v.User, v.HostName = one("user"), one("hostname")
	port, err := strconv.Atoi(one("port"))
	if err != nil {
		return v, fmt.Errorf("port %q", out["port"])
	}
	v.Port = port
	if pj := out["proxyjump"]; len(pj) > 0 {
		hops, problem := parseProxyJump(pj[0])
		if problem != "" || len(pj) > 1 {
			return v, fmt.Errorf("proxyjump %q: %s", pj, problem)
		}
		v.ProxyJump = hops
	}
	for _, f := range out["identityfile"] {
		v.IdentityFiles = append(v.IdentityFiles, expandTilde(f))
	}
	for _, k := range []string{"localforward", "remoteforward"} {
		remote := k == "remoteforward"
		for _, line := range out[k] {
			listen, connect, _ := strings.Cut(line, " ")
			spec := listen + ":" + connect
			if strings.Contains(spec, "/") || (remote && connect == "[socks]:0") {
				v.Others[k]++
				continue
			}
			f, kind, ok := parseForwardSpec(spec, false, remote)
			if !ok || kind != fwdTCP {
				return v, fmt.Errorf("%s %q does not read back", k, line)
			}
			if remote {
				v.Remote = append(v.Remote, f)
			} else {
				v.Local = append(v.Local, f)
			}
		}
	}
	return v, nil
}

// expandTilde expands a leading ~/ as ssh would, for comparisons.
func expandTilde(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// isAddr is OpenSSH's is_addr_fast: what ssh takes for an address rather
// than a name.
func isAddr(h string) bool {
	return strings.ContainsAny(h, "%:") || strings.Trim(h, "0123456789.") == ""
}

// asciiLower is OpenSSH's lowercase().
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// agree reports how ssh's view of a host differs from h.
func agree(v view, h Host, localUser string) []string {
	var diffs []string
	diff := func(field string, got, want any) {
		if !reflect.DeepEqual(got, want) {
			diffs = append(diffs, fmt.Sprintf("%s: ssh -G %v, Parse %v", field, got, want))
		}
	}
	user, hostname, port := h.User, h.HostName, h.Port
	if user == "" {
		user = localUser
	}
	if hostname == "" {
		hostname = h.Alias
	}
	if port == 0 {
		port = 22
	}
	diff("user", v.User, user)
	if isAddr(hostname) {
		// ssh does not lowercase what looks like an address (a '%',
		// a ':' or only digits and dots) and prints an IP address in its
		// canonical form.
		if a, err := netip.ParseAddr(hostname); err == nil {
			if b, err := netip.ParseAddr(v.HostName); err == nil && a == b {
				hostname = v.HostName
			}
		}
		diff("hostname", v.HostName, hostname)
	} else {
		diff("hostname", v.HostName, asciiLower(hostname))
	}
	diff("port", v.Port, port)
	hops := h.ProxyJump
	if isNone(hops) {
		hops = nil
	}
	diff("proxyjump", v.ProxyJump, hops)
	if h.IdentityFiles == nil {
		for _, f := range v.IdentityFiles {
			if !strings.HasPrefix(f, expandTilde("~/.ssh/id_")) {
				diffs = append(diffs, "identityfile: ssh -G "+f+", not one of its defaults")
			}
		}
	} else {
		var want []string
		for _, f := range h.IdentityFiles {
			want = append(want, expandTilde(f))
		}
		diff("identityfile", v.IdentityFiles, want)
	}
	diff("localforward", v.Local, h.LocalForwards)
	diff("remoteforward", v.Remote, h.RemoteForwards)
	return diffs
}

func localUser(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

// TestOpenSSHRealistic: for every host of the realistic file, ssh -G says
// what Parse read, and the forwards ssh has that Parse does not are the
// ones it reported.
func TestOpenSSHRealistic(t *testing.T) {
	ssh := sshBinary(t)
	const file = "testdata/realistic.conf"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c := parseString(t, string(data))
	me := localUser(t)
	for _, h := range c.Hosts {
		out, err := sshG(ssh, file, h.Alias)
		if err != nil {
			t.Fatal(err)
		}
		v, err := viewOf(out)
		if err != nil {
			t.Fatalf("%s: %v", h.Alias, err)
		}
		for _, d := range agree(v, h, me) {
			t.Errorf("%s: %s", h.Alias, d)
		}
		reported := map[string]int{}
		for _, s := range c.Skipped {
			if s.Host == h.Alias && strings.HasSuffix(s.Keyword, "Forward") {
				reported[strings.ToLower(s.Keyword)]++
			}
		}
		if !reflect.DeepEqual(v.Others, reported) {
			t.Errorf("%s: ssh -G has other forwards %v, Skipped reports %v", h.Alias, v.Others, reported)
		}
	}
}

// TestOpenSSHRoundTrip: the file Write makes of what Parse read means the
// same to ssh as the original, host by host.
func TestOpenSSHRoundTrip(t *testing.T) {
	ssh := sshBinary(t)
	const file = "testdata/realistic.conf"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c := parseString(t, string(data))
	written := writeTemp(t, c.Hosts)
	for _, h := range c.Hosts {
		views := make([]view, 2)
		for i, f := range []string{file, written} {
			out, err := sshG(ssh, f, h.Alias)
			if err != nil {
				t.Fatal(err)
			}
			if views[i], err = viewOf(out); err != nil {
				t.Fatalf("%s in %s: %v", h.Alias, f, err)
			}
		}
		// The original's socket and SOCKS forwards are not exported.
		views[0].Others, views[1].Others = nil, nil
		if !reflect.DeepEqual(views[0], views[1]) {
			t.Errorf("%s:\noriginal %+v\nwritten  %+v", h.Alias, views[0], views[1])
		}
	}
}

func writeTemp(t *testing.T, hosts []Host) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, hosts); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(file, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestOpenSSHGenerated: random hosts, with quotes, spaces, backslashes and
// '%' in their paths and users, IPv6 addresses and every forward form,
// mean to ssh what they say once written.
func TestOpenSSHGenerated(t *testing.T) {
	ssh := sshBinary(t)
	r := rand.New(rand.NewPCG(3, 4))
	hosts := gen{pick: r.IntN}.hosts(60)
	file := writeTemp(t, hosts)
	me := localUser(t)
	for _, h := range hosts {
		out, err := sshG(ssh, file, h.Alias)
		if err != nil {
			t.Fatal(err)
		}
		v, err := viewOf(out)
		if err != nil {
			t.Fatalf("%s: %v", h.Alias, err)
		}
		for _, d := range agree(v, h, me) {
			t.Errorf("%+v: %s", h, d)
		}
	}
}

// TestOpenSSHLexer: an IdentityFile argument means to Parse what it means
// to ssh (9.2 prints identity files as written), for the quoting, escaping
// and comment rules of argv_split.
func TestOpenSSHLexer(t *testing.T) {
	ssh := sshBinary(t)
	for _, arg := range []string{
		`plain`, `"two words"`, `'single quoted'`, `"mid"dle`, `a"b c"d`, `a\ b`, `a\\b`, `a\qb`,
		`"a\"b"`, `'a\'b'`, `"a'b"`, `'a"b'`, `"a\ b"`, `x#y`, `x # comment`, `"#quoted"`,
		`=x`, `= "x y"`, `"~/my keys/id"`, `ünï`, `a%%b`, `$HOME`, `x\`, `"x\\"`,
	} {
		in := "Host a\n  IdentityFile " + arg + "\n"
		c, err := Parse(strings.NewReader(in))
		if err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		file := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(file, []byte(in), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := sshG(ssh, file, "a")
		if err != nil {
			t.Errorf("%s", err)
			continue
		}
		got := c.Hosts[0].IdentityFiles
		if want := out["identityfile"]; !reflect.DeepEqual(got, want) && !reflect.DeepEqual(expandAll(got), expandAll(want)) {
			t.Errorf("IdentityFile %s: Parse %q, ssh -G %q", arg, got, want)
		}
	}
}

func expandAll(list []string) []string {
	var out []string
	for _, s := range list {
		out = append(out, expandTilde(s))
	}
	return out
}

// TestOpenSSHRejects: ssh -G refuses the malformed lines Parse refuses,
// except those where sshdeck is stricter on purpose (marked, with the
// reason, in parseErrors).
func TestOpenSSHRejects(t *testing.T) {
	ssh := sshBinary(t)
	for _, tc := range parseErrors {
		file := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(file, []byte(tc.in), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := sshG(ssh, file, "a")
		if rejected := err != nil; rejected != tc.openssh {
			t.Errorf("%s: ssh -G rejects it: %v, want %v (%v)", tc.name, rejected, tc.openssh, err)
		}
	}
}

// TestOpenSSHAppliesSkippedBlocks: what Parse reports as a block that also
// applies to a host is what ssh applies: the host's values in ssh -G come
// from there, not from Parse's Host.
func TestOpenSSHAppliesSkippedBlocks(t *testing.T) {
	ssh := sshBinary(t)
	in := "Host web web2\n  User u\nHost web2\n  HostName h2\nHost *\n  User fallback\n  Port 2200\n"
	c := parseString(t, in)
	want := []Skipped{
		{1, "Host", "web", "patterns other than the alias are not imported: web2; OpenSSH also applies this block to web2"},
		{5, "Host", "*", "names no single host: not imported; OpenSSH also applies this block to web, web2"},
		{6, "User", "*", "in the Host block of line 5, which names no single host: not imported"},
		{7, "Port", "*", "in the Host block of line 5, which names no single host: not imported"},
	}
	if !reflect.DeepEqual(c.Skipped, want) {
		t.Fatalf("Skipped\n got %+v\nwant %+v", c.Skipped, want)
	}
	file := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(file, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	for alias, want := range map[string][2]string{"web": {"u", "2200"}, "web2": {"u", "2200"}} {
		out, err := sshG(ssh, file, alias)
		if err != nil {
			t.Fatal(err)
		}
		if got := [2]string{out["user"][0], out["port"][0]}; got != want {
			t.Errorf("ssh -G %s: user, port %q, want %q", alias, got, want)
		}
	}
}

// TestOpenSSHBlocks: in random configs of overlapping blocks (keywords
// before the first Host, wildcards, negations, several patterns, an alias
// in two blocks, ProxyCommand against ProxyJump), every value Parse sets
// for a host is the one ssh uses: OpenSSH's first value across all the
// blocks that apply to it. Identity files and forwards, which add up, are
// in ssh's lists in the same order.
func TestOpenSSHBlocks(t *testing.T) {
	ssh := sshBinary(t)
	r := rand.New(rand.NewPCG(5, 6))
	patterns := []string{"a", "b", "c", "web1", "web2", "web*", "*", "!a", "!web2", "?", "b*", "x"}
	line := func() string {
		n := r.IntN(20)
		switch r.IntN(8) {
		case 0:
			return fmt.Sprintf("User u%d", n)
		case 1:
			return fmt.Sprintf("Port %d", 1+n)
		case 2:
			return fmt.Sprintf("HostName h%d", n)
		case 3:
			if n < 3 {
				return "ProxyJump none"
			}
			return fmt.Sprintf("ProxyJump j%d,k%d@j%d:%d", n, n, n+1, 2000+n)
		case 4:
			return "ProxyCommand nc %h %p"
		case 5:
			return fmt.Sprintf("IdentityFile ~/.ssh/k%d", n%5)
		case 6:
			return fmt.Sprintf("LocalForward %d h:%d", 1000+n%4, 80)
		}
		return fmt.Sprintf("RemoteForward %d h:%d", n%3, 22)
	}
	me := localUser(t)
	for range 40 {
		var b strings.Builder
		for range r.IntN(3) {
			b.WriteString(line() + "\n")
		}
		for range 3 + r.IntN(5) {
			b.WriteString("Host")
			for range 1 + r.IntN(3) {
				b.WriteString(" " + patterns[r.IntN(len(patterns))])
			}
			b.WriteString("\n")
			for range r.IntN(5) {
				b.WriteString("  " + line() + "\n")
			}
		}
		in := b.String()
		c, err := Parse(strings.NewReader(in))
		if err != nil {
			t.Fatalf("Parse:\n%s\n%v", in, err)
		}
		file := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(file, []byte(in), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, h := range c.Hosts {
			out, err := sshG(ssh, file, h.Alias)
			if err != nil {
				t.Fatal(err)
			}
			v, err := viewOf(out)
			if err != nil {
				t.Fatalf("%s: %v", h.Alias, err)
			}
			for _, d := range agreeSet(v, out, h, me) {
				t.Errorf("%s in\n%s%s", h.Alias, in, d)
			}
		}
	}
}

// agreeSet reports how ssh's view of a host differs from the values Parse
// set for it (the unset ones may come from blocks Parse reported).
func agreeSet(v view, out map[string][]string, h Host, localUser string) []string {
	var diffs []string
	if h.User != "" && v.User != h.User {
		diffs = append(diffs, fmt.Sprintf("user: ssh -G %s, Parse %s", v.User, h.User))
	}
	if h.HostName != "" && v.HostName != asciiLower(h.HostName) {
		diffs = append(diffs, fmt.Sprintf("hostname: ssh -G %s, Parse %s", v.HostName, h.HostName))
	}
	if h.Port != 0 && v.Port != h.Port {
		diffs = append(diffs, fmt.Sprintf("port: ssh -G %d, Parse %d", v.Port, h.Port))
	}
	switch {
	case h.ProxyJump == nil:
	case isNone(h.ProxyJump):
		if v.ProxyJump != nil || out["proxycommand"] != nil {
			diffs = append(diffs, fmt.Sprintf("proxyjump: ssh -G %v %q, Parse none", v.ProxyJump, out["proxycommand"]))
		}
	case !reflect.DeepEqual(v.ProxyJump, h.ProxyJump):
		diffs = append(diffs, fmt.Sprintf("proxyjump: ssh -G %v %q, Parse %v", v.ProxyJump, out["proxycommand"], h.ProxyJump))
	}
	if !subsequence(v.IdentityFiles, expandAll(h.IdentityFiles)) {
		diffs = append(diffs, fmt.Sprintf("identityfile: ssh -G %q, Parse %q", v.IdentityFiles, h.IdentityFiles))
	}
	if !subsequence(v.Local, h.LocalForwards) || !subsequence(v.Remote, h.RemoteForwards) {
		diffs = append(diffs, fmt.Sprintf("forwards: ssh -G %v %v, Parse %v %v", v.Local, v.Remote, h.LocalForwards, h.RemoteForwards))
	}
	return diffs
}

// subsequence reports whether sub is in list in the same order.
func subsequence[T comparable](list, sub []T) bool {
	i := 0
	for _, x := range list {
		if i < len(sub) && x == sub[i] {
			i++
		}
	}
	return i == len(sub)
}
