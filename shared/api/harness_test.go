package api_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/internal/logbuf"
	"github.com/sshdeck/sshdeck/internal/openapitest"
	"github.com/sshdeck/sshdeck/internal/upstreamtest"
	"github.com/sshdeck/sshdeck/shared/accounts"
	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/files"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/releases"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/shared/upstream"
	"github.com/sshdeck/sshdeck/shared/web"
)

// env is a server over a real embedded store in a temporary directory, with
// two users (alice and bob), an admin (root) and their tokens, a GitHub and
// a remote alerts list on loopback, and one clock. Every response it returns
// has been checked against openapi.yaml.
type env struct {
	t     testing.TB
	dir   string
	store *embedded.Store
	admin *auth.Admin
	authn *auth.Authenticator
	// hostsService and accounts are services behind handler (accounts
	// with its default LoginTTL).
	hostsService *hosts.Service
	accounts     *accounts.Service
	// limits are the services' (setLimits); config.DefaultLimits at first.
	limits  config.Limits
	handler http.Handler
	logs    *logbuf.Buffer
	spec    *openapitest.Validator
	alice   string // bearer tokens
	bob     string
	root    string
	github  *upstreamtest.GitHub
	remote  *upstreamtest.Alerts
	// now is the clock of every service; tests move it, never sleep.
	mu  sync.Mutex
	now time.Time
}

func (e *env) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

// advance moves the clock on.
func (e *env) advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = e.now.Add(d)
}

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "sshdeck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	keyring, err := secret.LoadOrCreateKeyFile(filepath.Join(dir, "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, store: store, logs: &logbuf.Buffer{}, now: time.Now(), limits: config.DefaultLimits}
	authn := auth.NewAuthenticator(store, store, e.clock)
	e.authn = authn
	e.admin = auth.NewAdmin(store, authn, e.clock)
	sealer := secret.NewSealer(keyring)
	e.hostsService = hosts.NewService(store, store, sealer, nil)
	e.accounts = accounts.NewService(store, e.admin, sealer, e.clock)
	e.github = upstreamtest.StartGitHub(t)
	e.remote = upstreamtest.StartAlerts(t)
	e.handler = e.server().Router()
	e.spec = openapitest.Load(t, "../../openapi.yaml")
	e.alice = e.user("alice", false)
	e.bob = e.user("bob", false)
	e.root = e.user("root", true)
	return e
}

// server returns a new API server over the env's store, as another process
// or function instance would run: only the store is shared.
func (e *env) server() *api.Server {
	e.t.Helper()
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	github, err := upstream.NewGitHub(upstream.GitHubConfig{BaseURL: e.github.URL, Repo: "acme/deck", Now: e.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	list, err := upstream.NewAlertsList(e.remote.URL, time.Second, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	fileService := files.NewService(e.store, e.clock)
	fileService.Limits = e.limits
	return api.New(api.Config{
		Accounts:      e.accounts,
		Hosts:         e.hostsService,
		Files:         fileService,
		Alerts:        alerts.NewService(e.store, upstream.NewRemoteAlerts(list, log, e.clock), e.clock),
		Releases:      releases.NewService(github, e.store, log, e.clock),
		Ping:          e.store.Ping,
		Authenticator: e.authn,
		Audit:         &audit.Recorder{Store: e.store, Now: e.clock, Log: log},
		Logger:        log,
	})
}

// setLimits gives the services other limits than the defaults.
func (e *env) setLimits(l config.Limits) {
	e.limits = l
	e.hostsService.Limits = l
	e.handler = e.server().Router()
}

func (e *env) user(name string, admin bool) string {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.admin.AddUser(ctx, name, admin); err != nil {
		e.t.Fatal(err)
	}
	token, _, err := e.admin.CreateToken(ctx, name, "test", 30*24*time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	return token
}

// setPassword gives the named user a password (the users of newEnv have
// none), as `sshdeck user passwd` does.
func (e *env) setPassword(name, password string) {
	e.t.Helper()
	if _, err := e.accounts.SetPassword(context.Background(), name, password); err != nil {
		e.t.Fatal(err)
	}
}

// response is a recorded response with its body decoded where it is JSON.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
}

func (r *response) host(t testing.TB) hosts.Record {
	t.Helper()
	var h hosts.Record
	r.json(t, &h)
	return h
}

func (r *response) errorCode(t testing.TB) string {
	t.Helper()
	var body web.ErrorBody
	r.json(t, &body)
	return string(body.Code)
}

// request is one call to the API.
type request struct {
	method, path string
	token        string
	contentType  string
	body         []byte
	header       map[string]string
}

func (e *env) do(req request) *response {
	e.t.Helper()
	httpReq := httptest.NewRequest(req.method, req.path, bytes.NewReader(req.body))
	if req.token != "" {
		httpReq.Header.Set("Authorization", "Bearer "+req.token)
	}
	if req.contentType != "" {
		httpReq.Header.Set("Content-Type", req.contentType)
	}
	for k, v := range req.header {
		httpReq.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, httpReq)
	resp := &response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	check := httptest.NewRequest(req.method, req.path, bytes.NewReader(req.body))
	check.Header = httpReq.Header.Clone()
	e.spec.Check(e.t, check, resp.Status, resp.Header, resp.Body)
	if resp.Header.Get("X-Request-Id") == "" {
		e.t.Errorf("%s %s: no X-Request-Id", req.method, req.path)
	}
	return resp
}

// getJSON, sendJSON and sendMultipart are the common shapes of do.
func (e *env) get(token, path string) *response {
	e.t.Helper()
	return e.do(request{method: "GET", path: path, token: token})
}

func (e *env) sendJSON(method, token, path string, body any, header ...string) *response {
	e.t.Helper()
	raw, ok := body.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			e.t.Fatal(err)
		}
	}
	return e.do(request{method: method, path: path, token: token, contentType: "application/json", body: raw, header: pairs(header)})
}

func (e *env) sendMultipart(method, token, path, data string, key []byte, header ...string) *response {
	e.t.Helper()
	ct, body := multipartBody(e.t, data, key)
	return e.do(request{method: method, path: path, token: token, contentType: ct, body: body, header: pairs(header)})
}

func pairs(kv []string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// multipartBody builds a body with a "data" field (omitted when data is "-")
// and a "key" file part (omitted when key is nil).
func multipartBody(t testing.TB, data string, key []byte) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if data != "-" {
		w.WriteField("data", data)
	}
	if key != nil {
		fw, err := w.CreateFormFile("key", "id_ed25519")
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(key)
	}
	w.Close()
	return w.FormDataContentType(), buf.Bytes()
}

// newKey returns a new ed25519 private key in OpenSSH PEM form, encrypted
// with passphrase when it is not empty.
func newKey(t testing.TB, passphrase string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block))
}

// createHost creates a host for the token's user and returns it.
func (e *env) createHost(token string, fields map[string]any) hosts.Record {
	e.t.Helper()
	body := map[string]any{"ip": "10.0.0.5", "username": "deploy"}
	for k, v := range fields {
		body[k] = v
	}
	resp := e.sendJSON("POST", token, "/ssh/db/host", body)
	if resp.Status != http.StatusCreated {
		e.t.Fatalf("create host: %d %s", resp.Status, resp.Body)
	}
	return resp.host(e.t)
}
