package accounts

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// The tests run the service over an embedded store in a temporary
// directory, a local sealer and a fake clock that only the test moves:
// windows and TOTP steps pass when the test says so, never by sleeping.
// The passwords are the real argon2id ones (DefaultPasswordParams), so
// that the timing benchmark and the tests see the same work.

// start is the fake clock's first reading: whole seconds (tokens keep
// milliseconds), 15 s into a TOTP step.
var start = time.Unix(1_750_000_015, 0).UTC()

// fakeClock is a clock the test moves; safe for concurrent readers.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// The passwords of the tests, wrong ones included: distinctive, so that
// TestMain can look for each in every error the service returned.
var (
	pwAlice  = "alice-Pa55word-71c3"
	pwBob    = "bob-Pa55word-9e02"
	pwAdmin  = "admin-Pa55word-44d8"
	pwNew    = "alice-N3wPass-b6a1"
	pwWrong  = "wrong-Guess-5f0e"
	pwShort  = "s7#Q" // under 8 characters: refused as a new password
	pwUnused = "never-Set-0a9c"
)

func init() {
	leaks.secret(pwAlice, pwBob, pwAdmin, pwNew, pwWrong, pwShort, pwUnused)
}

// leaks gathers, over every test of the package, the secrets the tests
// handed the service or got from it (passwords, TOTP secrets, bearer
// tokens) and the text of every error the service returned. TestMain
// checks after the tests that no error holds any secret: an error's
// message reaches the client and the logs.
var leaks leakLog

type leakLog struct {
	mu      sync.Mutex
	secrets []string
	errs    []string
}

// secret records secrets to look for.
func (l *leakLog) secret(s ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range s {
		if v != "" {
			l.secrets = append(l.secrets, v)
		}
	}
}

// try records what a call of the service returned: its error's text, and
// the secrets in its result. It returns both unchanged, so that a test
// writes try(svc.Login(ctx, req)).
func try[T any](v T, err error) (T, error) {
	switch r := any(v).(type) {
	case *LoginResult:
		if r != nil {
			leaks.secret(r.Token)
		}
	case *CreatedToken:
		if r != nil {
			leaks.secret(r.Token)
		}
	case *TOTPSecret:
		if r != nil {
			leaks.secret(r.Secret)
			if raw, derr := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(r.Secret); derr == nil {
				leaks.secret(string(raw), hex.EncodeToString(raw))
			}
		}
	}
	noted(err)
	return v, err
}

// noted records the error of a call that returns nothing else.
func noted(err error) error {
	if err != nil {
		leaks.mu.Lock()
		leaks.errs = append(leaks.errs, err.Error())
		leaks.mu.Unlock()
	}
	return err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		leaks.mu.Lock()
		for _, e := range leaks.errs {
			for _, s := range leaks.secrets {
				if strings.Contains(e, s) {
					fmt.Fprintf(os.Stderr, "FAIL: an error of the service holds a secret (%q…): %q\n", s[:min(len(s), 4)], e)
					code = 1
				}
			}
		}
		leaks.mu.Unlock()
	}
	os.Exit(code)
}

// fixture is a service over a fresh store.
type fixture struct {
	store  *embedded.Store
	path   string
	sealer *secret.Sealer
	admin  *auth.Admin
	svc    *Service
	clock  *fakeClock
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "sshdeck.db")
	st, err := embedded.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	key := make([]byte, secret.KeySize)
	rand.Read(key)
	kr, err := secret.NewLocalKeyring(key)
	if err != nil {
		tb.Fatal(err)
	}
	clock := &fakeClock{t: start}
	sealer := secret.NewSealer(kr)
	admin := auth.NewAdmin(st, nil, clock.Now)
	return &fixture{store: st, path: path, sealer: sealer, admin: admin, svc: NewService(st, admin, sealer, clock.Now), clock: clock}
}

// user creates a user with the password through the service.
func (f *fixture) user(tb testing.TB, name, password string, admin bool) UserView {
	tb.Helper()
	v, err := try(f.svc.CreateUser(tb.Context(), NewUser{Username: name, Password: password, Admin: admin}))
	if err != nil {
		tb.Fatalf("create user %s: %v", name, err)
	}
	return v
}

// login logs in and fails the test unless it succeeds.
func (f *fixture) login(tb testing.TB, name, password, totp string) *LoginResult {
	tb.Helper()
	res, err := try(f.svc.Login(tb.Context(), LoginRequest{Username: name, Password: password, TOTP: totp}))
	if err != nil {
		tb.Fatalf("login %s: %v", name, err)
	}
	return res
}

// caller is the principal of a login's token, as the authenticator makes
// it.
func (f *fixture) caller(tb testing.TB, res *LoginResult) sshdeck.Principal {
	tb.Helper()
	t, err := f.store.TokenByHash(tb.Context(), auth.HashToken(res.Token))
	if err != nil {
		tb.Fatal(err)
	}
	return sshdeck.Principal{UserID: t.UserID, TokenID: t.ID, Scopes: res.Scopes}
}

// failures is the count of the lockout window of the name now.
func (f *fixture) failures(tb testing.TB, name string) int {
	tb.Helper()
	n, _, err := f.store.Failures(tb.Context(), nameKey(name), f.clock.Now())
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// nameKey is the lockout counter of a user name, computed here as the
// store sees it: the hex SHA-256 of the name.
func nameKey(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "name:" + hex.EncodeToString(sum[:])
}

// token returns the stored token with the id.
func (f *fixture) token(tb testing.TB, userID, id string) *sshdeck.Token {
	tb.Helper()
	tokens, err := f.store.Tokens(tb.Context(), userID)
	if err != nil {
		tb.Fatal(err)
	}
	i := slices.IndexFunc(tokens, func(t *sshdeck.Token) bool { return t.ID == id })
	if i < 0 {
		tb.Fatalf("token %s of %s not stored", id, userID)
	}
	return tokens[i]
}

// wantCode fails the test unless err has the code.
func wantCode(tb testing.TB, what string, err error, code sshdeck.Code) {
	tb.Helper()
	if got := sshdeck.ErrorCode(err); got != code {
		tb.Fatalf("%s: %v (code %q), want code %q", what, err, got, code)
	}
}
