package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/hosts"
)

type importBody struct {
	Error   string `json:"error"`
	Code    string `json:"code"`
	Results []struct {
		Index int    `json:"index"`
		ID    int64  `json:"id"`
		Error string `json:"error"`
		Code  string `json:"code"`
	} `json:"results"`
	Skipped []struct {
		Line    int    `json:"line"`
		Keyword string `json:"keyword"`
		Host    string `json:"host"`
		Reason  string `json:"reason"`
	} `json:"skipped"`
}

func (e *env) importJSON(token string, body any) (*response, importBody) {
	e.t.Helper()
	resp := e.sendJSON("POST", token, "/ssh/db/host/import", body)
	var b importBody
	resp.json(e.t, &b)
	return resp, b
}

func (e *env) importConfig(token, config, query string) (*response, importBody) {
	e.t.Helper()
	resp := e.do(request{method: "POST", path: "/ssh/db/host/import" + query, token: token, contentType: "text/plain; charset=utf-8", body: []byte(config)})
	var b importBody
	resp.json(e.t, &b)
	return resp, b
}

// normalized is a JSON export with every host's id, times and the ids it
// names (jump hosts, tunnel endpoints by id) replaced by the host's place
// in the export: what must survive an import unchanged.
func normalized(t *testing.T, export []byte) []byte {
	t.Helper()
	var list []map[string]any
	if err := json.Unmarshal(export, &list); err != nil {
		t.Fatalf("export %s: %v", export, err)
	}
	place := map[string]string{}
	for i, h := range list {
		place[fmt.Sprint(h["id"])] = "#" + strconv.Itoa(i)
	}
	for _, h := range list {
		h["id"], h["createdAt"], h["updatedAt"] = place[fmt.Sprint(h["id"])], "", ""
		for _, hop := range h["jumpHosts"].([]any) {
			m := hop.(map[string]any)
			m["hostId"] = place[fmt.Sprint(m["hostId"])]
		}
		for _, tc := range h["tunnelConnections"].([]any) {
			m := tc.(map[string]any)
			if p, ok := place[m["endpointHost"].(string)]; ok {
				m["endpointHost"] = p
			}
		}
	}
	out, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// seedHosts gives the token's user a bastion, a host behind it, one behind
// both with tunnels to the others (by id and by name), a key and a
// password host.
func (e *env) seedHosts(token string) {
	e.t.Helper()
	bastion := e.createHost(token, map[string]any{"name": "bastion", "ip": "203.0.113.7", "port": 2222, "username": "jump", "authType": "key", "key": newKey(e.t, "pw"), "keyPassword": "pw", "identityFile": "~/.ssh/id_bastion", "tags": []string{"edge"}})
	inner := e.createHost(token, map[string]any{"name": "inner", "ip": "10.0.0.2", "username": "ops", "password": "s3cret", "jumpHosts": []map[string]any{{"hostId": bastion.ID}}, "folder": "prod"})
	e.createHost(token, map[string]any{"name": "db", "ip": "10.0.0.3", "username": "postgres", "jumpHosts": []map[string]any{{"hostId": bastion.ID}, {"hostId": inner.ID}},
		"tunnelConnections": []map[string]any{
			{"sourcePort": 5432, "endpointPort": 15432, "endpointHost": strconv.FormatInt(inner.ID, 10), "autoStart": true},
			{"sourcePort": 6379, "endpointPort": 16379, "endpointHost": "bastion", "maxRetries": 0},
		}, "identityFile": "~/.ssh/db key"})
}

// TestImportExportRoundTrip: a JSON export imported again, by another
// user and by its own, exports the same bytes apart from ids and times,
// credentials included; without credentials=true they are "".
func TestImportExportRoundTrip(t *testing.T) {
	e := newEnv(t)
	e.seedHosts(e.alice)
	first := e.get(e.alice, "/ssh/db/host/export?credentials=true")
	if first.Status != http.StatusOK || !strings.Contains(string(first.Body), "s3cret") {
		t.Fatalf("export: %d %s", first.Status, first.Body)
	}
	for _, who := range []string{e.bob, e.alice} {
		resp, body := e.importJSON(who, first.Body)
		if resp.Status != http.StatusCreated || len(body.Results) != 3 {
			t.Fatalf("import: %d %s", resp.Status, resp.Body)
		}
	}
	bobs := e.get(e.bob, "/ssh/db/host/export?credentials=true")
	if a, b := normalized(t, first.Body), normalized(t, bobs.Body); !bytes.Equal(a, b) {
		t.Fatalf("bob's export differs from alice's:\n%s\n%s", a, b)
	}
	// Alice has two of each now; her second three are her first three.
	var all []json.RawMessage
	e.get(e.alice, "/ssh/db/host/export?credentials=true").json(t, &all)
	if len(all) != 6 {
		t.Fatalf("alice has %d hosts, want 6", len(all))
	}
	half := func(l []json.RawMessage) []byte { b, _ := json.Marshal(l); return normalized(t, b) }
	if a, b := half(all[:3]), half(all[3:]); !bytes.Equal(a, b) {
		t.Fatalf("alice's import differs from her hosts:\n%s\n%s", a, b)
	}
	plain := e.get(e.alice, "/ssh/db/host/export")
	if strings.Contains(string(plain.Body), "s3cret") || strings.Contains(string(plain.Body), "PRIVATE KEY") {
		t.Fatalf("an export without credentials=true has them: %s", plain.Body)
	}
	for _, q := range []string{"?format=yaml", "?credentials=yes", "?format=ssh_config&credentials=true", "?format=ssh_config&local=x"} {
		if resp := e.get(e.alice, "/ssh/db/host/export"+q); resp.Status != http.StatusBadRequest {
			t.Errorf("export%s: %d %s", q, resp.Status, resp.Body)
		}
	}
}

// TestImportRefusedWritesNothing: a jump cycle, a foreign or missing hop,
// an item without a user, a config line that does not parse, too many
// items and a body of another type are each refused naming the item or
// line, and the store is as it was.
func TestImportRefusedWritesNothing(t *testing.T) {
	e := newEnv(t)
	e.seedHosts(e.alice)
	// Bob's host has an id that no host of alice's has or gets here.
	var bobs hosts.Record
	for range 20 {
		bobs = e.createHost(e.bob, map[string]any{"name": "bobs"})
	}
	before := e.get(e.alice, "/ssh/db/host/export?credentials=true").Body
	host := func(id int64, hops ...int64) map[string]any {
		h := map[string]any{"id": id, "ip": "10.1.0.1", "username": "u"}
		var list []map[string]any
		for _, hop := range hops {
			list = append(list, map[string]any{"hostId": hop})
		}
		h["jumpHosts"] = list
		return h
	}
	for name, tc := range map[string]struct {
		items []map[string]any
		index int
		want  string
	}{
		"a cycle":       {[]map[string]any{host(1), host(7, 8), host(8, 7)}, 1, "items[1]: jumpHosts[0]: a cycle: "},
		"a foreign hop": {[]map[string]any{host(1), host(2, bobs.ID)}, 1, fmt.Sprintf("items[1]: jumpHosts[0]: host %d not found", bobs.ID)},
		"a missing hop": {[]map[string]any{host(1, 999)}, 0, "items[0]: jumpHosts[0]: host 999 not found"},
		"itself":        {[]map[string]any{host(5, 5)}, 0, "a host cannot be its own jump host"},
		"no user":       {[]map[string]any{host(1), {"ip": "10.1.0.2"}}, 1, "items[1]: username is required"},
		"one id twice":  {[]map[string]any{host(3), host(3)}, 1, "items[1]: id 3 is items[0]'s already"},
	} {
		resp, body := e.importJSON(e.alice, tc.items)
		if resp.Status != http.StatusBadRequest || body.Code != "invalid" || len(body.Results) != len(tc.items) {
			t.Errorf("%s: %d %s", name, resp.Status, resp.Body)
			continue
		}
		if got := body.Results[tc.index]; !strings.Contains(got.Error, tc.want) || got.Code != "invalid" || got.ID != 0 {
			t.Errorf("%s: result %d is %+v, want an error with %q", name, tc.index, got, tc.want)
		}
	}
	// The cycle's message says which items the ids were about to be.
	_, body := e.importJSON(e.alice, []map[string]any{host(7, 8), host(8, 7)})
	if !strings.Contains(body.Results[0].Error, "is items[0]") || !strings.Contains(body.Results[0].Error, "is items[1]") {
		t.Errorf("the cycle's message: %q", body.Results[0].Error)
	}
	resp, _ := e.importConfig(e.alice, "Host a\n  User u\n  Port 22\nHost b\n  ProxyJump a,,b\n", "")
	if resp.Status != http.StatusBadRequest || !strings.Contains(string(resp.Body), "line 5") {
		t.Errorf("a config line that does not parse: %d %s", resp.Status, resp.Body)
	}
	resp, body = e.importConfig(e.alice, "Host a\n  HostName 10.2.0.1\nHost b\n  User u\n  ProxyJump nowhere\n", "")
	if resp.Status != http.StatusBadRequest || len(body.Results) != 3 ||
		!strings.Contains(body.Results[0].Error, "items[0]: line 1 (Host a): User is required") ||
		!strings.Contains(body.Results[2].Error, "ProxyJump hop nowhere: User is required") {
		t.Errorf("a config without users: %d %s", resp.Status, resp.Body)
	}
	many := make([]map[string]any, 100)
	for i := range many {
		many[i] = host(int64(i + 1))
	}
	if resp := e.sendJSON("POST", e.alice, "/ssh/db/host/import", many); resp.Status != http.StatusBadRequest || !strings.Contains(string(resp.Body), "at most 98") {
		t.Errorf("100 hosts: %d %s", resp.Status, resp.Body)
	}
	if resp := e.do(request{method: "POST", path: "/ssh/db/host/import", token: e.alice, contentType: "application/yaml", body: []byte("- ip: x")}); resp.Status != http.StatusUnsupportedMediaType {
		t.Errorf("yaml: %d %s", resp.Status, resp.Body)
	}
	huge := strings.Repeat("# padding\n", 110_000)
	if resp := e.do(request{method: "POST", path: "/ssh/db/host/import", token: e.alice, contentType: "text/plain", body: []byte(huge)}); resp.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("a config over 1 MiB: %d", resp.Status)
	}
	if after := e.get(e.alice, "/ssh/db/host/export?credentials=true").Body; !bytes.Equal(after, before) {
		t.Fatalf("refused imports changed alice's hosts:\n%s\n%s", before, after)
	}
	// Past the limit of hosts: 409, nothing written.
	e.setLimits(config.Limits{Hosts: 4})
	if resp, _ := e.importJSON(e.alice, []map[string]any{host(1), host(2)}); resp.Status != http.StatusConflict {
		t.Errorf("an import past the limit: %d %s", resp.Status, resp.Body)
	}
	if after := e.get(e.alice, "/ssh/db/host/export?credentials=true").Body; !bytes.Equal(after, before) {
		t.Fatal("an import past the limit changed alice's hosts")
	}
	if resp, _ := e.importJSON(e.alice, []map[string]any{host(1)}); resp.Status != http.StatusCreated {
		t.Errorf("an import up to the limit: %d %s", resp.Status, resp.Body)
	}
}

// messyConfig has Include, Match, wildcards, quoted values, comments, a
// hop by address, a stored host by name, forwards, and values OpenSSH
// would not use.
const messyConfig = `# my hosts
Include ~/.ssh/config.d/*
Host *
  ServerAliveInterval 30
Host "web 1" web1
  HostName 192.0.2.10   # the front
  User "deploy"
  Port 2200
  IdentityFile "~/.ssh/id web"
  IdentityFile ~/.ssh/id_second
  ProxyJump ops@198.51.100.4:2222
  RemoteForward 8080 127.0.0.1:3000
  LocalForward 0.0.0.0:9000 127.0.0.1:9000
Host laptop
  HostName 127.0.0.1
  User me
Match host web1
  User other
Host db
  HostName=10.9.0.5
  User postgres
  ProxyJump web1,stored-bastion
  LocalForward 15432 localhost:5432
  DynamicForward 1080
`

// TestImportConfig: a config with everything imports its hosts, a hop by
// address as a host of its own and a stored host by name, its forwards
// with local=laptop, and reports exactly what it did not take.
func TestImportConfig(t *testing.T) {
	e := newEnv(t)
	stored := e.createHost(e.alice, map[string]any{"name": "stored-bastion"})
	resp, body := e.importConfig(e.alice, messyConfig, "?local=laptop")
	if resp.Status != http.StatusCreated || len(body.Results) != 4 {
		t.Fatalf("import: %d %s", resp.Status, resp.Body)
	}
	var got []string
	for _, s := range body.Skipped {
		got = append(got, fmt.Sprintf("%d %s %s", s.Line, s.Keyword, s.Host))
	}
	want := []string{"2 Include ", "3 Host *", "4 ServerAliveInterval *", "5 Host web1", "17 Match ", "24 DynamicForward db", "5 IdentityFile web1", "5 LocalForward web1"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("skipped: %q, want %q\n%s", got, want, resp.Body)
	}
	ids := map[string]int64{}
	var list []map[string]any
	e.get(e.alice, "/ssh/db/host/export").json(t, &list)
	for _, h := range list {
		ids[h["name"].(string)], _ = strconv.ParseInt(fmt.Sprint(h["id"]), 10, 64)
	}
	byName := func(name string) map[string]any {
		for _, h := range list {
			if h["name"] == name {
				return h
			}
		}
		t.Fatalf("no host %s in %v", name, ids)
		return nil
	}
	web := byName("web1")
	if web["ip"] != "192.0.2.10" || web["username"] != "deploy" || web["port"] != 2200.0 || web["identityFile"] != "~/.ssh/id web" || web["authType"] != "key" {
		t.Errorf("web1: %v", web)
	}
	hop := byName("ops@198.51.100.4:2222")
	if hop["ip"] != "198.51.100.4" || hop["username"] != "ops" || hop["port"] != 2222.0 {
		t.Errorf("the hop: %v", hop)
	}
	hopsOf := func(h map[string]any) []int64 {
		var out []int64
		for _, j := range h["jumpHosts"].([]any) {
			out = append(out, int64(j.(map[string]any)["hostId"].(float64)))
		}
		return out
	}
	if got := hopsOf(web); !slices.Equal(got, []int64{ids["ops@198.51.100.4:2222"]}) {
		t.Errorf("web1's hops: %v", got)
	}
	db := byName("db")
	if got := hopsOf(db); !slices.Equal(got, []int64{ids["web1"], stored.ID}) {
		t.Errorf("db's hops: %v", got)
	}
	laptop := byName("laptop")
	tunnels, _ := json.Marshal([]any{laptop["tunnelConnections"], db["tunnelConnections"]})
	wantTunnels := fmt.Sprintf(`[[{"sourcePort":3000,"endpointPort":8080,"endpointHost":"%d","maxRetries":3,"retryInterval":5,"autoStart":false}],[{"sourcePort":5432,"endpointPort":15432,"endpointHost":"%d","maxRetries":3,"retryInterval":5,"autoStart":false}]]`, ids["web1"], ids["laptop"])
	var w any
	json.Unmarshal([]byte(wantTunnels), &w)
	if again, _ := json.Marshal(w); string(tunnels) != string(again) {
		t.Errorf("tunnels:\n%s\nwant\n%s", tunnels, wantTunnels)
	}
	// Without local, the forwards are reported, not imported.
	_, body = e.importConfig(e.bob, "Host x\n  User u\n  RemoteForward 80 127.0.0.1:8080\n", "")
	if len(body.Skipped) != 1 || body.Skipped[0].Keyword != "RemoteForward" || !strings.Contains(body.Skipped[0].Reason, "local=") {
		t.Errorf("a forward without local: %+v", body)
	}
}

// TestExportConfigMeansTheSameToSSH: `ssh -G -F <export> <alias>` shows
// every host's address, user, port, identity file, route and forwards as
// the records have them.
func TestExportConfigMeansTheSameToSSH(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh: install openssh-client (CI does)")
	}
	e := newEnv(t)
	e.seedHosts(e.alice)
	// A host whose name is no alias, one named twice, and a local host
	// with tunnels both ways.
	e.createHost(e.alice, map[string]any{"name": "my laptop!", "ip": "192.0.2.1", "username": "me"})
	e.createHost(e.alice, map[string]any{"name": "DB", "ip": "192.0.2.2", "username": "x", "port": 2022})
	var recs []map[string]any
	e.get(e.alice, "/ssh/db/host/export").json(t, &recs)
	laptop := int64(recs[3]["id"].(float64))
	e.sendJSON("PUT", e.alice, fmt.Sprintf("/ssh/db/host/%d", laptop), map[string]any{"name": "my laptop!", "ip": "192.0.2.1", "username": "me",
		"tunnelConnections": []map[string]any{{"sourcePort": 3000, "endpointPort": 8080, "endpointHost": "bastion"}}})
	e.get(e.alice, "/ssh/db/host/export").json(t, &recs)

	resp := e.get(e.alice, fmt.Sprintf("/ssh/db/host/export?format=ssh_config&local=%d", laptop))
	if resp.Status != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("export: %d %s", resp.Status, resp.Body)
	}
	file := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(file, resp.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	aliases := []string{"bastion", "inner", "db", "my-laptop-", "DB-5"}
	want := map[string][]string{
		"bastion":    {"hostname 203.0.113.7", "user jump", "port 2222", "identityfile ~/.ssh/id_bastion", "remoteforward 8080 [127.0.0.1]:3000"},
		"inner":      {"hostname 10.0.0.2", "user ops", "port 22", "proxyjump bastion"},
		"db":         {"hostname 10.0.0.3", "user postgres", "port 22", "identityfile ~/.ssh/db key", "proxyjump bastion,bastion,inner"},
		"my-laptop-": {"hostname 192.0.2.1", "user me", "port 22"},
		"DB-5":       {"hostname 192.0.2.2", "user x", "port 2022"},
	}
	for _, alias := range aliases {
		out, err := exec.Command("ssh", "-G", "-F", file, alias).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh -G %s: %v\n%s\n%s", alias, err, out, resp.Body)
		}
		lines := strings.Split(string(out), "\n")
		for _, w := range want[alias] {
			if !slices.Contains(lines, w) {
				t.Errorf("ssh -G %s: no %q in\n%s", alias, w, filterG(lines))
			}
		}
		for _, l := range lines {
			// A host without identityFile gets OpenSSH's default files.
			if strings.HasPrefix(l, "identityfile ~/.ssh/id_") && !strings.Contains(strings.Join(want[alias], "\n"), "identityfile") {
				continue
			}
			if (strings.HasPrefix(l, "localforward ") || strings.HasPrefix(l, "remoteforward ") || strings.HasPrefix(l, "proxyjump ") || strings.HasPrefix(l, "identityfile ")) && !slices.Contains(want[alias], l) {
				t.Errorf("ssh -G %s: %q is not the record's", alias, l)
			}
		}
	}
}

func filterG(lines []string) string {
	var out []string
	for _, l := range lines {
		for _, k := range []string{"hostname ", "user ", "port ", "proxyjump ", "identityfile ", "localforward ", "remoteforward "} {
			if strings.HasPrefix(l, k) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}
