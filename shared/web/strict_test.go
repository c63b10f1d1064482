package web

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func TestAuthorizationHeaders(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	if h, err := Authorization(r); h != "" || err != nil {
		t.Errorf("no header: %q, %v", h, err)
	}
	r.Header.Add("Authorization", "Bearer a")
	if h, err := Authorization(r); h != "Bearer a" || err != nil {
		t.Errorf("one header: %q, %v", h, err)
	}
	r.Header.Add("authorization", "Bearer b")
	if _, err := Authorization(r); sshdeck.ErrorCode(err) != sshdeck.Unauthorized {
		t.Errorf("two headers: %v, want Unauthorized", err)
	}
}

// TestDotSegments: a path that ServeMux would redirect to its cleaned form
// is answered 404 in the contract's body, before the router sees it.
func TestDotSegments(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /a/{id}", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("GET /b/{rest...}", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	srv := httptest.NewServer(WithRequest(slog.New(slog.DiscardHandler), mux))
	defer srv.Close()
	for _, path := range []string{"/a/1", "/b/x/y/", "/b/", "/a/x.y", "/a/...", "/a/.x", "/b/team%2F..", "/b/a%2F..%2Fb%2F.%2Fc%2F%2F100%2525%3F%23"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d, want 200", path, resp.StatusCode)
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/a/1/..", "/a/1/../1", "/a/./1", "/a/%2e%2e", "/a/%2E%2e", "/a/.%2e", "/a/%2e", "/b/x/../y", "/a//1", "/b/x//y", "/b/x/.", "/b/x/%2E/y"} {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.URL.Opaque = path // sent as written: clients clean paths too
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body ErrorBody
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 404 || err != nil || body.Code != sshdeck.NotFound || resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("GET %s: %d %+v (%v), want the JSON 404", path, resp.StatusCode, body, err)
		}
	}
}

func TestDecodeJSONRefusesWhatItWouldReplace(t *testing.T) {
	var v struct{ Name string }
	for _, tc := range []struct{ body, want string }{
		{"{\"name\":\"a\xffb\"}", "not valid UTF-8 (at byte 10)"},
		{"{\"name\":\"\xed\xa0\x80\"}", "not valid UTF-8"}, // a surrogate encoded in UTF-8
		{`{"name":"\ud800"}`, "surrogate"},
		{`{"name":"\udc00\ud800"}`, "surrogate"},
		{`{"name":"\ud800\u0041"}`, "surrogate"},
		{`{"name":"\ud800`, "surrogate"},
	} {
		err := DecodeJSON(strings.NewReader(tc.body), "body", &v)
		if sshdeck.ErrorCode(err) != sshdeck.Invalid || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeJSON(%q) = %v, want Invalid saying %q", tc.body, err, tc.want)
		}
	}
	for _, body := range []string{`{"name":"\ud83d\ude00"}`, `{"name":"\\ud800"}`, `{"name":"\"\\\ud83d\ude00"}`, `{"name":"é😀"}`} {
		if err := DecodeJSON(strings.NewReader(body), "body", &v); err != nil {
			t.Errorf("DecodeJSON(%q): %v", body, err)
		}
	}
}
