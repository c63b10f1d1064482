package api_test

import (
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/internal/logbuf"
	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/secret"
)

func TestHealthz(t *testing.T) {
	e := newEnv(t)
	resp := e.get("", "/healthz")
	if resp.Status != 200 || !strings.Contains(string(resp.Body), `"status":"ok"`) {
		t.Fatalf("healthz: %d %s", resp.Status, resp.Body)
	}
	e.store.Close()
	if resp := e.get("", "/healthz"); resp.Status != 503 || !strings.Contains(string(resp.Body), `"unavailable"`) {
		t.Fatalf("healthz with a closed store: %d %s", resp.Status, resp.Body)
	}
}

func TestUnknownRoutes(t *testing.T) {
	e := newEnv(t)
	if resp := e.get(e.alice, "/nope"); resp.Status != 404 || resp.errorCode(t) != "not_found" {
		t.Fatalf("unknown path: %d %s", resp.Status, resp.Body)
	}
	resp := e.do(request{method: "PATCH", path: "/ssh/db/host", token: e.alice})
	if resp.Status != 405 || resp.errorCode(t) != "method_not_allowed" || strings.Join(resp.Header.Values("Allow"), ",") != "GET,POST" {
		t.Fatalf("wrong method: %d %v %s", resp.Status, resp.Header, resp.Body)
	}
}

// TestHandlerServesOnlyItsRoute is the Lambda shape: each function's handler
// answers its own route and 404 or 405 to every other.
func TestHandlerServesOnlyItsRoute(t *testing.T) {
	e := newEnv(t)
	s := api.New(api.Config{Hosts: e.hostsService, Ping: e.store.Ping, Authenticator: e.authn})
	for _, r := range routes.All {
		h := s.Handler(r.Name)
		for _, other := range routes.All {
			// Not through e.do: openapi.yaml describes the whole API, and a
			// single route's handler rightly answers 404 to the others.
			path := strings.ReplaceAll(other.Path, "{id}", "1")
			req := httptest.NewRequest(other.Method, path, strings.NewReader(`{"ip":"h","username":"u"}`))
			req.Header.Set("Authorization", "Bearer "+e.alice)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body := rec.Body.String()
			routed := !strings.Contains(body, `"no route for`) && !strings.Contains(body, `"method_not_allowed"`)
			if own := other.Method == r.Method && other.Path == r.Path; routed != own {
				t.Errorf("handler %s answered %s %s with %d %s", r.Name, other.Method, path, rec.Code, body)
			}
		}
	}
}

// TestPanicIsLoggedAndAnswered500 runs a server missing its hosts service:
// the handler's nil dereference must become a 500 with the contract's body.
func TestPanicIsLoggedAndAnswered500(t *testing.T) {
	e := newEnv(t)
	logs := &logbuf.Buffer{}
	e.handler = api.New(api.Config{Ping: e.store.Ping, Authenticator: e.authn, Logger: slog.New(slog.NewJSONHandler(logs, nil))}).Router()
	resp := e.get(e.alice, "/ssh/db/host")
	if resp.Status != 500 || resp.errorCode(t) != "internal" {
		t.Fatalf("%d %s", resp.Status, resp.Body)
	}
	if !strings.Contains(logs.String(), `"msg":"panic"`) || !strings.Contains(logs.String(), "nil pointer dereference") {
		t.Fatalf("panic not logged:\n%s", logs)
	}
}

// TestInternalErrorsAreLoggedNotShown opens a host sealed under one key file
// with a server holding another: the envelope does not open, which is the
// server's fault, not the client's.
func TestInternalErrorsAreLoggedNotShown(t *testing.T) {
	e := newEnv(t)
	e.createHost(e.alice, map[string]any{"password": "hunter2-canary"})
	other, err := secret.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "other.key"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &logbuf.Buffer{}
	e.handler = api.New(api.Config{
		Hosts:         hosts.NewService(e.store, e.store, secret.NewSealer(other), nil),
		Ping:          e.store.Ping,
		Authenticator: e.authn,
		Logger:        slog.New(slog.NewJSONHandler(logs, nil)),
	}).Router()
	resp := e.get(e.alice, "/ssh/db/host/1")
	if resp.Status != 500 || strings.TrimSpace(string(resp.Body)) != `{"error":"internal error","code":"internal"}` {
		t.Fatalf("%d %s", resp.Status, resp.Body)
	}
	id := resp.Header.Get("X-Request-Id")
	if !strings.Contains(logs.String(), `"msg":"internal error","request_id":"`+id+`"`) {
		t.Fatalf("internal error not logged with request id %s:\n%s", id, logs)
	}
	if strings.Contains(logs.String(), "hunter2-canary") {
		t.Fatal("log holds the password")
	}
}

// TestCredentialsNeverStoredOrLoggedInPlaintext writes credentials through
// every write route, then searches every file of the data directory and
// every log line for them.
func TestCredentialsNeverStoredOrLoggedInPlaintext(t *testing.T) {
	e := newEnv(t)
	passphrase := "canary-passphrase-8c1d"
	key := newKey(t, passphrase)
	secrets := []string{"canary-password-5e2f", passphrase, keyBody(key), "canary-password-7a9b"}
	e.createHost(e.alice, map[string]any{"password": secrets[0]})
	e.sendMultipart("POST", e.alice, "/ssh/db/host", `{"ip":"h","username":"u","keyPassword":"`+passphrase+`"}`, []byte(key))
	e.sendJSON("PUT", e.alice, "/ssh/db/host/1", map[string]any{"ip": "h", "username": "u", "password": secrets[3]})
	e.sendJSON("PUT", e.alice, "/ssh/db/host/1", map[string]any{"ip": "h", "username": "u", "port": "bad", "password": secrets[3]})
	e.get(e.alice, "/ssh/db/host")
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	searched := 0
	err := filepath.WalkDir(e.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		searched++
		for _, s := range secrets {
			if strings.Contains(string(data), s) {
				t.Errorf("%s holds a credential in plaintext", filepath.Base(path))
			}
		}
		return nil
	})
	if err != nil || searched < 2 {
		t.Fatalf("searched %d files of the data directory (want the store and the key file): %v", searched, err)
	}
	for _, s := range append(secrets, e.alice) {
		if strings.Contains(e.logs.String(), s) {
			t.Errorf("the log holds a secret")
		}
	}
}

// keyBody is the first base64 line of a PEM key, a run of it that any
// plaintext copy would hold.
func keyBody(pemKey string) string { return strings.Split(pemKey, "\n")[1] }
