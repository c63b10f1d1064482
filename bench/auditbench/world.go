package auditbench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/sshdeck/sshdeck/shared/accounts"
	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/files"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// mode is whether a server records its requests' audit trail.
type mode int

const (
	off mode = iota // api.Config.Audit nil: the "before"
	on              // api.Config.Audit set: the "after"
)

func (m mode) String() string {
	if m == on {
		return "audited"
	}
	return "unaudited"
}

// modes are both, in the order a round runs them.
var modes = [2]mode{off, on}

// world is one store with two API servers over it, each behind its own
// loopback HTTP server: the same services (so the same handlers, users,
// tokens and authenticator cache), one with an audit recorder and one
// without. Whatever the two runs of a pair differ in is the recorder.
type world struct {
	store  sshdeck.Store
	hosts  *hosts.Service
	http   [2]*httptest.Server // by mode
	client *http.Client        // for the set-up calls
	// user is the one user of every route, and token a bearer token of
	// theirs with every scope.
	user  *sshdeck.User
	token string
}

// benchLimits are the deployment limits with the counted kinds raised to
// config's highest, so that no run is refused for having created many
// hosts, tokens or shortcuts: a limit reached is a 4xx, which fails a run.
var benchLimits = func() config.Limits {
	l := config.DefaultLimits
	l.Hosts, l.Tokens, l.Shortcuts = 1_000_000, 1_000_000, 1_000_000
	return l
}()

// newWorld builds the services over store, as api.FromApp does, and
// serves them twice; close stops the servers (not the store, the caller's).
func newWorld(ctx context.Context, store sshdeck.Store) (_ *world, err error) {
	key := make([]byte, secret.KeySize)
	rand.Read(key)
	keyring, err := secret.NewLocalKeyring(key)
	if err != nil {
		return nil, err
	}
	sealer := secret.NewSealer(keyring)
	authn := auth.NewAuthenticator(store, store, nil)
	admin := auth.NewAdmin(store, authn, nil)
	admin.SetTokenLimit(benchLimits.Tokens)
	w := &world{store: store, hosts: hosts.NewService(store, store, sealer, nil),
		client: &http.Client{Timeout: time.Minute}}
	w.hosts.Limits = benchLimits
	fileService := files.NewService(store, nil)
	fileService.Limits = benchLimits
	cfg := api.Config{
		Accounts:      accounts.NewService(store, admin, sealer, nil),
		Hosts:         w.hosts,
		Files:         fileService,
		Alerts:        alerts.NewService(store, nil, nil),
		Ping:          store.Ping,
		Authenticator: authn,
	}
	for _, m := range modes {
		c := cfg
		if m == on {
			c.Audit = &audit.Recorder{Store: store}
		}
		w.http[m] = httptest.NewServer(api.New(c).Router())
	}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if w.user, err = admin.AddUser(ctx, "bench", false); err != nil {
		return nil, fmt.Errorf("add the user: %w", err)
	}
	if w.token, _, err = admin.CreateToken(ctx, w.user.Name, "bench", 0); err != nil {
		return nil, fmt.Errorf("create the user's token: %w", err)
	}
	return w, nil
}

func (w *world) close() {
	for _, s := range w.http {
		if s != nil {
			s.Close()
		}
	}
}

// url is the address of the server of m.
func (w *world) url(m mode) string { return w.http[m].URL }

// newHosts creates n hosts of the user through the service (set-up, not
// measured, and not audited) and returns their ids.
func (w *world) newHosts(ctx context.Context, n int) ([]int64, error) {
	ids := make([]int64, n)
	for i := range ids {
		in := &hosts.Input{Name: fmt.Sprintf("target-%d", i), IP: "10.0.0.5", Username: "deploy"}
		rec, err := w.hosts.Create(ctx, w.user.ID, in)
		if err != nil {
			return nil, fmt.Errorf("create a host to write to: %w", err)
		}
		ids[i] = rec.ID
	}
	return ids, nil
}

// newRequest is a request of the user's to the server of m, with body
// (when not nil) as JSON.
func (w *world) newRequest(m mode, method, path string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, w.url(m)+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// send sends one request and checks its answer: of status want, or any
// 2xx when want is 0.
func (w *world) send(req *http.Request, want int) error {
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", req.Method, req.URL.Path, err)
	}
	if want == 0 && resp.StatusCode/100 == 2 || resp.StatusCode == want {
		return nil
	}
	wanted := "a 2xx"
	if want != 0 {
		wanted = strconv.Itoa(want)
	}
	return fmt.Errorf("%s %s: answered %d, want %s: %s", req.Method, req.URL.Path, resp.StatusCode, wanted, bytes.TrimSpace(body))
}

// warm sends a read through each server, so that the token's check is in
// the authenticator's cache.
func (w *world) warm(ctx context.Context) error {
	for _, m := range modes {
		req, err := w.newRequest(m, "GET", "/ssh/db/host?limit=1", nil)
		if err != nil {
			return err
		}
		if err := w.send(req.WithContext(ctx), 0); err != nil {
			return fmt.Errorf("warm the token's check: %w", err)
		}
	}
	return nil
}
