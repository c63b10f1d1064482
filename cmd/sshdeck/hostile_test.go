package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/openapitest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// The hostile-input suite: every route of both services of the real
// `sshdeck serve`, over its real store, sent what a hostile client sends
// (missing, doubled and bad tokens; dot segments; bad types, huge numbers,
// invalid UTF-8, control characters, deep nesting; oversized bodies and
// parts; odd content types and methods; every spelling of a denied address
// we know). Every answer is the contract's JSON error with the status the
// case names, never a 5xx, never a redirect; both services are healthy
// after. The routes come from openapi.yaml, so that a route added there is
// attacked too.

// hostile is one request of the suite and what it must be answered.
type hostile struct {
	name        string
	tunnel      bool // sent to the tunnel service, else to the API
	method      string
	path        string // sent as written: dot segments and escapes stay
	headers     http.Header
	contentType string
	body        io.Reader
	want        int          // the status; 0: any 4xx
	code        sshdeck.Code // the body's code, when it matters
	says        string       // what the error must say, when it matters
}

// route is one operation of openapi.yaml with a path it can be sent to.
type route struct {
	method, pattern, path string
	tunnel, body          bool
	// public: the document says the operation needs no token
	// (security: []); both: it is served at both addresses (/healthz).
	public, both bool
}

// serves reports whether a route of rs, at the same address as r, takes
// method on r's path: a path may match more than one pattern
// (PATCH /users/me is PATCH /users/{id}).
func serves(rs []route, r route, method string) bool {
	segments := strings.Split(r.path, "/")
	for _, o := range rs {
		if o.method != method || o.tunnel != r.tunnel {
			continue
		}
		pattern := strings.Split(o.pattern, "/")
		if len(pattern) != len(segments) {
			continue
		}
		match := true
		for i, p := range pattern {
			if !(strings.HasPrefix(p, "{") && segments[i] != "") && p != segments[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func hostileRoutes(t *testing.T) []route {
	v := openapitest.Load(t, "../../openapi.yaml")
	doc := v.Doc()
	var out []route
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			concrete := strings.NewReplacer("{id}", "1", "{name}", "web", "{name...}", "web").Replace(path)
			security := doc.Security
			if op.Security != nil {
				security = *op.Security
			}
			r := route{
				method: method, pattern: path, path: concrete,
				tunnel: op.Extensions["x-sshdeck-service"] == "tunnel",
				public: len(security) == 0,
				both:   path == "/healthz",
				body:   op.RequestBody != nil,
			}
			out = append(out, r)
			if r.both {
				r.tunnel = true // served at both addresses
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b route) int { return strings.Compare(a.method+a.path, b.method+b.path) })
	return out
}

// validBodies are bodies each body route accepts (or answers without a
// 4xx of the body's making): the field mutations start from them.
func validBodies() map[string]map[string]any {
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	host := map[string]any{"name": "web", "ip": "10.0.0.5", "username": "deploy", "port": 22, "tags": []string{"a"}, "jumpHosts": []map[string]any{}}
	file := map[string]any{"path": "/etc/hosts", "hostId": 1}
	connect := map[string]any{
		"name": "web", "sourceIP": "192.0.2.1", "sourceUsername": "a", "sourcePassword": "pw",
		"endpointIP": "192.0.2.2", "endpointUsername": "b", "endpointPassword": "pw",
		"sourcePort": 8080, "endpointPort": 9000, "maxRetries": 0, "retryInterval": 1000,
	}
	return map[string]map[string]any{
		"POST /ssh/db/host":                  host,
		"PUT /ssh/db/host/{id}":              host,
		"POST /ssh/file_manager/recent":      file,
		"DELETE /ssh/file_manager/recent":    file,
		"POST /ssh/file_manager/shortcuts":   file,
		"DELETE /ssh/file_manager/shortcuts": file,
		"POST /alerts":                       {"title": "t", "message": "m", "expiresAt": future},
		"POST /alerts/dismiss":               {"alertId": "alr_x"},
		"POST /ssh/tunnel/connect":           connect,
		"POST /ssh/tunnel/disconnect":        {"tunnelName": "web"},
		"POST /ssh/tunnel/cancel":            {"tunnelName": "web"},
		"POST /auth/login":                   {"username": "admin", "password": "not the password", "totp": "123456"},
		"POST /users/me/password":            {"current": "", "new": "a new password"},
		"POST /users/me/totp/enable":         {"code": "123456"},
		"DELETE /users/me/totp":              {"code": "123456"},
		"POST /users":                        {"username": "eve", "password": "eve's password", "admin": false},
		"PATCH /users/{id}":                  {"disabled": false, "admin": true},
		"POST /tokens":                       {"name": "ci", "scopes": []string{"hosts:read"}, "ttl": 3600},
	}
}

func jsonBody(v any) io.Reader {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return bytes.NewReader(b)
}

// with returns body with field set to a raw JSON value.
func with(body map[string]any, field string, raw string) io.Reader {
	out := map[string]json.RawMessage{}
	for k, v := range body {
		b, _ := json.Marshal(v)
		out[k] = b
	}
	out[field] = json.RawMessage(raw)
	b, err := json.Marshal(out)
	if err != nil {
		panic(fmt.Sprintf("%s=%s: %v", field, raw, err))
	}
	return bytes.NewReader(b)
}

// importPath is the route whose body is an array of hosts or an ssh_config.
const importPath = "/ssh/db/host/import"

func hostileCases(t *testing.T, token string) []hostile {
	auth := http.Header{"Authorization": {"Bearer " + token}}
	var cases []hostile
	add := func(c hostile) {
		if c.headers == nil {
			c.headers = auth
		}
		cases = append(cases, c)
	}
	bodies := validBodies()
	routes := hostileRoutes(t)
	for _, r := range routes {
		rt := r.method + " " + r.path
		if !r.public {
			add(hostile{name: rt + ": no token", tunnel: r.tunnel, method: r.method, path: r.path, headers: http.Header{}, want: 401, code: sshdeck.Unauthorized})
			for what, values := range map[string][]string{
				"two Authorization headers":      {"Bearer " + token, "Bearer " + token},
				"two tokens in one header":       {"Bearer " + token + ", Bearer " + token},
				"Basic":                          {"Basic " + token},
				"a token with a byte more":       {"Bearer " + token + "x"},
				"a token of 32 KiB":              {"Bearer sshdeck_" + strings.Repeat("A", 32<<10)},
				"a token of non-ASCII (latin-1)": {"Bearer sshdeck_\xe9\xe9"},
				"an empty header":                {""},
				"Bearer and nothing":             {"Bearer"},
			} {
				add(hostile{name: rt + ": " + what, tunnel: r.tunnel, method: r.method, path: r.path,
					headers: http.Header{"Authorization": values}, want: 401, code: sshdeck.Unauthorized})
			}
		}
		// Dot segments and empty segments: 404 before any route, with a
		// token or without.
		last := strings.LastIndex(r.path, "/")
		for _, p := range []string{
			r.path + "/..", r.path + "/.", r.path + "/%2e%2e", r.path + "/%2E", r.path + "/.%2e",
			r.path + "/../" + r.path[last+1:], "/." + r.path, r.path[:last] + "/./" + r.path[last+1:],
			r.path[:last] + "//" + r.path[last+1:], r.path[:last] + "/%2e%2e/" + r.path[last+1:],
		} {
			for _, h := range []http.Header{auth, {}} {
				add(hostile{name: rt + ": path " + p, tunnel: r.tunnel, method: r.method, path: p, headers: h, want: 404, code: sshdeck.NotFound})
			}
		}
		if r.both {
			continue
		}
		// Methods the path does not serve.
		for _, m := range []string{"PATCH", "OPTIONS", "TRACE", "PROPFIND"} {
			if serves(routes, r, m) {
				continue
			}
			add(hostile{name: rt + ": method " + m, tunnel: r.tunnel, method: m, path: r.path, want: 405, code: sshdeck.MethodNotAllowed})
		}
		if !r.body {
			continue
		}
		// Content types that are not the route's.
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "", "application/json, text/plain", "application/jsonx", "text/json"} {
			if ct == "text/plain" && r.pattern == importPath {
				continue // an OpenSSH client config: its own cases below
			}
			add(hostile{name: rt + ": Content-Type " + ct, tunnel: r.tunnel, method: r.method, path: r.path, contentType: ct,
				body: strings.NewReader(`{}`), want: 415, code: sshdeck.UnsupportedMediaType})
		}
		// Bodies that are not a JSON object of valid UTF-8.
		for what, body := range map[string]string{
			"invalid UTF-8":           "{\"name\":\"a\xffb\"}",
			"overlong UTF-8":          "{\"name\":\"\xc0\xaf\"}",
			"a UTF-8 surrogate":       "{\"name\":\"\xed\xa0\x80\"}",
			"a lone surrogate escape": `{"name":"\udfff"}`,
			"a raw NUL in a string":   "{\"name\":\"a\x00b\"}",
			"deep nesting":            `{"name":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
			"deep nesting, unclosed":  strings.Repeat(`{"a":`, 50000),
			"truncated":               `{"name":"a`,
			"an array":                `[{}]`,
			"a string":                `"{}"`,
			"a huge number":           `1e999999`,
			"two objects":             `{} {}`,
			"empty":                   ``,
			"a UTF-16 BOM and UTF-16": "\xfe\xff\x00{\x00}",
			"a UTF-8 BOM":             "\xef\xbb\xbf{}",
			"null":                    `null`,
		} {
			add(hostile{name: rt + ": body " + what, tunnel: r.tunnel, method: r.method, path: r.path, contentType: "application/json",
				body: strings.NewReader(body), want: 400, code: sshdeck.Invalid})
		}
		add(hostile{name: rt + ": body of 2 MiB", tunnel: r.tunnel, method: r.method, path: r.path, contentType: "application/json",
			body: strings.NewReader(`{"name":"` + strings.Repeat("x", 2<<20) + `"}`), want: 413, code: sshdeck.TooLarge})
		add(hostile{name: rt + ": chunked body of 4 MiB", tunnel: r.tunnel, method: r.method, path: r.path, contentType: "application/json",
			body: io.MultiReader(strings.NewReader(`{"name":"`), strings.NewReader(strings.Repeat("x", 4<<20))), want: 413, code: sshdeck.TooLarge})
		// Each field of a body the route takes, made hostile: a 400 that
		// names the field.
		if r.pattern == importPath {
			continue // an array of create bodies: its own cases below
		}
		base := bodies[r.method+" "+r.pattern]
		if base == nil {
			t.Errorf("no valid body for %s %s: add one to validBodies", r.method, r.pattern)
			continue
		}
		for field, v := range base {
			mutations := []string{`1e400`, `99999999999999999999`, `-99999999999999999999`, `{"$gt":""}`, `[1,2]`, `true`, `1.5`}
			if _, isString := v.(string); isString {
				mutations = []string{`1e400`, `99999999999999999999`, `{}`, `["a"]`, `true`, `"a\u0000b"`, `"a\u001b[2Jb"`, `"a\u0085b"`, `"a\nb"`, `"\u007f"`}
			} else if _, isBool := v.(bool); isBool {
				mutations = []string{`1`, `0`, `1e400`, `"true"`, `{}`, `[true]`}
			} else if _, isList := v.([]string); isList {
				mutations = []string{`"a"`, `[1]`, `[["a"]]`, `["a\u0000"]`, `{}`}
			}
			for _, m := range mutations {
				if field == "message" && m == `"a\nb"` {
					continue // an alert's message may span lines
				}
				add(hostile{name: rt + ": " + field + "=" + m, tunnel: r.tunnel, method: r.method, path: r.path, contentType: "application/json",
					body: with(base, field, m), want: 400, code: sshdeck.Invalid, says: field})
			}
		}
	}

	// Host addresses and text fields.
	host := bodies["POST /ssh/db/host"]
	// An import checks each host as a create does (the cases above and
	// below), by its item's index; an ssh_config, each line.
	for what, body := range map[string]string{
		"an item with an option for an ip": `[{"ip":"-oProxyCommand=id","username":"u"}]`,
		"an item that is no object":        `[1]`,
		"items past the limit":             `[` + strings.Repeat(`{"ip":"10.0.0.1","username":"u"},`, 99) + `{"ip":"10.0.0.1","username":"u"}]`,
	} {
		add(hostile{name: "POST " + importPath + ": " + what, method: "POST", path: importPath, contentType: "application/json",
			body: strings.NewReader(body), want: 400, code: sshdeck.Invalid})
	}
	for what, config := range map[string]string{
		"an option for a HostName": "Host web\n  HostName -oProxyCommand=id\n  User u\n",
		"an option for a User":     "Host web\n  HostName 10.0.0.1\n  User -oProxyCommand=id\n",
		"a NUL":                    "Host web\x00\n  User u\n",
		"an unclosed quote":        "Host web\n  User \"u\n",
		"invalid UTF-8":            "Host w\xffb\n  User u\n",
	} {
		add(hostile{name: "POST " + importPath + ": config with " + what, method: "POST", path: importPath, contentType: "text/plain",
			body: strings.NewReader(config), want: 400, code: sshdeck.Invalid})
	}
	for _, ip := range []string{"-oProxyCommand=id", "-oProxyCommand=id.example", "a b", "web;id", "$(id)", "`id`", "web:22", "[::1]",
		"fe80::1%$(id)", "169.254.169.254%eth0", "my_host", "web..example", ".web", strings.Repeat("a", 64) + ".example", strings.Repeat("a.", 127), "ä.example"} {
		add(hostile{name: "POST /ssh/db/host: ip " + ip, method: "POST", path: "/ssh/db/host", contentType: "application/json",
			body: with(host, "ip", jsonString(ip)), want: 400, code: sshdeck.Invalid, says: "ip"})
	}
	for field, value := range map[string]string{"password": "a\nb", "keyPassword": "\x00", "key": "\x1b[2J", "folder": "a\tb", "defaultPath": "/a\rb"} {
		add(hostile{name: "POST /ssh/db/host: " + field + " with a control character", method: "POST", path: "/ssh/db/host", contentType: "application/json",
			body: with(host, field, jsonString(value)), want: 400, code: sshdeck.Invalid, says: field})
	}
	add(hostile{name: "POST /ssh/db/host: endpointHost an option", method: "POST", path: "/ssh/db/host", contentType: "application/json",
		body: with(host, "tunnelConnections", `[{"sourcePort":1,"endpointPort":2,"endpointHost":"-oProxyCommand=id"}]`), want: 400, code: sshdeck.Invalid, says: "endpointHost"})
	// Jump hosts: ids that are no id, and hosts that are not the caller's
	// (the suite's hosts are few: 999999 is none, and so none of another
	// user's can be named either way).
	for _, hops := range []string{`[{"hostId":"1"}]`, `[{"hostId":-1}]`, `[{"hostId":0}]`, `[{"hostId":1e400}]`, `[{"hostId":99999999999999999999}]`,
		`[{"hostId":1.5}]`, `[{"hostId":null}]`, `[{}]`, `[null]`, `[[1]]`, `["1"]`, `[{"hostId":{"$gt":0}}]`, `[{"hostId":999999}]`,
		`[{"hostId":999999},{"hostId":999999}]`, `[` + strings.Repeat(`{"hostId":999999},`, 20000) + `{"hostId":1}]`} {
		for _, target := range []struct{ method, path string }{{"POST", "/ssh/db/host"}, {"PUT", "/ssh/db/host/1"}} {
			name := hops
			if len(name) > 64 {
				name = name[:64] + "…"
			}
			add(hostile{name: target.method + " host: jumpHosts " + name, method: target.method, path: target.path, contentType: "application/json",
				body: with(host, "jumpHosts", hops), want: 400, code: sshdeck.Invalid, says: "jumpHosts"})
		}
	}
	// Multipart host bodies.
	for what, mp := range map[string]struct {
		data string
		key  []byte
		want int
	}{
		"key part of 65 KiB":          {`{"ip":"10.0.0.5","username":"u"}`, bytes.Repeat([]byte("k"), 65<<10), 413},
		"data part of 2 MiB":          {`{"name":"` + strings.Repeat("x", 2<<20) + `"}`, nil, 413},
		"key part not UTF-8":          {`{"ip":"10.0.0.5","username":"u"}`, []byte("\xff\xfe"), 400},
		"data part not UTF-8":         {"{\"ip\":\"10.0.0.5\",\"username\":\"\xff\"}", nil, 400},
		"data part an option ip":      {`{"ip":"-oProxyCommand=id","username":"u"}`, nil, 400},
		"data part deeply nested":     {strings.Repeat("[", 20000), nil, 400},
		"key part a control sequence": {`{"ip":"10.0.0.5","username":"u"}`, []byte("\x1b]0;pwned\x07"), 400},
		"data part a missing hop":     {`{"ip":"10.0.0.5","username":"u","jumpHosts":[{"hostId":999999}]}`, nil, 400},
		"data part a hop of no id":    {`{"ip":"10.0.0.5","username":"u","jumpHosts":[{"hostId":"x"}]}`, nil, 400},
	} {
		ct, body := multipartHost(mp.data, mp.key)
		for _, target := range []struct{ method, path string }{{"POST", "/ssh/db/host"}, {"PUT", "/ssh/db/host/1"}} {
			add(hostile{name: target.method + " host multipart: " + what, method: target.method, path: target.path, contentType: ct, body: bytes.NewReader(body), want: mp.want})
		}
	}
	many := &bytes.Buffer{}
	for i := range 5000 {
		fmt.Fprintf(many, "--B\r\nContent-Disposition: form-data; name=\"p%d\"\r\n\r\nx\r\n", i)
	}
	many.WriteString("--B--\r\n")
	add(hostile{name: "POST host multipart: 5000 parts and no data", method: "POST", path: "/ssh/db/host", contentType: "multipart/form-data; boundary=B", body: bytes.NewReader(many.Bytes()), want: 400})
	add(hostile{name: "POST host multipart: no boundary", method: "POST", path: "/ssh/db/host", contentType: "multipart/form-data", body: strings.NewReader("{}"), want: 400})
	add(hostile{name: "POST host multipart: unterminated", method: "POST", path: "/ssh/db/host", contentType: "multipart/form-data; boundary=B",
		body: strings.NewReader("--B\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n{\"ip\":"), want: 400})
	add(hostile{name: "POST host multipart: a part header of 20 KiB", method: "POST", path: "/ssh/db/host", contentType: "multipart/form-data; boundary=B",
		body: strings.NewReader("--B\r\nContent-Disposition: form-data; name=\"data\"\r\nX-Junk: " + strings.Repeat("j", 20<<10) + "\r\n\r\n{}\r\n--B--\r\n"), want: 0})

	// Path values and queries.
	for _, id := range []string{"0", "-1", "1e3", "0x1", "99999999999999999999", "%00", "%ff", "1%20", "+1", "1.0", "%E2%80%AE1"} {
		for _, m := range []string{"GET", "DELETE"} {
			add(hostile{name: m + " host id " + id, method: m, path: "/ssh/db/host/" + id, want: 400, code: sshdeck.Invalid})
		}
	}
	add(hostile{name: "GET host id %2e", method: "GET", path: "/ssh/db/host/%2e", want: 404, code: sshdeck.NotFound})
	add(hostile{name: "GET host id absent", method: "GET", path: "/ssh/db/host/999999", want: 404, code: sshdeck.NotFound})
	for _, name := range []string{"%ff", "%00", "a%0Ab", "%E2%80%AE", "%2F", "a%2F..%2F..", strings.Repeat("n", 300)} {
		add(hostile{name: "tunnel status " + name, tunnel: true, method: "GET", path: "/ssh/tunnel/status/" + name, want: 404, code: sshdeck.NotFound})
	}
	add(hostile{name: "DELETE alert %ff", method: "DELETE", path: "/alerts/%ff", want: 404, code: sshdeck.NotFound})
	for _, id := range []string{"%ff", "%00", "tok_%2e%2e", strings.Repeat("t", 300)} {
		add(hostile{name: "DELETE token " + id, method: "DELETE", path: "/tokens/" + id, want: 404, code: sshdeck.NotFound})
		add(hostile{name: "PATCH user " + id, method: "PATCH", path: "/users/" + id, contentType: "application/json",
			body: jsonBody(map[string]any{"disabled": true}), want: 404, code: sshdeck.NotFound})
	}
	for _, q := range []string{"limit=1e99", "limit=-5", "limit=0", "cursor=%ff", "cursor=", "cursor=a&cursor=b", "limit=99999999999999999999"} {
		for _, p := range []string{"/tokens", "/users"} {
			add(hostile{name: "GET " + p + "?" + q, method: "GET", path: p + "?" + q, want: 400, code: sshdeck.Invalid})
		}
	}
	// Login: what is malformed is 400 before any user is read (and counts
	// no failure: the suite's address is never locked out).
	login := bodies["POST /auth/login"]
	for field, value := range map[string]string{"password": strings.Repeat("p", 2000), "totp": "１２３４５６"} {
		add(hostile{name: "login " + field + " " + value[:min(len(value), 16)], method: "POST", path: "/auth/login", headers: http.Header{}, contentType: "application/json",
			body: with(login, field, jsonString(value)), want: 400, code: sshdeck.Invalid, says: field})
	}
	for _, q := range []string{"hostId=%ff", "hostId=1e3", "hostId=99999999999999999999", "hostId=-1", "hostId=", "hostId=%00"} {
		for _, p := range []string{"/ssh/file_manager/recent", "/ssh/file_manager/shortcuts"} {
			add(hostile{name: "GET " + p + "?" + q, method: "GET", path: p + "?" + q, want: 400, code: sshdeck.Invalid})
		}
	}
	for _, q := range []string{"limit=1e99", "limit=-5", "limit=%00", "limit=99999999999999999999"} {
		add(hostile{name: "GET recent ?" + q, method: "GET", path: "/ssh/file_manager/recent?hostId=1&" + q, want: 400, code: sshdeck.Invalid, says: "limit"})
	}
	// The releases feed has no repository here: 404 whatever the query.
	for _, q := range []string{"page=%ff&per_page=-1", "page=99999999999999999999", "per_page=1e9", "page=0"} {
		add(hostile{name: "GET /releases/rss?" + q, method: "GET", path: "/releases/rss?" + q, want: 0})
	}

	// Tunnel addresses: every spelling of an always-denied address is 400
	// forbidden on either hop; spellings of loopback are forbidden on the
	// source (the suite's serve denies 127.0.0.0/8 and ::1 as the AWS
	// deployment does) and allowed on the endpoint, which the source
	// dials; what is neither an IP literal nor a DNS name is 400 invalid.
	connect := bodies["POST /ssh/tunnel/connect"]
	always := []string{
		"169.254.169.254", "169.254.169.254.", "169.254.0.1", "169.254.255.255", "::ffff:169.254.169.254", "::ffff:a9fe:a9fe",
		"0:0:0:0:0:ffff:a9fe:a9fe", "2852039166", "0xa9fea9fe", "0XA9FEA9FE", "0251.0376.0251.0376", "0xa9.0xfe.0xa9.0xfe",
		"169.254.43518", "169.16689662", "0251.254.169.254", "fe80::1", "FE80::1", "fe80:0:0:0:0:0:0:1", "fe80::1%eth0",
		"fe80::1%25eth0", "fe80::1%1", "febf:ffff::1", "0.0.0.0", "0", "0.0", "00", "0x0", "0.1.2.3",
		"::", "::0", "0::", "0:0:0:0:0:0:0:0", "::ffff:0.0.0.0", "::ffff:0:0", "224.0.0.1", "239.255.255.250", "::ffff:224.0.0.251",
		"ff02::1", "ff02::1%eth0", "FF05::2", "255.255.255.255", "4294967295", "0xffffffff", "fd00:ec2::254", "FD00:EC2::23",
		"fd00:ec2:0:0:0:0:0:254", "fd00:ec2::254%eth0",
	}
	for _, field := range []string{"sourceIP", "endpointIP"} {
		for _, addr := range always {
			add(hostile{name: "connect " + field + " " + addr, tunnel: true, method: "POST", path: "/ssh/tunnel/connect", contentType: "application/json",
				body: with(connect, field, jsonString(addr)), want: 400, code: sshdeck.Forbidden, says: "denied"})
		}
		for _, addr := range []string{"-oProxyCommand=id", "[::1]", "169.254.169.254%eth0", "169.254.169.254 ", " 169.254.169.254", "fe80::1%$(id)",
			"fe80::1%", "http://169.254.169.254/", "169.254.169.254:22", "169.254.169.254/32", "a_b", "\u0661\u0666\u0669.254.169.254"} {
			add(hostile{name: "connect " + field + " " + addr, tunnel: true, method: "POST", path: "/ssh/tunnel/connect", contentType: "application/json",
				body: with(connect, field, jsonString(addr)), want: 400, code: sshdeck.Invalid, says: field})
		}
	}
	loopback := []string{"127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "017700000001", "127.255.255.254",
		"::ffff:127.0.0.1", "::ffff:7f00:1", "::1", "0:0:0:0:0:0:0:1", "localhost"}
	for _, addr := range loopback {
		add(hostile{name: "connect sourceIP " + addr, tunnel: true, method: "POST", path: "/ssh/tunnel/connect", contentType: "application/json",
			body: with(connect, "sourceIP", jsonString(addr)), want: 400, code: sshdeck.Forbidden, says: "denied"})
		add(hostile{name: "connect endpointIP " + addr + " (the source's network)", tunnel: true, method: "POST", path: "/ssh/tunnel/connect",
			contentType: "application/json", body: with(with2(connect, "name", "ep"), "endpointIP", jsonString(addr)), want: 200})
	}
	add(hostile{name: "connect retryInterval 0 (raised)", tunnel: true, method: "POST", path: "/ssh/tunnel/connect", contentType: "application/json",
		body: with(with2(connect, "name", "fast"), "retryInterval", "0"), want: 200})
	add(hostile{name: "connect retryInterval 3600001", tunnel: true, method: "POST", path: "/ssh/tunnel/connect", contentType: "application/json",
		body: with(connect, "retryInterval", "3600001"), want: 400, code: sshdeck.Invalid, says: "retryInterval"})
	return cases
}

// with2 is body with field set to a string, as a map for with.
func with2(body map[string]any, field, value string) map[string]any {
	out := map[string]any{}
	for k, v := range body {
		out[k] = v
	}
	out[field] = value
	return out
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func multipartHost(data string, key []byte) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("data", data)
	if key != nil {
		fw, _ := mw.CreateFormFile("key", "id_ed25519")
		fw.Write(key)
	}
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

func TestHostileInput(t *testing.T) {
	// As the AWS deployment adds for the hops it dials itself.
	t.Setenv("SSHDECK_TUNNEL_DENY_CIDRS", "127.0.0.0/8,::1/128")
	srv := serve(t, t.TempDir())
	token := srv.bootstrapToken(t)
	// A host, so that id 1 names one.
	req, _ := http.NewRequest("POST", srv.url+"/ssh/db/host", jsonBody(validBodies()["POST /ssh/db/host"]))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create the host: %v %v", resp, err)
	}
	client := &http.Client{
		Timeout:       time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	cases := hostileCases(t, token)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := srv.url
			if c.tunnel {
				base = srv.tunnelURL
			}
			u, err := url.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest(c.method, base, c.body)
			if err != nil {
				t.Fatal(err)
			}
			path, query, _ := strings.Cut(c.path, "?")
			req.URL.Opaque, req.URL.RawQuery = path, query // sent as written
			req.Host = u.Host
			for k, vs := range c.headers {
				req.Header[k] = vs
			}
			if c.contentType != "" || c.body != nil {
				req.Header.Set("Content-Type", c.contentType)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", c.method, c.path, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			checkHostileAnswer(t, c, resp, body)
		})
	}
	t.Logf("%d hostile requests", len(cases))
	for _, base := range []string{srv.url, srv.tunnelURL} {
		resp, err := http.Get(base + "/healthz")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s/healthz after the suite: %v %v", base, resp, err)
		}
		resp.Body.Close()
	}
}

func checkHostileAnswer(t *testing.T, c hostile, resp *http.Response, body []byte) {
	t.Helper()
	status := resp.StatusCode
	switch {
	case status >= 500:
		t.Fatalf("%s %s: %d %s", c.method, c.path, status, body)
	case status >= 300 && status < 400:
		t.Fatalf("%s %s: a redirect, %d to %s", c.method, c.path, status, resp.Header.Get("Location"))
	case c.want != 0 && status != c.want:
		t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, status, body, c.want)
	case c.want == 0 && (status < 400 || status >= 500):
		t.Fatalf("%s %s: %d %s, want a 4xx", c.method, c.path, status, body)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("no X-Request-Id")
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q: %s", ct, body)
	}
	if status < 400 {
		return
	}
	var e web.ErrorBody
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" || e.Code == "" {
		t.Fatalf("not the JSON error body: %s", body)
	}
	if c.code != "" && e.Code != c.code {
		t.Fatalf("code %q (%s), want %q", e.Code, e.Error, c.code)
	}
	if st := web.Status(e.Code); st != status && !(e.Code == sshdeck.Forbidden && status == 400) {
		t.Fatalf("code %q with status %d", e.Code, status)
	}
	if c.says != "" && !strings.Contains(e.Error, c.says) {
		t.Fatalf("error %q does not say %q", e.Error, c.says)
	}
	if status == 401 && resp.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("401 without WWW-Authenticate: Bearer")
	}
}
