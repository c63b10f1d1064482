package openapitest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/internal/openapitest"
)

const document = "../../openapi.yaml"

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// check runs Check with a recorder and reports what it failed with.
func check(v *openapitest.Validator, method, target string, status int, header http.Header, body string) []string {
	rec := &recorder{}
	v.Check(rec, httptest.NewRequest(method, target, nil), status, header, []byte(body))
	return rec.failures
}

// headers returns a JSON response's headers with X-Request-Id, then adds
// the given name/value pairs; an empty value deletes the name.
func headers(kv ...string) http.Header {
	h := http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Request-Id": {"4b1c3a2e-0000-4000-8000-000000000001"}}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			h.Del(kv[i])
			continue
		}
		h.Add(kv[i], kv[i+1])
	}
	return h
}

const host = `{"id":1,"name":"web","ip":"10.0.0.1","port":22,"username":"root","folder":"","tags":["prod"],
"pin":false,"authType":"password","keyType":"auto","enableTerminal":true,"enableTunnel":true,
"enableFileManager":true,"defaultPath":"/","tunnelConnections":[{"sourcePort":80,"endpointPort":8080,
"endpointHost":"127.0.0.1","maxRetries":3,"retryInterval":5,"autoStart":false}],"jumpHosts":[{"hostId":2}],"identityFile":"",
"password":"secret","key":"","keyPassword":"","createdAt":"2026-11-21T15:04:05.123Z","updatedAt":"2026-11-21T15:04:05Z"}`

const tunnelStatus = `{"name":"a/b","status":"waiting","retryCount":1,"maxRetries":3,"nextRetryIn":5,
"reason":"tunnel: connection refused or unreachable","errorType":"network","retryExhausted":false,
"manualDisconnect":false,"hostName":"web","sourcePort":80,"endpointPort":8080,"autoStart":false,
"isPinned":true,"mode":"relay","updatedAt":"2026-11-21T15:04:05.123Z","connectedSince":null,"bytesIn":1024,
"bytesOut":2048,"activeConnections":0,"reconnects":1,"lastError":"tunnel: connection refused or unreachable"}`

// sse returns the headers of the tunnel status stream, then adds the given
// name/value pairs as headers does.
func sse(kv ...string) http.Header {
	return headers(append([]string{"Content-Type", "", "Content-Type", "text/event-stream", "Cache-Control", "no-cache"}, kv...)...)
}

// event is one status event of the stream with data on one line.
func event(data string) string {
	return "event: status\ndata: " + strings.ReplaceAll(data, "\n", "") + "\n\n"
}

func TestCheck(t *testing.T) {
	v := openapitest.Load(t, document)
	for _, tc := range []struct {
		name           string
		method, target string
		status         int
		header         http.Header
		body           string
		fails          string // part of the failure; "" when Check must pass
	}{
		{"host", "GET", "/ssh/db/host/1", 200, headers("ETag", `"1"`), host, ""},
		{"host list", "GET", "/ssh/db/host", 200, headers(), "[" + host + "]", ""},
		{"empty list", "GET", "/ssh/db/host", 200, headers(), "[]\n", ""},
		{"created", "POST", "/ssh/db/host", 201, headers("ETag", `"1"`, "Location", "/ssh/db/host/1"), host, ""},
		{"health", "GET", "/healthz", 200, headers(), `{"status":"ok","store":"ok"}`, ""},
		{"unhealthy", "GET", "/healthz", 503, headers(), `{"status":"unavailable","store":"store does not answer"}`, ""},
		{"deleted", "DELETE", "/ssh/db/host/1", 200, headers(), `{"message":"SSH host deleted"}`, ""},
		{"bad id still routes", "GET", "/ssh/db/host/abc", 400, headers(), `{"error":"host id must be a positive integer","code":"invalid"}`, ""},
		{"unauthorized", "GET", "/ssh/db/host", 401, headers("WWW-Authenticate", "Bearer"), `{"error":"missing bearer token","code":"unauthorized"}`, ""},
		{"unknown path", "GET", "/nope", 404, headers(), `{"error":"no route for GET /nope","code":"not_found"}`, ""},
		{"wrong method", "PATCH", "/ssh/db/host/1", 405, headers("Allow", "GET", "Allow", "PUT", "Allow", "DELETE"), `{"error":"PATCH is not allowed","code":"method_not_allowed"}`, ""},
		{"head as get", "HEAD", "/ssh/db/host/1", 200, headers("ETag", `"1"`), "", ""},

		{"wrong body", "GET", "/ssh/db/host/1", 200, headers("ETag", `"1"`), `{"id":1}`, "doesn't match schema"},
		{"wrong type", "GET", "/ssh/db/host/1", 200, headers("ETag", `"1"`), strings.Replace(host, `"port":22`, `"port":"22"`, 1), "doesn't match schema"},
		{"extra field", "GET", "/ssh/db/host/1", 200, headers("ETag", `"1"`), strings.Replace(host, `"pin":false`, `"pin":false,"owner":"u1"`, 1), "doesn't match schema"},
		{"bad time", "GET", "/ssh/db/host/1", 200, headers("ETag", `"1"`), strings.Replace(host, `"2026-11-21T15:04:05Z"`, `"yesterday"`, 1), "doesn't match schema"},
		{"bad error code", "GET", "/ssh/db/host/1", 404, headers(), `{"error":"no","code":"missing"}`, "doesn't match schema"},
		{"no etag", "GET", "/ssh/db/host/1", 200, headers(), host, `"ETag" missing`},
		{"no request id", "GET", "/healthz", 200, headers("X-Request-Id", ""), `{"status":"ok","store":"ok"}`, `"X-Request-Id" missing`},
		{"empty request id", "GET", "/healthz", 200, http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {""}}, `{"status":"ok","store":"ok"}`, `"X-Request-Id" doesn't match schema`},
		{"weak etag", "GET", "/ssh/db/host/1", 200, headers("ETag", `W/"1"`), host, `"ETag" doesn't match schema`},
		{"bad location", "POST", "/ssh/db/host", 201, headers("ETag", `"1"`, "Location", "/ssh/db/host/0"), host, `"Location" doesn't match schema`},
		{"no www-authenticate", "GET", "/ssh/db/host", 401, headers(), `{"error":"no","code":"unauthorized"}`, `"WWW-Authenticate" missing`},
		{"undocumented status", "GET", "/healthz", 500, headers(), `{"error":"internal error","code":"internal"}`, "status is not supported"},
		{"unknown path not 404", "GET", "/nope", 200, headers(), `{}`, "no operation"},
		{"unknown path bad body", "GET", "/nope", 404, headers(), `404 page not found`, "doesn't match schema"},
		{"trailing garbage", "GET", "/healthz", 200, headers(), `{"status":"ok","store":"ok"} trailing`, "not one valid JSON value"},
		{"wrong method no allow", "PATCH", "/ssh/db/host/1", 405, headers(), `{"error":"no","code":"method_not_allowed"}`, `"Allow" missing`},
		{"not json", "GET", "/healthz", 200, headers("Content-Type", "", "Content-Type", "text/plain"), `ok`, "Content-Type"},

		// The tunnel service's paths have servers of their own: they route
		// on the path all the same.
		{"tunnel status", "GET", "/ssh/tunnel/status/a%2Fb", 200, headers(), tunnelStatus, ""},
		{"tunnel statuses", "GET", "/ssh/tunnel/status", 200, headers(), `{"a/b":` + tunnelStatus + `}`, ""},
		{"no tunnels", "GET", "/ssh/tunnel/status", 200, headers(), `{}`, ""},
		{"no error type", "GET", "/ssh/tunnel/status/a", 200, headers(), strings.Replace(tunnelStatus, `"network"`, `null`, 1), ""},
		{"bad error type", "GET", "/ssh/tunnel/status/a", 200, headers(), strings.Replace(tunnelStatus, `"network"`, `"dns"`, 1), "doesn't match schema"},
		{"bad tunnel state", "GET", "/ssh/tunnel/status/a", 200, headers(), strings.Replace(tunnelStatus, `"waiting"`, `"sleeping"`, 1), "doesn't match schema"},
		{"tunnel not found", "GET", "/ssh/tunnel/status/a", 404, headers(), `{"error":"no tunnel named \"a\"","code":"not_found"}`, ""},
		{"tunnel forbidden", "POST", "/ssh/tunnel/connect", 400, headers(), `{"error":"sourceIP is denied","code":"forbidden"}`, ""},
		{"tunnel wrong method", "PUT", "/ssh/tunnel/connect", 405, headers("Allow", "POST, DELETE"), `{"error":"no","code":"method_not_allowed"}`, ""},
		{"tunnel unknown path", "GET", "/ssh/tunnels/nope", 404, headers(), `{"error":"no","code":"not_found"}`, ""},
		{"tunnel delete", "DELETE", "/ssh/tunnel/a%2Fb", 200, headers(), `{"message":"Tunnel deleted"}`, ""},
		{"tunnel limit", "POST", "/ssh/tunnel/connect", 409, headers(), `{"error":"at most 64","code":"limit_exceeded"}`, ""},
		{"stream limit", "GET", "/ssh/tunnel/status/stream", 429, headers(), `{"error":"at most 4","code":"rate_limited"}`, ""},
		{"stream deleted", "GET", "/ssh/tunnel/status/stream", 200, sse(), "event: deleted\ndata: {\"name\":\"a/b\"}\n\n", ""},
		{"stream deleted, bad data", "GET", "/ssh/tunnel/status/stream", 200, sse(), "event: deleted\ndata: {\"nom\":\"a/b\"}\n\n", "doesn't match schema"},

		// Server-Sent Events: the framing, and each event's data against
		// the schema x-sshdeck-events names.
		{"stream", "GET", "/ssh/tunnel/status/stream", 200, sse(), event(tunnelStatus) + ": ping\n\n" + event(tunnelStatus), ""},
		{"empty stream", "GET", "/ssh/tunnel/status/stream", 200, sse(), "", ""},
		{"stream cut in an event", "GET", "/ssh/tunnel/status/stream", 200, sse(), event(tunnelStatus) + "event: status\ndata: {\"na", ""},
		{"stream crlf", "GET", "/ssh/tunnel/status/stream", 200, sse(), strings.ReplaceAll(event(tunnelStatus), "\n", "\r\n"), ""},
		{"stream bad data", "GET", "/ssh/tunnel/status/stream", 200, sse(), event(strings.Replace(tunnelStatus, `"retryCount":1,`, "", 1)), `doesn't match schema "TunnelStatus"`},
		{"stream data not json", "GET", "/ssh/tunnel/status/stream", 200, sse(), "event: status\ndata: {\n\n", "not one JSON value"},
		{"stream unknown event", "GET", "/ssh/tunnel/status/stream", 200, sse(), "event: state\ndata: {}\n\n", "x-sshdeck-events"},
		{"stream message event", "GET", "/ssh/tunnel/status/stream", 200, sse(), "data: {}\n\n", `"message"`},
		{"stream bad line", "GET", "/ssh/tunnel/status/stream", 200, sse(), "status\n\n", "not a field"},
		{"stream no cache-control", "GET", "/ssh/tunnel/status/stream", 200, sse("Cache-Control", ""), event(tunnelStatus), `"Cache-Control" missing`},
		{"stream as json", "GET", "/ssh/tunnel/status/stream", 200, headers("Cache-Control", "no-cache"), tunnelStatus, "Content-Type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failures := check(v, tc.method, tc.target, tc.status, tc.header, tc.body)
			switch {
			case tc.fails == "" && len(failures) > 0:
				t.Errorf("Check failed a right response:\n%s", strings.Join(failures, "\n"))
			case tc.fails != "" && len(failures) == 0:
				t.Errorf("Check passed a wrong response (want a failure about %q)", tc.fails)
			case tc.fails != "" && !strings.Contains(strings.Join(failures, "\n"), tc.fails):
				t.Errorf("Check failed, but not about %q:\n%s", tc.fails, strings.Join(failures, "\n"))
			}
		})
	}
}

func TestLoadFailsOnInvalidDocument(t *testing.T) {
	path := t.TempDir() + "/openapi.yaml"
	doc := "openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths:\n  /x:\n    get:\n      responses: {}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		openapitest.Load(rec, path)
	}()
	<-done
	if len(rec.failures) == 0 {
		t.Fatal("Load accepted a document without responses")
	}
}

func TestOperations(t *testing.T) {
	ops := openapitest.Load(t, document).Operations()
	if got := ops["GET /ssh/db/host/{id}"]; got != "get-host" {
		t.Errorf(`Operations()["GET /ssh/db/host/{id}"] = %q, want "get-host"`, got)
	}
	if got := ops["GET /ssh/tunnel/status/{name}"]; got != "tunnel-status-one" {
		t.Errorf(`Operations()["GET /ssh/tunnel/status/{name}"] = %q, want "tunnel-status-one"`, got)
	}
}

// TestEveryResponseHasRequestID: the contract puts X-Request-Id on every
// response, so the document must require it on every one.
func TestEveryResponseHasRequestID(t *testing.T) {
	doc := openapitest.Load(t, document).Doc()
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				h := resp.Value.Headers["X-Request-Id"]
				if h == nil || h.Value == nil || !h.Value.Required {
					t.Errorf("%s %s %s: no required X-Request-Id header", method, path, status)
				}
				if status == "401" && resp.Value.Headers["WWW-Authenticate"] == nil {
					t.Errorf("%s %s 401: no WWW-Authenticate header", method, path)
				}
			}
		}
	}
}
