package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

func TestListHosts(t *testing.T) {
	e := newEnv(t)
	resp := e.get(e.alice, "/ssh/db/host")
	if resp.Status != http.StatusOK || strings.TrimSpace(string(resp.Body)) != "[]" {
		t.Fatalf("empty list: %d %s", resp.Status, resp.Body)
	}
	for i := range 12 {
		e.createHost(e.alice, map[string]any{"name": fmt.Sprintf("h%d", i+1)})
	}
	e.createHost(e.bob, map[string]any{"name": "bob's"})
	var list []map[string]any
	e.get(e.alice, "/ssh/db/host").json(t, &list)
	if len(list) != 12 {
		t.Fatalf("alice sees %d hosts, want 12", len(list))
	}
	for i, h := range list {
		if h["id"] != float64(i+1) || h["name"] != fmt.Sprintf("h%d", i+1) {
			t.Fatalf("host %d = id %v name %v; want ordered by id", i, h["id"], h["name"])
		}
	}
	e.get(e.bob, "/ssh/db/host").json(t, &list)
	if len(list) != 1 || list[0]["name"] != "bob's" {
		t.Fatalf("bob sees %v", list)
	}
}

func TestCreateHostJSON(t *testing.T) {
	e := newEnv(t)
	key := newKey(t, "")
	resp := e.sendJSON("POST", e.alice, "/ssh/db/host", map[string]any{
		"id": 99, "createdAt": "2000-01-01T00:00:00Z", "owner": "someone", "unknownField": true,
		"name": "web", "ip": "10.0.0.5", "port": 2222, "username": "deploy", "folder": "prod",
		"tags": []string{"a", "b"}, "pin": true, "key": key, "enableTunnel": false,
		"tunnelConnections": []map[string]any{{"sourcePort": 8080, "endpointPort": 9090, "endpointHost": "db"}},
	})
	if resp.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}
	h := resp.host(t)
	if h.ID != 1 || h.Name != "web" || h.Port != 2222 || h.Key != key || h.AuthType != "key" || h.KeyType != "auto" {
		t.Fatalf("created %+v", h)
	}
	if !h.EnableTerminal || h.EnableTunnel || !h.EnableFileManager || h.DefaultPath != "/" {
		t.Fatalf("defaults: %+v", h.HostConfig)
	}
	tc := h.TunnelConnections[0]
	if tc.MaxRetries != 3 || tc.RetryInterval != 5 || tc.EndpointHost != "db" {
		t.Fatalf("tunnel defaults: %+v", tc)
	}
	if h.CreatedAt.Year() == 2000 || !h.CreatedAt.Equal(h.UpdatedAt) || h.CreatedAt.Location() != time.UTC {
		t.Fatalf("timestamps %v %v", h.CreatedAt, h.UpdatedAt)
	}
	if resp.Header.Get("ETag") != `"1"` || resp.Header.Get("Location") != "/ssh/db/host/1" {
		t.Fatalf("headers %v", resp.Header)
	}
	if got := e.get(e.alice, "/ssh/db/host/1").host(t); got.Key != key || got.Name != "web" {
		t.Fatalf("read back %+v", got)
	}
}

func TestCreateHostMultipart(t *testing.T) {
	e := newEnv(t)
	fileKey, dataKey := newKey(t, "pass phrase"), newKey(t, "")
	data := fmt.Sprintf(`{"name":"web","ip":"10.0.0.5","username":"deploy","authType":"key","keyPassword":"pass phrase","key":%q}`, dataKey)
	resp := e.sendMultipart("POST", e.alice, "/ssh/db/host", data, []byte(fileKey))
	if resp.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}
	if h := resp.host(t); h.Key != fileKey || h.KeyPassword != "pass phrase" {
		t.Fatal("the key file part does not win over data.key")
	}
	// Without a file part, data.key is the key; an empty file part is no file.
	resp = e.sendMultipart("POST", e.alice, "/ssh/db/host", fmt.Sprintf(`{"ip":"h","username":"u","key":%q}`, dataKey), []byte{})
	if h := resp.host(t); resp.Status != http.StatusCreated || h.Key != dataKey {
		t.Fatalf("data.key: %d %s", resp.Status, resp.Body)
	}
}

func TestHostBadRequests(t *testing.T) {
	e := newEnv(t)
	e.createHost(e.alice, nil)
	locked := newKey(t, "right")
	big := bytes.Repeat([]byte("a"), 1<<20+1)
	bigKey := strings.Repeat("k", 64<<10+1)
	valid := `{"ip":"10.0.0.5","username":"deploy"}`
	type badRequest struct {
		name        string
		contentType string
		body        []byte
		status      int
		wantMsg     string
	}
	cases := []badRequest{
		{"broken JSON", "application/json", []byte(`{"ip":`), 400, "truncated"},
		{"syntax error", "application/json", []byte(`{"ip" "x"}`), 400, "not valid JSON"},
		{"port as string", "application/json", []byte(`{"ip":"h","username":"u","port":"22"}`), 400, "port: expected an integer"},
		{"port fraction", "application/json", []byte(`{"ip":"h","username":"u","port":22.5}`), 400, "port"},
		{"port zero", "application/json", []byte(`{"ip":"h","username":"u","port":0}`), 400, "port must be"},
		{"port too high", "application/json", []byte(`{"ip":"h","username":"u","port":65536}`), 400, "port must be"},
		{"tags not array", "application/json", []byte(`{"ip":"h","username":"u","tags":"a"}`), 400, "tags: expected an array"},
		{"pin not bool", "application/json", []byte(`{"ip":"h","username":"u","pin":"yes"}`), 400, "pin: expected a boolean"},
		{"nested type", "application/json", []byte(`{"ip":"h","username":"u","tunnelConnections":[{"sourcePort":"1"}]}`), 400, "tunnelConnections.sourcePort"},
		{"array body", "application/json", []byte(`[1]`), 400, "must be a JSON object"},
		{"empty body", "application/json", nil, 400, "empty"},
		{"trailing data", "application/json", []byte(valid + `{}`), 400, "data after"},
		{"missing ip", "application/json", []byte(`{"username":"u"}`), 400, "ip is required"},
		{"missing username", "application/json", []byte(`{"ip":"h"}`), 400, "username is required"},
		{"ip with space", "application/json", []byte(`{"ip":"a b","username":"u"}`), 400, "ip must be an IP address or a DNS name"},
		{"ip an ssh option", "application/json", []byte(`{"ip":"-oProxyCommand=id","username":"u"}`), 400, "ip must be an IP address or a DNS name"},
		{"ip a label starting with -", "application/json", []byte(`{"ip":"web.-x","username":"u"}`), 400, "ip must be"},
		{"ip with a port", "application/json", []byte(`{"ip":"web:22","username":"u"}`), 400, "ip must be"},
		{"ip a bracketed IPv6", "application/json", []byte(`{"ip":"[::1]","username":"u"}`), 400, "ip must be"},
		{"ip a label of 64", "application/json", fmt.Appendf(nil, `{"ip":"%s.com","username":"u"}`, strings.Repeat("a", 64)), 400, "ip must be"},
		{"ip of 254 characters", "application/json", fmt.Appendf(nil, `{"ip":"%s","username":"u"}`, strings.Repeat("a.", 127)), 400, "ip"},
		{"ip with a shell zone", "application/json", []byte(`{"ip":"fe80::1%$(id)","username":"u"}`), 400, "zone"},
		{"ip with an underscore", "application/json", []byte(`{"ip":"my_host","username":"u"}`), 400, "ip must be"},
		{"endpointHost an ssh option", "application/json", []byte(`{"ip":"h","username":"u","tunnelConnections":[{"sourcePort":1,"endpointPort":2,"endpointHost":"-oProxyCommand=id"}]}`), 400, "tunnelConnections[0].endpointHost must not start with '-'"},
		{"password with a newline", "application/json", []byte(`{"ip":"h","username":"u","password":"a\nb"}`), 400, "password must not contain control characters"},
		{"keyPassword with NUL", "application/json", []byte(`{"ip":"h","username":"u","keyPassword":"a\u0000b"}`), 400, "keyPassword must not contain control characters"},
		{"key with an escape character", "application/json", []byte(`{"ip":"h","username":"u","key":"\u001b[2J"}`), 400, "key must not contain control characters"},
		{"name with C1 control", "application/json", []byte(`{"ip":"h","username":"u","name":"a\u0085b"}`), 400, "name must not contain control characters"},
		{"invalid UTF-8", "application/json", []byte("{\"ip\":\"h\",\"username\":\"u\",\"name\":\"a\xffb\"}"), 400, "not valid UTF-8 (at byte 34)"},
		{"lone surrogate escape", "application/json", []byte(`{"ip":"h","username":"u","name":"a\ud800b"}`), 400, "surrogate"},
		{"bad authType", "application/json", []byte(`{"ip":"h","username":"u","authType":"cert"}`), 400, "authType"},
		{"bad keyType", "application/json", []byte(`{"ip":"h","username":"u","keyType":"ssh-foo"}`), 400, "keyType"},
		{"key not a key", "application/json", []byte(`{"ip":"h","username":"u","key":"hello"}`), 400, "not a private key"},
		{"key type mismatch", "application/json", fmt.Appendf(nil, `{"ip":"h","username":"u","keyType":"ssh-rsa","key":%q}`, newKey(t, "")), 400, "keyType is ssh-rsa"},
		{"encrypted key, no passphrase", "application/json", fmt.Appendf(nil, `{"ip":"h","username":"u","key":%q}`, locked), 400, "keyPassword is required"},
		{"encrypted key, wrong passphrase", "application/json", fmt.Appendf(nil, `{"ip":"h","username":"u","key":%q,"keyPassword":"wrong"}`, locked), 400, "cannot be decrypted"},
		{"too many tags", "application/json", fmt.Appendf(nil, `{"ip":"h","username":"u","tags":[%s"x"]}`, strings.Repeat(`"x",`, 32)), 400, "at most 32"},
		{"tag too long", "application/json", fmt.Appendf(nil, `{"ip":"h","username":"u","tags":[%q]}`, strings.Repeat("t", 65)), 400, "tags[0]"},
		{"tunnel port", "application/json", []byte(`{"ip":"h","username":"u","tunnelConnections":[{"sourcePort":1,"endpointPort":0,"endpointHost":"x"}]}`), 400, "tunnelConnections[0].endpointPort"},
		{"tunnel retries", "application/json", []byte(`{"ip":"h","username":"u","tunnelConnections":[{"sourcePort":1,"endpointPort":2,"endpointHost":"x","maxRetries":1001}]}`), 400, "maxRetries"},
		{"tunnel interval", "application/json", []byte(`{"ip":"h","username":"u","tunnelConnections":[{"sourcePort":1,"endpointPort":2,"endpointHost":"x","retryInterval":0}]}`), 400, "retryInterval"},
		{"oversize JSON", "application/json", append(append([]byte(`{"name":"`), big...), `"}`...), 413, "body is over 1024 KiB"},
		{"oversize data.key", "application/json", fmt.Appendf(nil, `{"ip":"h","username":"u","key":%q}`, bigKey), 413, "key is over 64 KiB"},
		{"text/plain", "text/plain", []byte(valid), 415, "Content-Type"},
		{"form", "application/x-www-form-urlencoded", []byte("ip=h"), 415, "Content-Type"},
		{"no content type", "", []byte(valid), 415, "Content-Type"},
		{"multipart without boundary", "multipart/form-data", []byte(valid), 400, "boundary"},
	}
	multi := func(data string, key []byte) (string, []byte) { return multipartBody(t, data, key) }
	for _, m := range []struct {
		name, data string
		key        []byte
		status     int
		wantMsg    string
	}{
		{"multipart without data", "-", []byte(newKey(t, "")), 400, "no data part"},
		{"multipart data not JSON", "{nope", nil, 400, "data is not valid JSON"},
		{"multipart data wrong type", `{"ip":"h","username":"u","port":"22"}`, nil, 400, "port: expected an integer"},
		{"multipart key file too large", valid, []byte(bigKey), 413, "key part is over 64 KiB"},
		{"multipart data too large", string(big), nil, 413, "over 1024 KiB"},
		{"multipart key file not a key", valid, []byte("not a key"), 400, "not a private key"},
		{"multipart data not UTF-8", "{\"ip\":\"h\",\"username\":\"\xc3\"}", nil, 400, "data is not valid UTF-8"},
		{"multipart key file not UTF-8", valid, append([]byte(newKey(t, "")), 0xff, 0xfe), 400, "key part is not valid UTF-8"},
	} {
		ct, body := multi(m.data, m.key)
		cases = append(cases, badRequest{m.name, ct, body, m.status, m.wantMsg})
	}
	twice := func(name string) []byte {
		return fmt.Appendf(nil, "--b\r\nContent-Disposition: form-data; name=%q\r\n\r\n%s\r\n--b\r\nContent-Disposition: form-data; name=%q\r\n\r\n%s\r\n--b--\r\n", name, valid, name, valid)
	}
	cases = append(cases,
		badRequest{"two data parts", "multipart/form-data; boundary=b", twice("data"), 400, "more than one data part"},
		badRequest{"two key parts", "multipart/form-data; boundary=b", twice("key"), 400, "more than one key part"},
	)
	for _, c := range cases {
		for _, target := range []struct{ method, path string }{{"POST", "/ssh/db/host"}, {"PUT", "/ssh/db/host/1"}} {
			t.Run(target.method+" "+c.name, func(t *testing.T) {
				resp := e.do(request{method: target.method, path: target.path, token: e.alice, contentType: c.contentType, body: c.body})
				if resp.Status != c.status {
					t.Fatalf("status %d, want %d: %s", resp.Status, c.status, resp.Body)
				}
				var body struct{ Error, Code string }
				resp.json(t, &body)
				if !strings.Contains(body.Error, c.wantMsg) {
					t.Fatalf("error %q does not say %q", body.Error, c.wantMsg)
				}
			})
		}
	}
	// None of the bad requests changed anything.
	var list []json.RawMessage
	e.get(e.alice, "/ssh/db/host").json(t, &list)
	if h := e.get(e.alice, "/ssh/db/host/1"); len(list) != 1 || h.Header.Get("ETag") != `"1"` {
		t.Fatalf("bad requests changed the store: %d hosts, ETag %s", len(list), h.Header.Get("ETag"))
	}
}

func TestGetHost(t *testing.T) {
	e := newEnv(t)
	e.createHost(e.alice, map[string]any{"name": "mine", "password": "hunter2"})
	e.createHost(e.bob, nil)
	e.createHost(e.bob, nil)
	resp := e.get(e.alice, "/ssh/db/host/1")
	if h := resp.host(t); resp.Status != 200 || h.Name != "mine" || h.Password != "hunter2" || resp.Header.Get("ETag") != `"1"` {
		t.Fatalf("get: %d %s", resp.Status, resp.Body)
	}
	for path, status := range map[string]int{
		"/ssh/db/host/2":                    404, // bob has a host 2; alice does not
		"/ssh/db/host/999":                  404,
		"/ssh/db/host/abc":                  400,
		"/ssh/db/host/0":                    400,
		"/ssh/db/host/-1":                   400,
		"/ssh/db/host/1.5":                  400,
		"/ssh/db/host/+1":                   400,
		"/ssh/db/host/99999999999999999999": 400,
	} {
		if resp := e.get(e.alice, path); resp.Status != status {
			t.Errorf("GET %s: %d, want %d (%s)", path, resp.Status, status, resp.Body)
		}
	}
}

func TestUpdateHostKeepsAbsentCredentials(t *testing.T) {
	e := newEnv(t)
	key := newKey(t, "kp")
	e.createHost(e.alice, map[string]any{"key": key, "keyPassword": "kp", "authType": "key"})
	base := map[string]any{"ip": "10.0.0.6", "username": "root", "authType": "key"}
	put := func(fields map[string]any) map[string]any {
		t.Helper()
		body := map[string]any{}
		for k, v := range base {
			body[k] = v
		}
		for k, v := range fields {
			body[k] = v
		}
		resp := e.sendJSON("PUT", e.alice, "/ssh/db/host/1", body)
		if resp.Status != 200 {
			t.Fatalf("put %v: %d %s", fields, resp.Status, resp.Body)
		}
		var got map[string]any
		resp.json(t, &got)
		return got
	}
	h := put(nil)
	if h["key"] != key || h["keyPassword"] != "kp" || h["ip"] != "10.0.0.6" || h["port"] != float64(22) {
		t.Fatalf("absent credentials not kept or config not replaced: %v", h)
	}
	if h := put(map[string]any{"key": nil, "keyPassword": nil}); h["key"] != key {
		t.Fatal("null credentials not kept")
	}
	newer := newKey(t, "")
	if h := put(map[string]any{"key": newer, "keyPassword": ""}); h["key"] != newer || h["keyPassword"] != "" {
		t.Fatalf("replace key, clear passphrase: %v", h)
	}
	if h := put(map[string]any{"authType": "password", "password": "pw"}); h["key"] != "" || h["password"] != "pw" {
		t.Fatalf("authType password keeps the key: %v", h)
	}
	if h := put(map[string]any{"authType": nil}); h["authType"] != "password" || h["password"] != "pw" {
		t.Fatalf("absent authType without a key: %v", h)
	}
	if h := put(map[string]any{"authType": "key", "key": newer}); h["password"] != "" || h["key"] != newer {
		t.Fatalf("authType key keeps the password: %v", h)
	}
	if h := put(map[string]any{"authType": "none"}); h["key"] != "" || h["password"] != "" || h["keyPassword"] != "" {
		t.Fatalf("authType none keeps credentials: %v", h)
	}
	if h := put(map[string]any{"authType": "password", "password": ""}); h["password"] != "" {
		t.Fatalf("empty password does not clear: %v", h)
	}
	// The record as stored says the same as the answers.
	if got := e.get(e.alice, "/ssh/db/host/1").host(t); got.IP != "10.0.0.6" || got.Password != "" || got.Key != "" {
		t.Fatalf("stored %+v", got)
	}
}

func TestUpdateHostMultipartKeepsPassphrase(t *testing.T) {
	e := newEnv(t)
	e.createHost(e.alice, map[string]any{"key": newKey(t, "same"), "keyPassword": "same"})
	rekeyed := newKey(t, "same")
	resp := e.sendMultipart("PUT", e.alice, "/ssh/db/host/1", `{"ip":"h","username":"u","authType":"key"}`, []byte(rekeyed))
	if h := resp.host(t); resp.Status != 200 || h.Key != rekeyed || h.KeyPassword != "same" {
		t.Fatalf("new key file with kept passphrase: %d %s", resp.Status, resp.Body)
	}
}

func TestUpdateHostIfMatch(t *testing.T) {
	e := newEnv(t)
	e.createHost(e.alice, nil)
	body := map[string]any{"ip": "h", "username": "u"}
	etag := e.get(e.alice, "/ssh/db/host/1").Header.Get("ETag")
	resp := e.sendJSON("PUT", e.alice, "/ssh/db/host/1", body, "If-Match", etag)
	if resp.Status != 200 || resp.Header.Get("ETag") == etag {
		t.Fatalf("matching If-Match: %d, ETag %s", resp.Status, resp.Header.Get("ETag"))
	}
	// The host is at version 2. A body with its authType is written in one
	// conditional patch, the other after reading the host: both refuse
	// every tag but "2".
	patchable := map[string]any{"ip": "h", "username": "u", "authType": "none"}
	for _, b := range []map[string]any{body, patchable} {
		for _, stale := range []string{etag, `W/"2"`, `"nope"`, `"7", "8"`, `"02"`, `"+2"`, `2`, `"0"`, `"-1"`} {
			if resp := e.sendJSON("PUT", e.alice, "/ssh/db/host/1", b, "If-Match", stale); resp.Status != 412 || resp.errorCode(t) != "precondition_failed" {
				t.Fatalf("If-Match %s with %v: %d %s", stale, b, resp.Status, resp.Body)
			}
		}
	}
	if resp := e.sendJSON("PUT", e.alice, "/ssh/db/host/1", body, "If-Match", `"1", "2"`); resp.Status != 200 {
		t.Fatalf("If-Match list: %d", resp.Status)
	}
	if resp := e.sendJSON("PUT", e.alice, "/ssh/db/host/1", body, "If-Match", "*"); resp.Status != 200 {
		t.Fatalf("If-Match *: %d", resp.Status)
	}
	if resp := e.sendJSON("PUT", e.alice, "/ssh/db/host/5", body, "If-Match", "*"); resp.Status != 404 {
		t.Fatalf("If-Match * on a missing host: %d", resp.Status)
	}
}

func TestUpdateAndDeleteOtherUsersHost(t *testing.T) {
	e := newEnv(t)
	e.createHost(e.bob, map[string]any{"name": "bob's", "password": "bobpw"})
	body := map[string]any{"ip": "h", "username": "u", "password": "stolen"}
	if resp := e.sendJSON("PUT", e.alice, "/ssh/db/host/1", body); resp.Status != 404 || resp.errorCode(t) != "not_found" {
		t.Fatalf("alice updates bob's host: %d %s", resp.Status, resp.Body)
	}
	if resp := e.do(request{method: "DELETE", path: "/ssh/db/host/1", token: e.alice}); resp.Status != 404 {
		t.Fatalf("alice deletes bob's host: %d", resp.Status)
	}
	if h := e.get(e.bob, "/ssh/db/host/1").host(t); h.Name != "bob's" || h.Password != "bobpw" {
		t.Fatalf("bob's host changed: %+v", h)
	}
}

func TestDeleteHost(t *testing.T) {
	e := newEnv(t)
	e.createHost(e.alice, nil)
	e.createHost(e.alice, nil)
	if resp := e.do(request{method: "DELETE", path: "/ssh/db/host/1", token: e.alice, header: map[string]string{"If-Match": `"9"`}}); resp.Status != 412 {
		t.Fatalf("stale If-Match: %d", resp.Status)
	}
	resp := e.do(request{method: "DELETE", path: "/ssh/db/host/1", token: e.alice, header: map[string]string{"If-Match": `"1"`}})
	if resp.Status != 200 || !strings.Contains(string(resp.Body), `"SSH host deleted"`) {
		t.Fatalf("delete: %d %s", resp.Status, resp.Body)
	}
	if resp := e.get(e.alice, "/ssh/db/host/1"); resp.Status != 404 {
		t.Fatalf("deleted host still there: %d", resp.Status)
	}
	for path, status := range map[string]int{"/ssh/db/host/1": 404, "/ssh/db/host/x": 400, "/ssh/db/host/2": 200} {
		if resp := e.do(request{method: "DELETE", path: path, token: e.alice}); resp.Status != status {
			t.Errorf("DELETE %s: %d, want %d", path, resp.Status, status)
		}
	}
	// Ids are never reused.
	if h := e.createHost(e.alice, nil); h.ID != 3 {
		t.Fatalf("new host id %d, want 3", h.ID)
	}
}

func TestConcurrentWritersNeverLoseAnUpdate(t *testing.T) {
	e := newEnv(t)
	e.createHost(e.alice, map[string]any{"password": "start"})
	const writers, each = 8, 4 // 32 tags: the most a host may have
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				for {
					get := e.get(e.alice, "/ssh/db/host/1")
					h := get.host(t)
					tags := append(h.Tags, fmt.Sprintf("w%d-%d", w, i))
					resp := e.sendJSON("PUT", e.alice, "/ssh/db/host/1",
						map[string]any{"ip": h.IP, "username": h.Username, "tags": tags}, "If-Match", get.Header.Get("ETag"))
					if resp.Status == 200 {
						break
					}
					if resp.Status != 412 {
						t.Errorf("PUT: %d %s", resp.Status, resp.Body)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	resp := e.get(e.alice, "/ssh/db/host/1")
	h := resp.host(t)
	if len(h.Tags) != writers*each || h.Password != "start" || resp.Header.Get("ETag") != fmt.Sprintf(`"%d"`, 1+writers*each) {
		t.Fatalf("after %d conditional writes: %d tags, password kept %t, ETag %s", writers*each, len(h.Tags), h.Password == "start", resp.Header.Get("ETag"))
	}
}

func TestUnauthorized(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	expiring, _, _ := e.admin.CreateToken(ctx, "alice", "short", time.Minute)
	revoked, tok, _ := e.admin.CreateToken(ctx, "alice", "gone", 0)
	if resp := e.get(revoked, "/ssh/db/host"); resp.Status != 200 {
		t.Fatalf("token before revocation: %d", resp.Status) // and now it is cached
	}
	if _, err := e.admin.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if resp := e.get(expiring, "/ssh/db/host"); resp.Status != 200 {
		t.Fatalf("token before expiry: %d", resp.Status)
	}
	e.advance(2 * time.Minute)
	cases := map[string]string{
		"missing":       "",
		"wrong scheme":  "Basic YWxpY2U6cHc=",
		"no token":      "Bearer ",
		"malformed":     "Bearer not-a-token",
		"unknown":       "Bearer sshdeck_" + strings.Repeat("A", 43),
		"revoked":       "Bearer " + revoked,
		"expired":       "Bearer " + expiring,
		"prefix only":   "Bearer sshdeck_",
		"bad base64":    "Bearer sshdeck_" + strings.Repeat("*", 43),
		"token twice":   "Bearer " + e.alice + " " + e.alice,
		"lower scheme ": "bearer " + expiring,
	}
	for name, header := range cases {
		for _, r := range []request{
			{method: "GET", path: "/ssh/db/host"},
			{method: "GET", path: "/ssh/db/host/1"},
			{method: "POST", path: "/ssh/db/host", contentType: "application/json", body: []byte(`{"ip":"h","username":"u"}`)},
			{method: "PUT", path: "/ssh/db/host/1", contentType: "application/json", body: []byte(`{"ip":"h","username":"u"}`)},
			{method: "DELETE", path: "/ssh/db/host/1"},
		} {
			t.Run(name+" "+r.method+" "+r.path, func(t *testing.T) {
				r.header = map[string]string{}
				if header != "" {
					r.header["Authorization"] = header
				}
				resp := e.do(r)
				if resp.Status != 401 || resp.Header.Get("WWW-Authenticate") != "Bearer" || resp.errorCode(t) != "unauthorized" {
					t.Fatalf("%d %v %s", resp.Status, resp.Header, resp.Body)
				}
				if strings.Contains(string(resp.Body), "sshdeck_") {
					t.Fatal("error body echoes the token")
				}
			})
		}
	}
	if resp := e.get(e.alice, "/ssh/db/host"); resp.Status != 200 {
		t.Fatalf("a valid token after the clock moved: %d", resp.Status)
	}
}

// TestListHostsPages: a list longer than a page of the store is every host,
// in order, in one JSON array (the pages joined, none twice).
func TestListHostsPages(t *testing.T) {
	e := newEnv(t)
	const n = 250 // two full pages of 100 and a short one
	for i := range n {
		e.createHost(e.alice, map[string]any{"name": fmt.Sprintf("h%d", i+1), "password": fmt.Sprintf("pw%d", i+1)})
	}
	if resp := e.do(request{method: "DELETE", path: "/ssh/db/host/100", token: e.alice}); resp.Status != http.StatusOK {
		t.Fatalf("delete host 100 (the last id of the first page): %d %s", resp.Status, resp.Body)
	}
	var list []map[string]any
	e.get(e.alice, "/ssh/db/host").json(t, &list)
	if len(list) != n-1 {
		t.Fatalf("alice sees %d hosts, want %d", len(list), n-1)
	}
	prev := 0.0
	for _, h := range list {
		id := h["id"].(float64)
		if id <= prev || id == 100 || h["password"] != fmt.Sprintf("pw%d", int(id)) {
			t.Fatalf("host id %v (after %v) with password %v", id, prev, h["password"])
		}
		prev = id
	}
}

// failingPages is a host store whose reads after the first page fail.
type failingPages struct{ *embedded.Store }

func (s failingPages) Hosts(ctx context.Context, owner string, after int64, limit int) ([]*sshdeck.Host, error) {
	if after > 0 {
		return nil, errors.New("the store broke")
	}
	return s.Store.Hosts(ctx, owner, after, limit)
}

// TestListHostsCutShort: when a page after the first cannot be read, the
// answer (200 already sent) is cut, not ended as a shorter list that would
// look whole, and the failure is logged with the request id.
func TestListHostsCutShort(t *testing.T) {
	e := newEnv(t)
	for i := range 150 {
		e.createHost(e.alice, map[string]any{"name": fmt.Sprintf("h%d", i+1)})
	}
	keyring, err := secret.LoadOrCreateKeyFile(filepath.Join(e.dir, "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Config{
		Hosts:         hosts.NewService(failingPages{e.store}, e.store, secret.NewSealer(keyring), nil),
		Authenticator: e.authn,
		Logger:        slog.New(slog.NewJSONHandler(e.logs, nil)),
	}).Router())
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/ssh/db/host", nil)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil || json.Valid(body) {
		t.Fatalf("a list whose second page failed ended cleanly (%v) with %d bytes, valid JSON %t", err, len(body), json.Valid(body))
	}
	if !strings.Contains(e.logs.String(), `"msg":"answer cut short"`) || !strings.Contains(e.logs.String(), resp.Header.Get("X-Request-Id")) {
		t.Fatalf("no log line of the cut answer with its request id:\n%s", e.logs.String())
	}
}
