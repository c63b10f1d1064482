package accounts

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// TestLoginLockoutConcurrent is the check: 50 wrong passwords for
// one name at once count 50, no more and no fewer, and however they
// interleave only the first 5 failures are answered 401: every attempt
// counted after them is a further attempt, refused with 429, so a burst
// learns no more than 5 verdicts. Then the right password is refused
// until the window ends, and accepted after.
func TestLoginLockoutConcurrent(t *testing.T) {
	f := newFixture(t)
	f.user(t, "alice", pwAlice, false)
	const n = 50
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwWrong}))
		})
	}
	wg.Wait()
	codes := map[sshdeck.Code]int{}
	for _, err := range errs {
		codes[sshdeck.ErrorCode(err)]++
	}
	if codes[sshdeck.Unauthorized] != MaxNameFailures || codes[sshdeck.RateLimited] != n-MaxNameFailures {
		t.Fatalf("answers %v, want %d unauthorized and %d rate_limited", codes, MaxNameFailures, n-MaxNameFailures)
	}
	if got := f.failures(t, "alice"); got != n {
		t.Fatalf("the name's counter is %d after %d attempts, want %d", got, n, n)
	}

	// The right password is refused while the window lasts, and counts.
	_, err := try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice}))
	wantCode(t, "right password while locked", err, sshdeck.RateLimited)
	if ra := sshdeck.RetryAfter(err); ra <= 0 || ra > FailureWindow {
		t.Fatalf("RetryAfter %v, want in (0, %v]", ra, FailureWindow)
	}
	f.clock.Add(FailureWindow - time.Second)
	_, err = try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice}))
	wantCode(t, "right password a second before the window ends", err, sshdeck.RateLimited)
	if ra := sshdeck.RetryAfter(err); ra != time.Second {
		t.Fatalf("RetryAfter a second before the end: %v, want 1s", ra)
	}
	if got := f.failures(t, "alice"); got != n+2 {
		t.Fatalf("refused attempts do not count: %d, want %d", got, n+2)
	}

	f.clock.Add(time.Second)
	f.login(t, "alice", pwAlice, "")
	if got := f.failures(t, "alice"); got != 0 {
		t.Fatalf("a new window counts %d after a success, want 0", got)
	}
}

// TestLoginLockoutBoundary: within 5 failures the right password works;
// after 5, the 6th attempt is refused, the right password included. The
// 5th failure itself is still a plain 401.
func TestLoginLockoutBoundary(t *testing.T) {
	for fails := range MaxNameFailures + 1 {
		t.Run(fmt.Sprintf("after-%d", fails), func(t *testing.T) {
			f := newFixture(t)
			f.user(t, "alice", pwAlice, false)
			for i := range fails {
				_, err := try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwWrong}))
				wantCode(t, fmt.Sprintf("failure %d", i+1), err, sshdeck.Unauthorized)
			}
			_, err := try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice}))
			if fails < MaxNameFailures {
				if err != nil {
					t.Fatalf("right password after %d failures: %v", fails, err)
				}
				return
			}
			wantCode(t, "right password after 5 failures", err, sshdeck.RateLimited)
		})
	}
}

// TestLoginLockoutAddress: 20 failures from one address, over as many
// names, lock the address: the 21st attempt from it is refused whatever
// the name and password, while another address logs in.
func TestLoginLockoutAddress(t *testing.T) {
	f := newFixture(t)
	f.user(t, "alice", pwAlice, false)
	const addr = "203.0.113.7"
	for i := range MaxAddrFailures {
		_, err := try(f.svc.Login(t.Context(), LoginRequest{Username: fmt.Sprintf("guess%d", i), Password: pwWrong, ClientAddr: addr}))
		wantCode(t, fmt.Sprintf("failure %d", i+1), err, sshdeck.Unauthorized)
		if i == MaxAddrFailures-2 {
			// 19 failures: the address may still log in.
			res, err := try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice, ClientAddr: addr}))
			if err != nil {
				t.Fatalf("right password after %d failures from the address: %v", i+1, err)
			}
			_ = res
		}
	}
	for _, name := range []string{"alice", "guess0", "someone-else"} {
		_, err := try(f.svc.Login(t.Context(), LoginRequest{Username: name, Password: pwAlice, ClientAddr: addr}))
		wantCode(t, "attempt for "+name+" from a locked address", err, sshdeck.RateLimited)
		if ra := sshdeck.RetryAfter(err); ra <= 0 || ra > FailureWindow {
			t.Fatalf("RetryAfter %v, want in (0, %v]", ra, FailureWindow)
		}
	}
	if _, err := try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice, ClientAddr: "198.51.100.4"})); err != nil {
		t.Fatalf("another address: %v", err)
	}
	f.clock.Add(FailureWindow)
	if _, err := try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice, ClientAddr: addr})); err != nil {
		t.Fatalf("the address after the window: %v", err)
	}
}

// hookStore is the store with a hook that runs before each read of login
// secrets: a test puts there what other attempts do meanwhile.
type hookStore struct {
	sshdeck.Store
	mu     sync.Mutex
	before func(ctx context.Context, userID string)
}

func (h *hookStore) LoginSecrets(ctx context.Context, userID string) (*sshdeck.LoginSecrets, error) {
	h.mu.Lock()
	hook := h.before
	h.before = nil // once
	h.mu.Unlock()
	if hook != nil {
		hook(ctx, userID)
	}
	return h.Store.LoginSecrets(ctx, userID)
}

// TestLockoutDuringCheck: failures counted while an attempt is being
// checked (it passed the lockout, then other attempts failed while its
// password was hashed) lock it out too. Without this, a burst of guesses
// that all pass the lockout before any is counted each gets a verdict: a
// right guess among them would log in, a wrong one would answer 401
// instead of 429, and the burst would learn as much as it likes. The
// changes a token proves with a password or code are held the same way.
func TestLockoutDuringCheck(t *testing.T) {
	cases := []struct {
		name string
		// try makes the attempt with the service over the hooked store;
		// key is alice's TOTP secret.
		try func(t *testing.T, svc *Service, caller sshdeck.Principal, key []byte) error
		// unchanged checks that the refused attempt changed nothing.
		unchanged func(t *testing.T, f *fixture, key []byte)
	}{
		{name: "login, right password", try: func(t *testing.T, svc *Service, _ sshdeck.Principal, key []byte) error {
			_, err := try(svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice, TOTP: auth.TOTPCode(key, start.Add(time.Minute))}))
			return err
		}},
		{name: "login, wrong password", try: func(t *testing.T, svc *Service, _ sshdeck.Principal, _ []byte) error {
			_, err := try(svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwWrong}))
			return err
		}},
		{name: "change password, right current", try: func(t *testing.T, svc *Service, caller sshdeck.Principal, _ []byte) error {
			return noted(svc.ChangePassword(t.Context(), caller, pwAlice, pwNew))
		}, unchanged: func(t *testing.T, f *fixture, key []byte) {
			f.login(t, "alice", pwAlice, auth.TOTPCode(key, f.clock.Now()))
		}},
		{name: "change password, wrong current", try: func(t *testing.T, svc *Service, caller sshdeck.Principal, _ []byte) error {
			return noted(svc.ChangePassword(t.Context(), caller, pwWrong, pwNew))
		}},
		{name: "disable TOTP, right code", try: func(t *testing.T, svc *Service, caller sshdeck.Principal, key []byte) error {
			return noted(svc.DisableTOTP(t.Context(), caller, auth.TOTPCode(key, start.Add(time.Minute))))
		}, unchanged: func(t *testing.T, f *fixture, key []byte) {
			_, err := try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice}))
			wantCode(t, "login without a code after a refused disabling", err, sshdeck.Unauthorized)
			f.login(t, "alice", pwAlice, auth.TOTPCode(key, f.clock.Now()))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.user(t, "alice", pwAlice, false)
			caller := f.caller(t, f.login(t, "alice", pwAlice, ""))
			key := f.enableTOTP(t, caller) // the clock is at start+30s now
			hs := &hookStore{Store: f.store}
			svc := NewService(hs, f.admin, f.sealer, f.clock.Now)
			hs.before = func(ctx context.Context, _ string) {
				for range MaxNameFailures {
					if _, _, err := f.store.AddFailure(ctx, nameKey("alice"), f.clock.Now(), FailureWindow); err != nil {
						t.Error(err)
					}
				}
			}
			err := c.try(t, svc, caller, key)
			wantCode(t, "attempt that 5 failures overtook", err, sshdeck.RateLimited)
			if ra := sshdeck.RetryAfter(err); ra != FailureWindow {
				t.Fatalf("RetryAfter %v, want %v", ra, FailureWindow)
			}
			if got := f.failures(t, "alice"); got != MaxNameFailures+1 {
				t.Fatalf("counter %d, want %d", got, MaxNameFailures+1)
			}
			if c.unchanged != nil {
				f.clock.Add(FailureWindow + 30*time.Second)
				c.unchanged(t, f, key)
			}
		})
	}
}

// TestLoginNoEnumeration: an unknown name, a wrong password, a disabled
// user and a user without a password get one and the same answer, code
// and message; a request without a name or password is Invalid.
func TestLoginNoEnumeration(t *testing.T) {
	f := newFixture(t)
	f.user(t, "alice", pwAlice, false)
	f.user(t, "dora", pwAlice, false)
	if _, _, err := f.admin.SetDisabled(t.Context(), "dora", true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.AddUser(t.Context(), "nopw", false); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		req  LoginRequest
	}{
		{"unknown user", LoginRequest{Username: "nobody", Password: pwAlice}},
		{"wrong password", LoginRequest{Username: "alice", Password: pwWrong}},
		{"disabled user, right password", LoginRequest{Username: "dora", Password: pwAlice}},
		{"disabled user, wrong password", LoginRequest{Username: "dora", Password: pwWrong}},
		{"user without a password", LoginRequest{Username: "nopw", Password: pwAlice}},
		{"unknown user with a TOTP code", LoginRequest{Username: "nobody", Password: pwAlice, TOTP: "123456"}},
	}
	var first error
	for _, c := range cases {
		_, err := try(f.svc.Login(t.Context(), c.req))
		wantCode(t, c.name, err, sshdeck.Unauthorized)
		if first == nil {
			first = err
		} else if err.Error() != first.Error() {
			t.Fatalf("%s: %q, while %s: %q", c.name, err, cases[0].name, first)
		}
	}

	for _, req := range []LoginRequest{{Password: pwAlice}, {Username: "alice"}, {}} {
		_, err := try(f.svc.Login(t.Context(), req))
		wantCode(t, fmt.Sprintf("login %+v", req), err, sshdeck.Invalid)
	}
	if got := f.failures(t, "alice"); got != 1 {
		t.Fatalf("invalid requests count: %d failures, want the 1 wrong password", got)
	}
}

// TestLoginToken: a login token lasts LoginTTL from now, carries every
// scope of its user (admin only for an admin) and says where it came from.
func TestLoginToken(t *testing.T) {
	f := newFixture(t)
	alice := f.user(t, "alice", pwAlice, false)
	root := f.user(t, "root", pwAdmin, true)
	f.clock.Add(1234 * time.Millisecond)
	f.svc.LoginTTL = 90 * time.Minute

	for _, c := range []struct {
		user     UserView
		password string
		addr     string
		label    string
		scopes   []sshdeck.Scope
	}{
		{alice, pwAlice, "198.51.100.4", "login from 198.51.100.4", sshdeck.UserScopes(false)},
		{root, pwAdmin, "2001:db8::1", "login from 2001:db8::1", sshdeck.AllScopes},
		{alice, pwAlice, "", "login", sshdeck.UserScopes(false)},
	} {
		res, err := try(f.svc.Login(t.Context(), LoginRequest{Username: c.user.Name, Password: c.password, ClientAddr: c.addr}))
		if err != nil {
			t.Fatal(err)
		}
		if want := f.clock.Now().Add(90 * time.Minute); !res.ExpiresAt.Equal(want) {
			t.Fatalf("expires at %v, want %v", res.ExpiresAt, want)
		}
		if !slices.Equal(res.Scopes, c.scopes) {
			t.Fatalf("%s's login scopes %v, want %v", c.user.Name, res.Scopes, c.scopes)
		}
		if slices.Contains(res.Scopes, sshdeck.ScopeAdmin) != c.user.Admin {
			t.Fatalf("%s's login scopes %v: admin only for an admin", c.user.Name, res.Scopes)
		}
		tok := f.token(t, c.user.ID, res.ID)
		if tok.Name != c.label || !tok.ExpiresAt.Equal(res.ExpiresAt) || !slices.Equal(tok.Scopes, c.scopes) || tok.Revoked {
			t.Fatalf("stored token %+v, want label %q, expiry %v, scopes %v", tok, c.label, res.ExpiresAt, c.scopes)
		}
	}
}

// traceStore is the store recording the reads and writes of logins.
type traceStore struct {
	sshdeck.Store
	mu    sync.Mutex
	calls []string
}

func (s *traceStore) note(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
}

func (s *traceStore) UserByName(ctx context.Context, name string) (*sshdeck.User, error) {
	s.note("UserByName")
	return s.Store.UserByName(ctx, name)
}

func (s *traceStore) LoginSecrets(ctx context.Context, userID string) (*sshdeck.LoginSecrets, error) {
	s.note("LoginSecrets")
	return s.Store.LoginSecrets(ctx, userID)
}

func (s *traceStore) Failures(ctx context.Context, key string, now time.Time) (int, time.Time, error) {
	s.note("Failures")
	return s.Store.Failures(ctx, key, now)
}

func (s *traceStore) AddFailure(ctx context.Context, key string, now time.Time, window time.Duration) (int, time.Time, error) {
	s.note("AddFailure")
	return s.Store.AddFailure(ctx, key, now, window)
}

// TestLoginSameWork: every wrong login makes the same calls of the store,
// in the same order, whether or not the name exists: where a read costs
// a round trip, one read fewer for an unknown name would tell it apart
// as surely as a different answer. (The argon2 work is the same by
// VerifyNoPassword.)
func TestLoginSameWork(t *testing.T) {
	f := newFixture(t)
	f.user(t, "alice", pwAlice, false)
	f.user(t, "dora", pwAlice, false)
	if _, _, err := f.admin.SetDisabled(t.Context(), "dora", true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.AddUser(t.Context(), "nopw", false); err != nil {
		t.Fatal(err)
	}
	ts := &traceStore{Store: f.store}
	svc := NewService(ts, f.admin, f.sealer, f.clock.Now)
	var want []string
	for _, req := range []LoginRequest{
		{Username: "alice", Password: pwWrong, ClientAddr: "198.51.100.4"},
		{Username: "nobody", Password: pwWrong, ClientAddr: "198.51.100.4"},
		{Username: "dora", Password: pwAlice, ClientAddr: "198.51.100.4"},
		{Username: "nopw", Password: pwAlice, ClientAddr: "198.51.100.4"},
	} {
		ts.calls = nil
		_, err := try(svc.Login(t.Context(), req))
		wantCode(t, req.Username, err, sshdeck.Unauthorized)
		if want == nil {
			want = ts.calls
		} else if !slices.Equal(ts.calls, want) {
			t.Fatalf("%s: store calls %v, while alice's wrong password made %v", req.Username, ts.calls, want)
		}
	}
}

// TestLoginRehash: a login whose hash has older costs stores a new hash
// of the password with today's, and the password keeps working.
func TestLoginRehash(t *testing.T) {
	f := newFixture(t)
	u, err := f.admin.AddUser(t.Context(), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	old := auth.PasswordParams{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}
	hash, err := auth.HashPassword(t.Context(), pwAlice, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.PutLoginSecrets(t.Context(), &sshdeck.LoginSecrets{UserID: u.ID, PasswordHash: hash, Version: 1}); err != nil {
		t.Fatal(err)
	}
	f.login(t, "alice", pwAlice, "")
	ls, err := f.store.LoginSecrets(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ls.PasswordHash == hash || auth.NeedsRehash(ls.PasswordHash, auth.DefaultPasswordParams) || ls.Version != 2 {
		t.Fatalf("after the login: version %d, rehashed %t", ls.Version, ls.PasswordHash != hash)
	}
	f.login(t, "alice", pwAlice, "")
	_, err = try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwWrong}))
	wantCode(t, "a wrong password after the rehash", err, sshdeck.Unauthorized)
}
