package tunnelapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/internal/logbuf"
	"github.com/sshdeck/sshdeck/internal/openapitest"
	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
	"github.com/sshdeck/sshdeck/shared/web"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// The tests of the tunnel service's HTTP API (api.go, stream.go): every
// request goes through httptest.NewServer(New(...)) with a real
// authenticator over the embedded store, every response is checked against
// openapi.yaml, and no response body, stream or log line may hold a
// password, a passphrase or a private key that a request sent. Only the
// tests that need an SSH server to answer use a tunneltest.World.

const apiDocument = "../../openapi.yaml"

// apiEnv is the tunnel API of one replica over a store, with three users.
type apiEnv struct {
	t       *testing.T
	store   *embedded.Store
	sealer  *secret.Sealer
	manager *tunnel.Manager
	admin   *auth.Admin
	url     string
	client  *http.Client
	spec    *openapitest.Validator
	logs    *logbuf.Buffer

	alice, bob, carol       string // bearer tokens
	aliceID, bobID, carolID string // user ids: the owners of their tunnels

	mu      sync.Mutex
	secrets []string // what no body, stream, log line or stored byte may hold
	bodies  [][]byte // every body received
}

// apiSetup is what an apiEnv may be given instead of its defaults.
type apiSetup struct {
	world *tunneltest.World // its store and sealer instead of new ones
	deny  []netip.Prefix
	ping  func(context.Context) error
	// options changes the Manager's options; wrap the store it is given.
	options func(*tunnel.Options)
	wrap    func(sshdeck.TunnelStore) sshdeck.TunnelStore
	// streamRecheck and streamMaxAge are the API's (Config).
	streamRecheck, streamMaxAge time.Duration
}

func newAPIEnv(t *testing.T, setup apiSetup) *apiEnv {
	t.Helper()
	e := &apiEnv{t: t, logs: &logbuf.Buffer{}}
	storePath := ""
	if setup.world != nil {
		e.store, e.sealer = setup.world.Store, setup.world.Sealer
	} else {
		dir := t.TempDir()
		storePath = filepath.Join(dir, "sshdeck.db")
		store, err := embedded.Open(storePath)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		keyring, err := secret.LoadOrCreateKeyFile(filepath.Join(dir, "secret.key"))
		if err != nil {
			t.Fatal(err)
		}
		e.store, e.sealer = store, secret.NewSealer(keyring)
	}
	// Registered before the manager's and the server's cleanups, so it runs
	// after them: their last log lines are in, the store still open.
	t.Cleanup(func() { e.checkNoSecrets(storePath) })

	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := tunneltest.Options("api-test")
	opts.Deny, opts.Log = setup.deny, log
	if setup.options != nil {
		setup.options(&opts)
	}
	var store sshdeck.TunnelStore = e.store
	if setup.wrap != nil {
		store = setup.wrap(store)
	}
	e.manager = tunnel.NewManager(store, e.sealer, opts)
	e.manager.Start()
	t.Cleanup(func() { e.manager.Shutdown(context.Background()) })

	authn := auth.NewAuthenticator(e.store, e.store, nil)
	e.admin = auth.NewAdmin(e.store, authn, nil)
	ping := setup.ping
	if ping == nil {
		ping = e.store.Ping
	}
	srv := httptest.NewServer(New(Config{
		Manager: e.manager, Authenticator: authn, Ping: ping, Logger: log,
		Audit:         &audit.Recorder{Store: e.store, Log: log},
		StreamRecheck: setup.streamRecheck, StreamMaxAge: setup.streamMaxAge,
	}))
	t.Cleanup(srv.Close)
	e.url, e.client = srv.URL, srv.Client()
	e.spec = openapitest.Load(t, apiDocument)
	e.alice, e.aliceID = e.user("alice")
	e.bob, e.bobID = e.user("bob")
	e.carol, e.carolID = e.user("carol")
	return e
}

func (e *apiEnv) user(name string) (token, id string) {
	e.t.Helper()
	ctx := context.Background()
	u, err := e.admin.AddUser(ctx, name, false)
	if err != nil {
		e.t.Fatal(err)
	}
	token, _, err = e.admin.CreateToken(ctx, name, "test", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return token, u.ID
}

// secret returns s, remembered as a secret.
func (e *apiEnv) secret(s string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.secrets = append(e.secrets, s)
	return s
}

// newPassword returns a new random password, remembered as a secret.
func (e *apiEnv) newPassword(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return e.secret(prefix + "-" + hex.EncodeToString(b))
}

// newKey returns a new private key (encrypted with passphrase unless it is
// empty), remembered as a secret with its passphrase, and its public key.
func (e *apiEnv) newKey(passphrase string) (string, ssh.PublicKey) {
	key, pub := sshdtest.NewKey(e.t, passphrase)
	if passphrase != "" {
		e.secret(passphrase)
	}
	return e.secret(key), pub
}

// secretParts are the strings that must not show anywhere: the secret, and
// each base64 line of a PEM key (a key may show up re-wrapped or escaped,
// its lines not).
func secretParts(s string) []string {
	if !strings.Contains(s, "-----BEGIN") {
		return []string{s}
	}
	var parts []string
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			parts = append(parts, line)
		}
	}
	return parts
}

// checkNoSecrets fails the test if a secret shows in a body, a stream, a
// log line, or the store's file (which holds sealed credentials only).
func (e *apiEnv) checkNoSecrets(storePath string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	places := map[string][]byte{"the log": []byte(e.logs.String())}
	for i, b := range e.bodies {
		places["response body "+strconv.Itoa(i)] = b
	}
	if storePath != "" {
		if b, err := os.ReadFile(storePath); err == nil {
			places["the store's file"] = b
		} else {
			e.t.Errorf("reading the store's file: %v", err)
		}
	}
	for _, s := range e.secrets {
		for _, part := range secretParts(s) {
			for where, b := range places {
				if bytes.Contains(b, []byte(part)) {
					e.t.Errorf("a secret sent to the API (%.12q…) shows in %s", part, where)
				}
			}
		}
	}
}

// apiResponse is a response, read whole.
type apiResponse struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request to the API (path as it goes on the wire, escaped),
// checks the response against openapi.yaml and returns it.
func (e *apiEnv) do(method, path, token, contentType string, body []byte, header ...string) *apiResponse {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	r := &apiResponse{status: resp.StatusCode, header: resp.Header, body: b}
	e.record(b)
	e.spec.Check(e.t, httptest.NewRequest(method, path, nil), r.status, r.header, r.body)
	if r.header.Get("X-Request-Id") == "" {
		e.t.Errorf("%s %s: no X-Request-Id", method, path)
	}
	return r
}

func (e *apiEnv) record(b []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.bodies = append(e.bodies, bytes.Clone(b))
}

// send sends body as JSON: a []byte or string as it is, anything else
// marshalled.
func (e *apiEnv) send(method, path, token string, body any) *apiResponse {
	e.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(body); err != nil {
			e.t.Fatal(err)
		}
	}
	return e.do(method, path, token, "application/json", raw)
}

func (e *apiEnv) get(path, token string) *apiResponse {
	e.t.Helper()
	return e.do("GET", path, token, "", nil)
}

// apiStatusPath is the address of a tunnel's status.
func apiStatusPath(name string) string { return "/ssh/tunnel/status/" + url.PathEscape(name) }

// connect connects a tunnel and fails the test unless it is accepted.
func (e *apiEnv) connect(token string, body map[string]any) {
	e.t.Helper()
	r := e.send("POST", "/ssh/tunnel/connect", token, body)
	if r.status != http.StatusOK || string(r.body) != `{"message":"Connection request received"}`+"\n" {
		e.t.Fatalf("connect %v: %d %s", body["name"], r.status, r.body)
	}
}

// status returns a tunnel's status through the API; the test fails unless
// it is 200.
func (e *apiEnv) status(token, name string) tunnel.Status {
	e.t.Helper()
	r := e.get(apiStatusPath(name), token)
	if r.status != http.StatusOK {
		e.t.Fatalf("status of %q: %d %s", name, r.status, r.body)
	}
	var st tunnel.Status
	r.decode(e.t, &st)
	return st
}

// waitStatus polls a tunnel's status through the API until ok, failing
// after sshdtest.WaitPatience (a protocol wait, as waitFor's).
func (e *apiEnv) waitStatus(token, name, what string, ok func(tunnel.Status) bool) tunnel.Status {
	e.t.Helper()
	deadline := time.Now().Add(sshdtest.WaitPatience)
	var last tunnel.Status
	for time.Now().Before(deadline) {
		if last = e.status(token, name); ok(last) {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("tunnel %q never became %s; last status %+v", name, what, last)
	return last
}

// statuses returns the caller's status map through the API.
func (e *apiEnv) statuses(token string) map[string]tunnel.Status {
	e.t.Helper()
	r := e.get("/ssh/tunnel/status", token)
	if r.status != http.StatusOK {
		e.t.Fatalf("statuses: %d %s", r.status, r.body)
	}
	var all map[string]tunnel.Status
	r.decode(e.t, &all)
	return all
}

func (r *apiResponse) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
}

func (r *apiResponse) errorBody(t testing.TB) web.ErrorBody {
	t.Helper()
	var body web.ErrorBody
	r.decode(t, &body)
	return body
}

// wantError fails the test unless r is an error of the status and code
// whose sentence holds each of words.
func (r *apiResponse) wantError(t testing.TB, status int, code sshdeck.Code, words ...string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status %d, want %d; body %s", r.status, status, r.body)
		return
	}
	body := r.errorBody(t)
	if body.Code != code {
		t.Errorf("code %q, want %q; body %s", body.Code, code, r.body)
	}
	for _, w := range words {
		if !strings.Contains(body.Error, w) {
			t.Errorf("error %q does not name %q", body.Error, w)
		}
	}
}

// requestLine returns the request log line of the request with the id,
// polling for it: the line is written once the handler has returned, which
// may be after the client has the response.
func (e *apiEnv) requestLine(id string) map[string]any {
	e.t.Helper()
	// The handler's return, in this process: a minute is far beyond it.
	deadline := time.Now().Add(time.Minute)
	for {
		for line := range strings.Lines(e.logs.String()) {
			var entry map[string]any
			if json.Unmarshal([]byte(line), &entry) == nil && entry["msg"] == "request" && entry["request_id"] == id {
				return entry
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no request log line for request %s", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tunnelBody is a connect request that passes every check, over hosts on
// 127.0.0.1 whose SSH ports nobody listens on: the tunnel fails with a
// network error. Its passwords are secrets.
func (e *apiEnv) tunnelBody(name string) map[string]any {
	return map[string]any{
		"name":             name,
		"hostName":         "web-1",
		"sourceIP":         "127.0.0.1",
		"sourceSSHPort":    sshdtest.FreePort(e.t),
		"sourceUsername":   "deploy",
		"sourcePassword":   e.newPassword("source"),
		"endpointIP":       "127.0.0.1",
		"endpointSSHPort":  sshdtest.FreePort(e.t),
		"endpointUsername": "deploy",
		"endpointPassword": e.newPassword("endpoint"),
		"sourcePort":       8080,
		"endpointPort":     9090,
		"maxRetries":       0,
		"retryInterval":    100,
	}
}

// worldTunnelBody is a tunnel through the real hosts of w, as root with
// its key, both host keys pinned, from its echo service to endpointPort.
func worldTunnelBody(w *tunneltest.World, name string, endpointPort int) map[string]any {
	return map[string]any{
		"name":             name,
		"sourceIP":         "127.0.0.1",
		"sourceSSHPort":    w.Source.Port,
		"sourceUsername":   "root",
		"sourceSSHKey":     w.Key,
		"sourceHostKey":    ssh.FingerprintSHA256(w.Source.HostKey),
		"endpointIP":       "127.0.0.1",
		"endpointSSHPort":  w.Endpoint.Port,
		"endpointUsername": "root",
		"endpointSSHKey":   w.Key,
		"endpointHostKey":  string(ssh.MarshalAuthorizedKey(w.Endpoint.HostKey)),
		"sourcePort":       w.EchoPort,
		"endpointPort":     endpointPort,
		"maxRetries":       3,
		"retryInterval":    100,
	}
}

// withFields returns a copy of body with the given fields set (name, value
// pairs); the value fieldAbsent removes the field.
func withFields(body map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(body))
	for k, v := range body {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if _, ok := kv[i+1].(fieldAbsentType); ok {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// fieldAbsent, given to withFields, removes the field.
type fieldAbsentType struct{}

var fieldAbsent fieldAbsentType

func TestAPIRoutesAreTheDocumentsTunnelOperations(t *testing.T) {
	spec := openapitest.Load(t, apiDocument)
	doc := spec.Doc()
	documented := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Extensions["x-sshdeck-service"] != "tunnel" && item.Extensions["x-sshdeck-service"] != "tunnel" {
				continue
			}
			documented[method+" "+path] = op.OperationID
			if len(item.Servers) == 0 {
				t.Errorf("%s %s: no path-level servers (tunnel_url)", method, path)
			}
			for _, s := range item.Servers {
				if strings.Contains(s.URL, "{") && s.Variables["tunnel_url"] == nil {
					t.Errorf("%s %s: server %q has no tunnel_url variable", method, path, s.URL)
				}
			}
			if op.Security != nil && len(*op.Security) == 0 {
				t.Errorf("%s %s: a tunnel operation must need a bearer token", method, path)
			}
			if op.Responses.Status(http.StatusUnauthorized) == nil {
				t.Errorf("%s %s: no 401 response", method, path)
			}
		}
	}
	served := map[string]string{}
	for _, rt := range routes.Tunnel {
		if rt.Public {
			continue // /healthz, checked with the base_url's
		}
		// The handler's {name...} takes the rest of the path; the
		// document's {name} is one (escaped) segment.
		served[rt.Method+" "+strings.Replace(rt.Path, "...}", "}", 1)] = rt.Name
	}
	for key, name := range served {
		if id, ok := documented[key]; !ok {
			t.Errorf("route %s (%s) is not in openapi.yaml as a tunnel operation", key, name)
		} else if id != name {
			t.Errorf("%s: operationId %q, want the route's name %q", key, id, name)
		}
	}
	for key, id := range documented {
		if _, ok := served[key]; !ok {
			t.Errorf("openapi.yaml has tunnel operation %s (%s) that New does not serve", key, id)
		}
	}
	if op := doc.Paths.Find("/healthz"); op == nil || op.Get == nil {
		t.Error("openapi.yaml has no GET /healthz, which the tunnel service serves too")
	}

	// And the handler does route each documented path to the route of
	// that name, as its request log says.
	e := newAPIEnv(t, apiSetup{})
	probes := map[string]string{"GET /healthz": "tunnel-healthz"}
	for key, id := range documented {
		probes[key] = id
	}
	for key, id := range probes {
		method, path, _ := strings.Cut(key, " ")
		path = strings.ReplaceAll(path, "{name}", "probe")
		r := e.do(method, path, "", "", nil)
		line := e.requestLine(r.header.Get("X-Request-Id"))
		if line["route"] != id {
			t.Errorf("%s %s was served by route %v, want %s", method, path, line["route"], id)
		}
	}
}

// checkAPISchema fails the test unless v, as JSON, is valid against the
// document's schema of that name.
func checkAPISchema(t *testing.T, spec *openapitest.Validator, name string, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var value any
	json.Unmarshal(raw, &value)
	schema := spec.Doc().Components.Schemas[name]
	if schema == nil {
		t.Fatalf("openapi.yaml has no schema %s", name)
	}
	if err := schema.Value.VisitJSON(value, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		t.Errorf("a request the server accepts is not a valid %s: %v", name, err)
	}
}

// TestAPISchemasAreTheTypes: the document's ConnectRequest, NameRequest and
// TunnelStatus have the JSON fields of the Go types, and the limits and
// defaults of the engine's connect request (tunnel/request.go).
func TestAPISchemasAreTheTypes(t *testing.T) {
	schemas := openapitest.Load(t, apiDocument).Doc().Components.Schemas
	for _, tc := range []struct {
		schema      string
		v           any
		allRequired bool
	}{
		{"ConnectRequest", tunnel.ConnectRequest{}, false},
		{"NameRequest", NameRequest{}, false},
		{"TunnelStatus", tunnel.Status{}, true},
		{"Message", Message{}, true},
	} {
		s := schemas[tc.schema]
		if s == nil {
			t.Errorf("openapi.yaml has no schema %s", tc.schema)
			continue
		}
		var fields []string
		typ := reflect.TypeOf(tc.v)
		for i := range typ.NumField() {
			if !typ.Field(i).IsExported() {
				continue // not in JSON
			}
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "-" {
				continue // not in JSON: ConnectRequest.Jumps, which the service fills
			}
			fields = append(fields, name)
		}
		var documented []string
		for name := range s.Value.Properties {
			documented = append(documented, name)
		}
		slices.Sort(fields)
		slices.Sort(documented)
		if !slices.Equal(fields, documented) {
			t.Errorf("schema %s has properties %q; %T has fields %q", tc.schema, documented, tc.v, fields)
		}
		if required := slices.Sorted(slices.Values(s.Value.Required)); tc.allRequired && !slices.Equal(required, fields) {
			t.Errorf("schema %s requires %q, want every field", tc.schema, required)
		}
	}

	req := schemas["ConnectRequest"].Value
	if want := []string{"name"}; !slices.Equal(req.Required, want) {
		t.Errorf("ConnectRequest requires %q, want %q", req.Required, want)
	}
	// A body is a host tunnel's name alone, or a tunnel: its ports and
	// each side, by its host's id or its address and user name.
	if len(req.AnyOf) != 2 {
		t.Fatalf("ConnectRequest has %d alternatives, want 2 (a name alone, a tunnel)", len(req.AnyOf))
	}
	if alone := req.AnyOf[0].Value; alone.MaxProps == nil || *alone.MaxProps != 1 {
		t.Errorf("ConnectRequest's first alternative is not the name alone (maxProperties 1)")
	}
	tun := req.AnyOf[1].Value
	if want := []string{"endpointPort", "sourcePort"}; !slices.Equal(slices.Sorted(slices.Values(tun.Required)), want) {
		t.Errorf("a tunnel's body requires %q, want %q", tun.Required, want)
	}
	var sides [][][]string
	for _, s := range tun.AllOf {
		var alternatives [][]string
		for _, alt := range s.Value.AnyOf {
			alternatives = append(alternatives, alt.Value.Required)
		}
		sides = append(sides, alternatives)
	}
	if want := [][][]string{
		{{"sourceHostId"}, {"sourceIP", "sourceUsername"}},
		{{"endpointHostId"}, {"endpointIP", "endpointUsername"}},
	}; !reflect.DeepEqual(sides, want) {
		t.Errorf("ConnectRequest's sides require %q, want %q", sides, want)
	}
	prop := func(name string) *openapi3.Schema {
		if p := req.Properties[name]; p != nil && p.Value != nil {
			return p.Value
		}
		t.Errorf("ConnectRequest has no property %s", name)
		return &openapi3.Schema{}
	}
	num := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	for _, tc := range []struct {
		what      string
		got, want any
	}{
		{"name maxLength", prop("name").MaxLength != nil && *prop("name").MaxLength == tunnel.MaxNameLen, true},
		{"maxRetries default", prop("maxRetries").Default, float64(sshdeck.DefaultTunnelRetries)},
		{"maxRetries maximum", num(prop("maxRetries").Max), float64(sshdeck.MaxTunnelRetries)},
		{"retryInterval default", prop("retryInterval").Default, float64(sshdeck.DefaultTunnelRetryInterval / time.Millisecond)},
		// A smaller value is raised, not refused: no minimum, but said.
		{"retryInterval minimum", num(prop("retryInterval").Min), float64(-1)},
		{"retryInterval raised", strings.Contains(prop("retryInterval").Description, "raised to "+strconv.Itoa(tunnel.MinRetryInterval)), true},
		{"retryInterval maximum", num(prop("retryInterval").Max), float64(sshdeck.MaxTunnelRetryInterval / time.Millisecond)},
		{"sourceSSHPort default", prop("sourceSSHPort").Default, float64(sshdeck.DefaultSSHPort)},
		{"endpointSSHPort default", prop("endpointSSHPort").Default, float64(sshdeck.DefaultSSHPort)},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("ConnectRequest %s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	var enum []string
	for _, v := range schemas["TunnelErrorType"].Value.Enum {
		enum = append(enum, v.(string))
	}
	errorTypes := []sshdeck.TunnelError{sshdeck.TunnelErrAuthentication, sshdeck.TunnelErrHostKey, sshdeck.TunnelErrNetwork,
		sshdeck.TunnelErrTimeout, sshdeck.TunnelErrPortConflict, sshdeck.TunnelErrForbidden, sshdeck.TunnelErrUnknown}
	for _, et := range errorTypes {
		if !slices.Contains(enum, string(et)) {
			t.Errorf("TunnelErrorType has no %q", et)
		}
	}
	if len(enum) != len(errorTypes) {
		t.Errorf("TunnelErrorType is %q, want the %d of sshdeck", enum, len(errorTypes))
	}
}

// tunnelRequests are one request of each tunnel operation.
var tunnelRequests = []struct{ method, path, body string }{
	{"POST", "/ssh/tunnel/connect", `{}`},
	{"GET", "/ssh/tunnel/status", ""},
	{"GET", "/ssh/tunnel/status/web", ""},
	{"GET", "/ssh/tunnel/status/stream", ""},
	{"POST", "/ssh/tunnel/disconnect", `{"tunnelName":"web"}`},
	{"POST", "/ssh/tunnel/cancel", `{"tunnelName":"web"}`},
}

func TestAPIUnauthorized(t *testing.T) {
	e := newAPIEnv(t, apiSetup{})
	ctx := context.Background()
	unknown, _ := auth.NewToken()
	revoked, tok, err := e.admin.CreateToken(ctx, "alice", "revoked", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Used once, so that the authenticator has it cached when revoked.
	if r := e.get("/ssh/tunnel/status", revoked); r.status != http.StatusOK {
		t.Fatalf("a fresh token: %d %s", r.status, r.body)
	}
	if _, err := e.admin.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	for _, authz := range []struct{ name, header string }{
		{"missing", ""},
		{"empty bearer", "Bearer "},
		{"malformed", "Bearer not-a-token"},
		{"not bearer", "Basic YWxpY2U6c2VjcmV0"},
		{"unknown", "Bearer " + unknown},
		{"revoked", "Bearer " + revoked},
	} {
		for _, req := range tunnelRequests {
			t.Run(authz.name+" "+req.method+" "+req.path, func(t *testing.T) {
				var header []string
				if authz.header != "" {
					header = []string{"Authorization", authz.header}
				}
				r := e.do(req.method, req.path, "", "application/json", []byte(req.body), header...)
				r.wantError(t, http.StatusUnauthorized, sshdeck.Unauthorized)
				if got := r.header.Get("WWW-Authenticate"); got != "Bearer" {
					t.Errorf("WWW-Authenticate %q, want Bearer", got)
				}
			})
		}
	}
}

func TestAPIUnknownPathsAndMethods(t *testing.T) {
	e := newAPIEnv(t, apiSetup{})
	for _, path := range []string{"/nope", "/ssh/tunnels", "/ssh/tunnels/x"} {
		e.get(path, e.alice).wantError(t, http.StatusNotFound, sshdeck.NotFound)
		e.get(path, "").wantError(t, http.StatusNotFound, sshdeck.NotFound)
	}
	// An empty name is no tunnel's.
	e.get("/ssh/tunnel/status/", e.alice).wantError(t, http.StatusNotFound, sshdeck.NotFound)

	for _, tc := range []struct {
		method, path string
		allow        []string
	}{
		// Every path under /ssh/tunnel/ names a tunnel to DELETE (the
		// rest of the path is its name, as for status/{name}).
		{"GET", "/ssh/tunnel/connect", []string{"POST", "DELETE"}},
		{"POST", "/ssh/tunnel/status", []string{"GET", "DELETE"}},
		{"PUT", "/ssh/tunnel/status/web", []string{"GET", "DELETE"}},
		{"POST", "/ssh/tunnel/status/stream", []string{"GET", "DELETE"}},
		{"GET", "/ssh/tunnel/disconnect", []string{"POST", "DELETE"}},
		{"PATCH", "/ssh/tunnel/cancel", []string{"POST", "DELETE"}},
		{"GET", "/ssh/tunnel/web", []string{"DELETE"}},
		{"POST", "/healthz", []string{"GET"}},
	} {
		r := e.do(tc.method, tc.path, e.alice, "application/json", []byte(`{}`))
		r.wantError(t, http.StatusMethodNotAllowed, sshdeck.MethodNotAllowed)
		if got := r.header.Values("Allow"); !slices.Equal(got, tc.allow) {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
}

func TestAPIHealth(t *testing.T) {
	e := newAPIEnv(t, apiSetup{})
	r := e.get("/healthz", "")
	if r.status != http.StatusOK || string(r.body) != `{"status":"ok","store":"ok"}`+"\n" {
		t.Errorf("healthz: %d %s", r.status, r.body)
	}
	if r := e.do("HEAD", "/healthz", "", "", nil); r.status != http.StatusOK || len(r.body) != 0 {
		t.Errorf("HEAD healthz: %d %q", r.status, r.body)
	}
	// HEAD of the stream: its headers, and the handler is done (its
	// request log line is written) rather than streaming to nobody.
	r = e.do("HEAD", "/ssh/tunnel/status/stream", e.alice, "", nil)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("HEAD status stream: %d %v", r.status, r.header)
	}
	if line := e.requestLine(r.header.Get("X-Request-Id")); line["route"] != "tunnel-status-stream" {
		t.Errorf("HEAD status stream logged as %v", line)
	}

	down := newAPIEnv(t, apiSetup{ping: func(context.Context) error { return errors.New("the disk is on fire") }})
	r = down.get("/healthz", "")
	if r.status != http.StatusServiceUnavailable || string(r.body) != `{"status":"unavailable","store":"store does not answer"}`+"\n" {
		t.Errorf("healthz with a store that does not answer: %d %s", r.status, r.body)
	}
}

func TestAPIConnectRejectsBadRequests(t *testing.T) {
	e := newAPIEnv(t, apiSetup{})
	ok := e.tunnelBody("bad")
	key, _ := e.newKey("")
	encrypted, _ := e.newKey(e.newPassword("passphrase"))
	otherPub := func() string {
		_, pub := sshdtest.NewKey(t, "")
		return string(ssh.MarshalAuthorizedKey(pub))
	}()
	for _, tc := range []struct {
		name  string
		body  any // a map, or raw JSON
		field string
	}{
		{"no name", withFields(ok, "name", fieldAbsent), "name"},
		{"empty name", withFields(ok, "name", ""), "name"},
		{"null name", withFields(ok, "name", nil), "name"},
		{"name of 129 characters", withFields(ok, "name", strings.Repeat("n", 129)), "name"},
		{"name of 129 non-ASCII characters", withFields(ok, "name", strings.Repeat("é", 129)), "name"},
		{"name stream", withFields(ok, "name", "stream"), "name"},
		// No path can name them: GET /ssh/tunnel/status/.. is redirected.
		{"name ..", withFields(ok, "name", ".."), "name"},
		{"name .", withFields(ok, "name", "."), "name"},
		{"name with a control character", withFields(ok, "name", "a\x07b"), "name"},
		{"name with a newline", withFields(ok, "name", "a\nb"), "name"},
		{"name with DEL", withFields(ok, "name", "a\x7fb"), "name"},
		{"hostName with a control character", withFields(ok, "hostName", "web\x00"), "hostName"},
		{"hostName of 254 characters", withFields(ok, "hostName", strings.Repeat("h", 254)), "hostName"},
		{"no sourceIP", withFields(ok, "sourceIP", fieldAbsent), "sourceIP"},
		{"sourceIP with a space", withFields(ok, "sourceIP", "127.0.0.1 x"), "sourceIP"},
		{"no sourceUsername", withFields(ok, "sourceUsername", fieldAbsent), "sourceUsername"},
		{"sourceUsername with a newline", withFields(ok, "sourceUsername", "root\n"), "sourceUsername"},
		{"no endpointIP", withFields(ok, "endpointIP", ""), "endpointIP"},
		{"no endpointUsername", withFields(ok, "endpointUsername", fieldAbsent), "endpointUsername"},
		{"no ports", withFields(ok, "sourcePort", fieldAbsent, "endpointPort", fieldAbsent), "sourcePort"},
		{"no sourcePort", withFields(ok, "sourcePort", fieldAbsent), "sourcePort"},
		{"no endpointPort", withFields(ok, "endpointPort", nil), "endpointPort"},
		{"sourcePort 0", withFields(ok, "sourcePort", 0), "sourcePort"},
		{"endpointPort 65536", withFields(ok, "endpointPort", 65536), "endpointPort"},
		{"sourceSSHPort 0", withFields(ok, "sourceSSHPort", 0), "sourceSSHPort"},
		{"endpointSSHPort 65536", withFields(ok, "endpointSSHPort", 65536), "endpointSSHPort"},
		{"maxRetries 1001", withFields(ok, "maxRetries", 1001), "maxRetries"},
		{"maxRetries -1", withFields(ok, "maxRetries", -1), "maxRetries"},
		{"retryInterval 3600001 ms", withFields(ok, "retryInterval", 3600001), "retryInterval"},
		{"sourcePort a string", withFields(ok, "sourcePort", "22"), "sourcePort"},
		{"endpointSSHPort a string", withFields(ok, "endpointSSHPort", "22"), "endpointSSHPort"},
		{"maxRetries a fraction", withFields(ok, "maxRetries", 1.5), "maxRetries"},
		{"autoStart a string", withFields(ok, "autoStart", "yes"), "autoStart"},
		{"sourcePassword a number", withFields(ok, "sourcePassword", 1234), "sourcePassword"},
		{"sourceAuthMethod unknown", withFields(ok, "sourceAuthMethod", "token"), "sourceAuthMethod"},
		{"endpointAuthMethod none", withFields(ok, "endpointAuthMethod", "none"), "endpointAuthMethod"},
		{"password method without password", withFields(ok, "endpointAuthMethod", "password", "endpointPassword", fieldAbsent), "endpointPassword"},
		{"default method without password or key", withFields(ok, "sourcePassword", ""), "sourcePassword"},
		{"key method without key", withFields(ok, "sourceAuthMethod", "key"), "sourceSSHKey"},
		{"garbage key", withFields(ok, "sourceSSHKey", "-----BEGIN OPENSSH PRIVATE KEY-----\nbm9wZQ==\n-----END OPENSSH PRIVATE KEY-----\n"), "sourceSSHKey"},
		{"encrypted key without passphrase", withFields(ok, "endpointSSHKey", encrypted), "endpointKeyPassword"},
		{"encrypted key with the wrong passphrase", withFields(ok, "endpointSSHKey", encrypted, "endpointKeyPassword", e.newPassword("wrong")), "endpointKeyPassword"},
		{"keyType not the key's", withFields(ok, "sourceSSHKey", key, "sourceKeyType", "ssh-rsa"), "sourceKeyType"},
		{"keyType unknown", withFields(ok, "sourceSSHKey", key, "sourceKeyType", "ssh-foo"), "sourceKeyType"},
		{"keyType unknown with the password method", withFields(ok, "endpointKeyType", "bogus"), "endpointKeyType"},
		{"keyType empty", withFields(ok, "sourceKeyType", ""), "sourceKeyType"},
		{"fingerprint pin too short", withFields(ok, "sourceHostKey", "SHA256:abc"), "sourceHostKey"},
		{"fingerprint pin of MD5", withFields(ok, "sourceHostKey", "MD5:16:27:ac:a5:76:28:2d:36:63:1b:56:4d:eb:df:a6:48"), "sourceHostKey"},
		{"key pin not a key", withFields(ok, "endpointHostKey", "ssh-ed25519 bm9wZQ== root@web"), "endpointHostKey"},
		{"key pin a private key", withFields(ok, "endpointHostKey", key), "endpointHostKey"},
		{"sourcePassword over 4096 bytes", withFields(ok, "sourcePassword", strings.Repeat("p", 4097)), "sourcePassword"},
		{"sourceKeyPassword over 1024 bytes", withFields(ok, "sourceSSHKey", key, "sourceKeyPassword", strings.Repeat("p", 1025)), "sourceKeyPassword"},
		{"host key pin over 16 KiB", withFields(ok, "sourceHostKey", strings.Repeat(otherPub, 250)), "sourceHostKey"},
		{"not JSON", `{"name":`, "body"},
		{"not an object", `["name"]`, "body"},
		{"two objects", `{} {}`, "body"},
		{"empty body", ``, "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.send("POST", "/ssh/tunnel/connect", e.alice, tc.body)
			r.wantError(t, http.StatusBadRequest, sshdeck.Invalid, tc.field)
		})
	}

	t.Run("key over 64 KiB", func(t *testing.T) {
		big := e.secret(strings.Repeat("k", 65<<10))
		r := e.send("POST", "/ssh/tunnel/connect", e.alice, withFields(ok, "sourceSSHKey", big))
		r.wantError(t, http.StatusRequestEntityTooLarge, sshdeck.TooLarge, "sourceSSHKey")
		// Whatever the method: a password method does not make it fit.
		r = e.send("POST", "/ssh/tunnel/connect", e.alice, withFields(ok, "endpointSSHKey", big, "endpointAuthMethod", "password"))
		r.wantError(t, http.StatusRequestEntityTooLarge, sshdeck.TooLarge, "endpointSSHKey")
	})
	t.Run("body over 1 MiB", func(t *testing.T) {
		r := e.send("POST", "/ssh/tunnel/connect", e.alice, withFields(ok, "padding", strings.Repeat("x", 1<<20)))
		r.wantError(t, http.StatusRequestEntityTooLarge, sshdeck.TooLarge)
	})
	t.Run("not JSON content", func(t *testing.T) {
		raw, _ := json.Marshal(ok)
		e.do("POST", "/ssh/tunnel/connect", e.alice, "text/plain", raw).wantError(t, http.StatusUnsupportedMediaType, sshdeck.UnsupportedMediaType)
		e.do("POST", "/ssh/tunnel/connect", e.alice, "", raw).wantError(t, http.StatusUnsupportedMediaType, sshdeck.UnsupportedMediaType)
	})
	t.Run("default denied ranges", func(t *testing.T) {
		for _, tc := range []struct{ field, addr string }{
			{"sourceIP", "169.254.169.254"},
			{"endpointIP", "169.254.169.254"},
			{"sourceIP", "::ffff:169.254.169.254"},
			{"endpointIP", "fe80::1"},
		} {
			r := e.send("POST", "/ssh/tunnel/connect", e.alice, withFields(ok, tc.field, tc.addr))
			r.wantError(t, http.StatusBadRequest, sshdeck.Forbidden, tc.field, "denied")
		}
	})
	// Nothing above stored a tunnel.
	if all := e.statuses(e.alice); len(all) != 0 {
		t.Errorf("rejected requests stored tunnels: %v", all)
	}
}

func TestAPIConnectDeniesCustomRanges(t *testing.T) {
	deny := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	e := newAPIEnv(t, apiSetup{deny: deny})
	ok := e.tunnelBody("denied")
	for _, tc := range []struct{ field, addr string }{
		{"sourceIP", "192.0.2.7"},
		{"sourceIP", "127.0.0.1"},
		{"sourceIP", "::ffff:127.0.0.1"},
		{"sourceIP", "127.1"},
		// A name is resolved, and refused when any address of it is denied.
		{"sourceIP", "localhost"},
		// The ranges a deployment adds do not replace the ones always denied.
		{"sourceIP", "169.254.169.254"},
		{"endpointIP", "169.254.169.254"},
	} {
		// The other address is allowed (TEST-NET-2, never dialled).
		body := withFields(ok, "sourceIP", "198.51.100.2", "endpointIP", "198.51.100.1", tc.field, tc.addr)
		r := e.send("POST", "/ssh/tunnel/connect", e.alice, body)
		r.wantError(t, http.StatusBadRequest, sshdeck.Forbidden, tc.field, "denied")
	}
	if all := e.statuses(e.alice); len(all) != 0 {
		t.Errorf("denied requests stored tunnels: %v", all)
	}
	// The endpoint is dialled by the source, inside the source's network:
	// the deployment's ranges (its loopback, its VPC) say nothing there.
	for i, addr := range []string{"127.0.0.1", "192.0.2.7", "localhost", "::1"} {
		name := "endpoint-" + strconv.Itoa(i)
		e.connect(e.alice, withFields(e.tunnelBody(name), "sourceIP", "198.51.100.2", "endpointIP", addr, "maxRetries", 0))
	}
}

func TestAPIConnectAccepts(t *testing.T) {
	e := newAPIEnv(t, apiSetup{})
	key, pub := e.newKey("")
	passphrase := e.newPassword("passphrase")
	encrypted, _ := e.newKey(passphrase)
	fingerprint := ssh.FingerprintSHA256(pub)
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " root@endpoint"
	for _, tc := range []struct {
		name string
		body map[string]any
		want func(tunnel.Status) string // what is wrong with the status, or ""
	}{
		// Default SSH ports are 22: on TEST-NET addresses, which nothing
		// answers, so that no local sshd is dialled.
		{"defaults", map[string]any{
			"name": "minimal", "sourceIP": "192.0.2.1", "sourceUsername": "a", "sourcePassword": e.newPassword("pw"),
			"endpointIP": "192.0.2.2", "endpointUsername": "b", "endpointPassword": e.newPassword("pw"),
			"sourcePort": 1, "endpointPort": 65535,
		}, func(st tunnel.Status) string {
			if st.MaxRetries != 3 || st.HostName != "" || st.AutoStart || st.IsPinned || st.SourcePort != 1 || st.EndpointPort != 65535 {
				return "not the defaults"
			}
			return ""
		}},
		{"nulls are fieldAbsent", withFields(e.tunnelBody("nulls"), "sourceIP", "192.0.2.1", "maxRetries", nil, "retryInterval", nil, "sourceSSHPort", nil,
			"sourceKeyType", nil, "hostName", nil, "autoStart", nil), func(st tunnel.Status) string {
			if st.MaxRetries != 3 {
				return "maxRetries is not 3"
			}
			return ""
		}},
		{"keys and pins", withFields(e.tunnelBody("keys"),
			"sourceSSHKey", key, "sourceKeyType", "ssh-ed25519", "sourceHostKey", fingerprint,
			"endpointAuthMethod", "key", "endpointSSHKey", encrypted, "endpointKeyPassword", passphrase, "endpointHostKey", line,
			"isPinned", true, "maxRetries", 1000, "retryInterval", 3600000, "hostName", strings.Repeat("h", 253)), func(st tunnel.Status) string {
			if !st.IsPinned || st.MaxRetries != 1000 {
				return "isPinned or maxRetries lost"
			}
			return ""
		}},
		{"128 characters", e.tunnelBody(strings.Repeat("n", 128)), nil},
		{"128 non-ASCII characters", e.tunnelBody(strings.Repeat("é", 128)), nil},
		{"slash and unicode", e.tunnelBody("prod/web 東京 ünïcode"), nil},
		{"dots", e.tunnelBody("..."), nil},
		{"escapes", e.tunnelBody("a/../b/./c//100%25?#"), nil},
		{"unknown fields", withFields(e.tunnelBody("extra"), "owner", "usr_mallory", "createdAt", "yesterday", "color", "blue"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Contains(slices.Collect(maps.Values(tc.body)), any(nil)) {
				// The document describes what the server accepts; null,
				// accepted as fieldAbsent, is said in words only.
				checkAPISchema(t, e.spec, "ConnectRequest", tc.body)
			}
			e.connect(e.alice, tc.body)
			name := tc.body["name"].(string)
			st := e.status(e.alice, name)
			if st.Name != name {
				t.Errorf("status of %q has name %q", name, st.Name)
			}
			if tc.want != nil {
				if msg := tc.want(st); msg != "" {
					t.Errorf("%s: %+v", msg, st)
				}
			}
		})
	}

	// The defaults the status does not show.
	minimal, err := e.store.Tunnel(context.Background(), e.aliceID, "minimal")
	if err != nil {
		t.Fatal(err)
	}
	if sp := minimal.Spec; sp.Source.SSHPort != 22 || sp.Endpoint.SSHPort != 22 || sp.RetryInterval != 5*time.Second ||
		sp.Source.Auth != sshdeck.AuthPassword || sp.Source.KeyType != "auto" || sp.Endpoint.KeyType != "auto" {
		t.Errorf("defaults stored: %+v", sp)
	}

	// Each hop's method is stored as given; only its credentials are kept
	// (the engine's TestConnectKeepsTheMethodsCredentials opens them).
	both := withFields(e.tunnelBody("methods"), "sourceAuthMethod", "password", "sourceSSHKey", key,
		"endpointAuthMethod", "key", "endpointSSHKey", key)
	e.connect(e.alice, both)
	stored, err := e.store.Tunnel(context.Background(), e.aliceID, "methods")
	if err != nil {
		t.Fatal(err)
	}
	if stored.Spec.Source.Auth != sshdeck.AuthPassword || stored.Spec.Endpoint.Auth != sshdeck.AuthKey {
		t.Errorf("methods stored as %s and %s", stored.Spec.Source.Auth, stored.Spec.Endpoint.Auth)
	}
}

func TestAPIStatusesAreTheCallers(t *testing.T) {
	e := newAPIEnv(t, apiSetup{})
	slash, unicode := "team/web", "tünnel 東京"
	// Tunnels that keep running (retrying an hour apart), as well as ended
	// ones: both kinds are the owner's alone.
	running := func(body map[string]any) map[string]any {
		return withFields(body, "maxRetries", 1000, "retryInterval", 3600000)
	}
	for _, name := range []string{"shared", slash, unicode} {
		e.connect(e.alice, running(withFields(e.tunnelBody(name), "hostName", "alice-"+name)))
	}
	e.connect(e.bob, running(withFields(e.tunnelBody("shared"), "hostName", "bob-shared")))
	e.connect(e.bob, withFields(e.tunnelBody("only-bob"), "hostName", "bob-only-bob"))
	e.connect(e.bob, running(withFields(e.tunnelBody("bob-running"), "hostName", "bob-bob-running")))

	keys := func(m map[string]tunnel.Status) []string {
		var out []string
		for k, st := range m {
			if st.Name != k {
				t.Errorf("status map: %q holds the status of %q", k, st.Name)
			}
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	alice, bob := e.statuses(e.alice), e.statuses(e.bob)
	if got, want := keys(alice), []string{"shared", slash, unicode}; !slices.Equal(got, want) {
		t.Errorf("alice's tunnels: %q, want %q", got, want)
	}
	if got, want := keys(bob), []string{"bob-running", "only-bob", "shared"}; !slices.Equal(got, want) {
		t.Errorf("bob's tunnels: %q, want %q", got, want)
	}
	if alice["shared"].HostName != "alice-shared" || bob["shared"].HostName != "bob-shared" {
		t.Errorf("one name, two owners: alice sees %q, bob %q", alice["shared"].HostName, bob["shared"].HostName)
	}
	if r := e.get("/ssh/tunnel/status", e.carol); r.status != http.StatusOK || string(r.body) != "{}\n" {
		t.Errorf("a user without tunnels: %d %s", r.status, r.body)
	}

	// One tunnel: escaped names work, another user's tunnel is fieldAbsent.
	for _, name := range []string{slash, unicode, "shared"} {
		if st := e.status(e.alice, name); st.Name != name || st.HostName != "alice-"+name {
			t.Errorf("status of %q: %+v", name, st)
		}
	}
	e.get(apiStatusPath("only-bob"), e.alice).wantError(t, http.StatusNotFound, sshdeck.NotFound, "only-bob")
	e.get(apiStatusPath("bob-running"), e.alice).wantError(t, http.StatusNotFound, sshdeck.NotFound, "bob-running")
	e.get(apiStatusPath(slash), e.bob).wantError(t, http.StatusNotFound, sshdeck.NotFound)
	e.get(apiStatusPath("nope"), e.carol).wantError(t, http.StatusNotFound, sshdeck.NotFound)

	// Nor can another user stop it.
	for _, op := range []string{"disconnect", "cancel"} {
		for _, name := range []string{"only-bob", "bob-running"} {
			e.send("POST", "/ssh/tunnel/"+op, e.alice, NameRequest{name}).wantError(t, http.StatusNotFound, sshdeck.NotFound)
		}
	}
	for _, name := range []string{"only-bob", "bob-running"} {
		if st := e.status(e.bob, name); st.ManualDisconnect {
			t.Errorf("alice's disconnect reached bob's tunnel: %+v", st)
		}
	}
}

func TestAPIDisconnectAndCancel(t *testing.T) {
	e := newAPIEnv(t, apiSetup{})
	for _, op := range []string{"disconnect", "cancel"} {
		path := "/ssh/tunnel/" + op
		t.Run(op+" bad requests", func(t *testing.T) {
			e.send("POST", path, e.alice, `{}`).wantError(t, http.StatusBadRequest, sshdeck.Invalid, "tunnelName")
			e.send("POST", path, e.alice, `{"tunnelName":""}`).wantError(t, http.StatusBadRequest, sshdeck.Invalid, "tunnelName")
			e.send("POST", path, e.alice, `{"tunnelName":5}`).wantError(t, http.StatusBadRequest, sshdeck.Invalid, "tunnelName")
			e.send("POST", path, e.alice, `{"tunnelName":"web\u0000"}`).wantError(t, http.StatusBadRequest, sshdeck.Invalid, "tunnelName")
			e.send("POST", path, e.alice, `tunnelName=web`).wantError(t, http.StatusBadRequest, sshdeck.Invalid, "body")
			e.do("POST", path, e.alice, "text/plain", []byte(`{"tunnelName":"web"}`)).wantError(t, http.StatusUnsupportedMediaType, sshdeck.UnsupportedMediaType)
			e.send("POST", path, e.alice, NameRequest{"nope"}).wantError(t, http.StatusNotFound, sshdeck.NotFound, "nope")
		})
	}

	// Tunnels that keep retrying, an hour apart: caught waiting.
	for _, name := range []string{"to disconnect", "to/cancel"} {
		e.connect(e.alice, withFields(e.tunnelBody(name), "maxRetries", 1000, "retryInterval", 3600000))
		st := e.waitStatus(e.alice, name, "waiting", func(st tunnel.Status) bool { return st.Status == sshdeck.TunnelWaiting })
		if st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrNetwork || st.NextRetryIn < 3500 || st.RetryCount != 1 {
			t.Errorf("waiting after a refused connection: %+v", st)
		}
	}
	for _, tc := range []struct{ op, name, message, reason string }{
		{"disconnect", "to disconnect", "Tunnel disconnected", "disconnected by its owner"},
		{"cancel", "to/cancel", "Tunnel cancelled", "cancelled by its owner"},
	} {
		for range 2 { // twice: stopping a stopped tunnel answers the same
			r := e.send("POST", "/ssh/tunnel/"+tc.op, e.alice, NameRequest{tc.name})
			if r.status != http.StatusOK || string(r.body) != `{"message":"`+tc.message+`"}`+"\n" {
				t.Errorf("%s %q: %d %s", tc.op, tc.name, r.status, r.body)
			}
			st := e.status(e.alice, tc.name)
			if st.Status != sshdeck.TunnelDisconnected || !st.ManualDisconnect || !strings.Contains(st.Reason, tc.reason) ||
				st.ErrorType != nil || st.NextRetryIn != 0 {
				t.Errorf("after %s: %+v", tc.op, st)
			}
		}
		// Stopped here: the run is gone (the engine's
		// TestDisconnectAndCancel checks that for both) and its lease with it.
		if stored, err := e.store.Tunnel(context.Background(), e.aliceID, tc.name); err != nil || stored.Lease.Holder != "" {
			t.Errorf("%q after %s: lease held by %q (%v)", tc.name, tc.op, stored.Lease.Holder, err)
		}
	}
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	event, data string
}

// sseStream is an open status stream.
type sseStream struct {
	events <-chan sseEvent
	header http.Header
	mu     sync.Mutex
	raw    bytes.Buffer // everything read
	done   chan struct{}
	err    error // why reading stopped
}

// openStream opens the status stream as the token's user; the stream is
// closed when the test ends (or when close is called).
func (e *apiEnv) openStream(token string) (*sseStream, func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", e.url+"/ssh/tunnel/status/stream", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := e.client.Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	events := make(chan sseEvent, 100)
	s := &sseStream{events: events, header: resp.Header, done: make(chan struct{})}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		e.t.Fatalf("status stream: %d %s", resp.StatusCode, b)
	}
	go func() {
		defer close(s.done)
		defer close(events)
		s.err = readSSE(ctx, io.TeeReader(resp.Body, s), events)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			resp.Body.Close()
			<-s.done
			s.mu.Lock()
			raw := bytes.Clone(s.raw.Bytes())
			s.mu.Unlock()
			e.record(raw)
			// The body read so far, checked as a whole: its framing, and
			// each complete event's data against TunnelStatus.
			e.spec.Check(e.t, httptest.NewRequest("GET", "/ssh/tunnel/status/stream", nil), http.StatusOK, s.header, raw)
		})
	}
	e.t.Cleanup(stop)
	return s, stop
}

func (s *sseStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw.Write(p)
}

// readSSE parses Server-Sent Events: field lines (event, data, id,
// retry) build an event, an empty line sends it, a line starting with ':'
// is a comment.
func readSSE(ctx context.Context, r io.Reader, out chan<- sseEvent) error {
	br := bufio.NewReader(r)
	var ev sseEvent
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err // a partial line is no event
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch field, value, _ := strings.Cut(line, ":"); {
		case line == "":
			if data != nil {
				if ev.event == "" {
					ev.event = "message"
				}
				ev.data = strings.Join(data, "\n")
				select {
				case out <- ev:
				case <-ctx.Done(): // no one reads events any more
					return ctx.Err()
				}
			}
			ev, data = sseEvent{}, nil
		case field == "":
			// a comment: ": ping"
		case field == "event":
			ev.event = strings.TrimPrefix(value, " ")
		case field == "data":
			data = append(data, strings.TrimPrefix(value, " "))
		case field == "id", field == "retry":
		default:
			return errors.New("event stream: unknown line " + line)
		}
	}
}

// next returns the stream's next status event, failing the test if none
// comes in time.
func (s *sseStream) next(t *testing.T) tunnel.Status {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatalf("status stream ended: %v", s.err)
		}
		if ev.event != "status" {
			t.Fatalf("event of type %q, want status", ev.event)
		}
		var st tunnel.Status
		if err := json.Unmarshal([]byte(ev.data), &st); err != nil {
			t.Fatalf("status event data %q: %v", ev.data, err)
		}
		return st
	case <-time.After(sshdtest.WaitPatience): // a protocol wait, as waitFor's
		t.Fatalf("no status event within %v", sshdtest.WaitPatience)
	}
	return tunnel.Status{}
}

// holdingListener accepts TCP connections and says nothing on them: a
// dial succeeds and the SSH handshake waits, so that a tunnel stays in
// its state until the test closes the connection (which fails the
// handshake: a network failure, retried).
func holdingListener(t *testing.T) (port int, conns <-chan net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-ch:
				c.Close()
			default:
				return
			}
		}
	})
	return ln.Addr().(*net.TCPAddr).Port, ch
}

func TestAPIStatusStream(t *testing.T) {
	e := newAPIEnv(t, apiSetup{})
	// Two tunnels that ended before the stream opens: its snapshot.
	for _, name := range []string{"before-2", "before-1"} {
		e.connect(e.alice, e.tunnelBody(name))
		e.waitStatus(e.alice, name, "failed", func(st tunnel.Status) bool { return st.Status == sshdeck.TunnelFailed })
	}
	bobs, closeBobs := e.openStream(e.bob)
	alices, closeAlices := e.openStream(e.alice)
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := alices.header.Get(k); got != want {
			t.Errorf("stream header %s: %q, want %q", k, got, want)
		}
	}
	for _, name := range []string{"before-1", "before-2"} {
		if st := alices.next(t); st.Name != name || st.Status != sshdeck.TunnelFailed {
			t.Fatalf("snapshot: got %+v, want %s failed", st, name)
		}
	}

	// A tunnel whose source holds each connection until this test lets
	// it go (a network failure), and whose endpoint's SSH port is closed:
	// each state lasts until the stream has shown it.
	sourcePort, held := holdingListener(t)
	release := func(what string) {
		t.Helper()
		select {
		case c := <-held:
			c.Close()
		case <-time.After(sshdtest.WaitPatience): // a protocol wait, as waitFor's
			t.Fatalf("the tunnel never dialled its source (%s)", what)
		}
	}
	e.connect(e.alice, withFields(e.tunnelBody("live"), "sourceSSHPort", sourcePort, "maxRetries", 1, "retryInterval", 100))
	seen := map[sshdeck.TunnelState]bool{}
	for !seen[sshdeck.TunnelFailed] {
		st := alices.next(t)
		if st.Name != "live" {
			t.Fatalf("alice's stream shows %q: %+v", st.Name, st)
		}
		switch st.Status {
		case sshdeck.TunnelConnecting:
			if !seen[st.Status] {
				release("first attempt")
			}
		case sshdeck.TunnelWaiting, sshdeck.TunnelRetrying:
			if !seen[sshdeck.TunnelWaiting] && !seen[sshdeck.TunnelRetrying] {
				release("retry")
			}
			if st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrNetwork || st.RetryCount != 1 {
				t.Errorf("%s after a network failure: %+v", st.Status, st)
			}
		case sshdeck.TunnelFailed:
			if !st.RetryExhausted || st.RetryCount != 1 || st.MaxRetries != 1 || st.ErrorType == nil || *st.ErrorType != sshdeck.TunnelErrNetwork {
				t.Errorf("failed with no retries left: %+v", st)
			}
		default:
			t.Errorf("unexpected state: %+v", st)
		}
		seen[st.Status] = true
	}
	if !seen[sshdeck.TunnelConnecting] || !seen[sshdeck.TunnelWaiting] && !seen[sshdeck.TunnelRetrying] {
		t.Errorf("states seen: %v; want connecting, waiting or retrying, failed", seen)
	}

	// Bob's stream: none of alice's tunnels. His own tunnel's first event
	// comes from a read of the store made after alice's failed: had his
	// stream shown alice's tunnels, they would be in by then.
	e.connect(e.bob, e.tunnelBody("bob-marker"))
	if st := bobs.next(t); st.Name != "bob-marker" {
		t.Fatalf("bob's stream shows %q: %+v", st.Name, st)
	}
	closeAlices()
	closeBobs()
}

func TestAPITunnelThroughRealHosts(t *testing.T) {
	w := tunneltest.NewWorld(t)
	e := newAPIEnv(t, apiSetup{world: w})
	e.secret(w.Key)
	port := sshdtest.FreePort(t)
	body := worldTunnelBody(w, "real", port)
	e.connect(e.alice, body)
	st := e.waitStatus(e.alice, "real", "connected", func(st tunnel.Status) bool { return st.Status == sshdeck.TunnelConnected })
	if st.ErrorType != nil || st.RetryCount != 0 {
		t.Errorf("connected: %+v", st)
	}
	if err := sshdtest.RoundTrip(port, 64<<10); err != nil {
		t.Fatal(err)
	}
	if r := e.send("POST", "/ssh/tunnel/disconnect", e.alice, NameRequest{"real"}); r.status != http.StatusOK {
		t.Fatalf("disconnect: %d %s", r.status, r.body)
	}
	sshdtest.WaitPort(t, port, true)
	if st := e.status(e.alice, "real"); st.Status != sshdeck.TunnelDisconnected || !st.ManualDisconnect {
		t.Errorf("after disconnect: %+v", st)
	}

	// Failures that no retry mends fail at once, whatever maxRetries says.
	otherKey, otherPub := e.newKey("")
	for _, tc := range []struct {
		name string
		body map[string]any
		want sshdeck.TunnelError
	}{
		{"wrong pin", withFields(body, "name", "wrong-pin", "sourceHostKey", ssh.FingerprintSHA256(otherPub)), sshdeck.TunnelErrHostKey},
		{"unknown key", withFields(body, "name", "unknown-key", "endpointSSHKey", otherKey, "endpointPort", sshdtest.FreePort(t)), sshdeck.TunnelErrAuthentication},
	} {
		e.connect(e.alice, withFields(tc.body, "maxRetries", 1000))
		st := e.waitStatus(e.alice, tc.body["name"].(string), "failed", func(st tunnel.Status) bool { return st.Status == sshdeck.TunnelFailed })
		if st.ErrorType == nil || *st.ErrorType != tc.want || st.RetryCount != 0 || st.RetryExhausted {
			t.Errorf("%s: %+v", tc.name, st)
		}
	}
}
