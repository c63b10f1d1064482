package accounts

import (
	"bytes"
	"encoding/base32"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// totpKey decodes the secret as an authenticator app does.
func totpKey(tb testing.TB, s *TOTPSecret) []byte {
	tb.Helper()
	key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s.Secret)
	if err != nil {
		tb.Fatalf("secret %q is not unpadded base32: %v", "…", err)
	}
	return key
}

// wrongCode is a well-formed code that matches none of the steps the
// service accepts at t.
func wrongCode(key []byte, t time.Time) string {
	accepted := map[string]bool{}
	for _, d := range []time.Duration{-30 * time.Second, 0, 30 * time.Second} {
		accepted[auth.TOTPCode(key, t.Add(d))] = true
	}
	for _, c := range []string{"000000", "111111", "222222", "333333"} {
		if !accepted[c] {
			return c
		}
	}
	panic("unreachable: three steps cannot have four codes")
}

// enableTOTP turns TOTP on for the caller and returns the secret, at a
// fresh step: the step enabling used is spent.
func (f *fixture) enableTOTP(tb testing.TB, caller sshdeck.Principal) []byte {
	tb.Helper()
	s, err := try(f.svc.BeginTOTP(tb.Context(), caller))
	if err != nil {
		tb.Fatal(err)
	}
	key := totpKey(tb, s)
	if err := noted(f.svc.EnableTOTP(tb.Context(), caller, auth.TOTPCode(key, f.clock.Now()))); err != nil {
		tb.Fatal(err)
	}
	f.clock.Add(30 * time.Second)
	return key
}

// TestTOTP walks the life of a second factor: begin, enable, log in with
// codes (none twice), disable.
func TestTOTP(t *testing.T) {
	f := newFixture(t)
	alice := f.user(t, "alice", pwAlice, false)
	caller := f.caller(t, f.login(t, "alice", pwAlice, ""))
	ctx := t.Context()

	wantCode(t, "enable before begin", noted(f.svc.EnableTOTP(ctx, caller, "123456")), sshdeck.Conflict)
	wantCode(t, "disable while off", noted(f.svc.DisableTOTP(ctx, caller, "123456")), sshdeck.Conflict)

	s, err := try(f.svc.BeginTOTP(ctx, caller))
	if err != nil {
		t.Fatal(err)
	}
	key := totpKey(t, s)
	if len(key) != 20 {
		t.Fatalf("secret of %d bytes, want 20", len(key))
	}
	u, err := url.Parse(s.URL)
	if err != nil || u.Scheme != "otpauth" || u.Host != "totp" || u.Query().Get("secret") != s.Secret ||
		u.Query().Get("issuer") != Issuer || !strings.HasSuffix(u.Path, ":alice") {
		t.Fatalf("URL %q (%v): want otpauth://totp/%s:alice?secret=…&issuer=%s", s.URL, err, Issuer, Issuer)
	}

	// Begun, not enabled: login needs no code yet.
	f.login(t, "alice", pwAlice, "")

	for _, code := range []string{"", "12345", "1234567", "12345a", "１２３４５６"} {
		wantCode(t, "enable with "+code, noted(f.svc.EnableTOTP(ctx, caller, code)), sshdeck.Invalid)
	}
	if n := f.failures(t, "alice"); n != 0 {
		t.Fatalf("malformed codes counted %d failures", n)
	}
	wantCode(t, "enable with a wrong code", noted(f.svc.EnableTOTP(ctx, caller, wrongCode(key, f.clock.Now()))), sshdeck.Forbidden)
	if n := f.failures(t, "alice"); n != 1 {
		t.Fatalf("a wrong code counted %d failures, want 1", n)
	}
	enableCode := auth.TOTPCode(key, f.clock.Now())
	if err := noted(f.svc.EnableTOTP(ctx, caller, enableCode)); err != nil {
		t.Fatal(err)
	}
	if me, err := try(f.svc.Me(ctx, caller)); err != nil || !me.TOTP || !me.HasPassword || me.ID != alice.ID {
		t.Fatalf("Me = %+v, %v: want TOTP on", me, err)
	}
	wantCode(t, "begin while on", noted2(f.svc.BeginTOTP(ctx, caller)), sshdeck.Conflict)

	login := func(code string) error {
		_, err := try(f.svc.Login(ctx, LoginRequest{Username: "alice", Password: pwAlice, TOTP: code}))
		return err
	}
	wantCode(t, "the code that enabled, again", login(enableCode), sshdeck.Unauthorized)
	wantCode(t, "login without a code", login(""), sshdeck.Unauthorized)
	wantCode(t, "login with a wrong code", login(wrongCode(key, f.clock.Now())), sshdeck.Unauthorized)
	wantCode(t, "login with a malformed code", login("12 456"), sshdeck.Invalid)
	// A wrong password with the right code is the one answer of a wrong
	// password, and spends nothing.
	_, err = try(f.svc.Login(ctx, LoginRequest{Username: "alice", Password: pwWrong, TOTP: auth.TOTPCode(key, f.clock.Now().Add(30*time.Second))}))
	wantCode(t, "wrong password, right code", err, sshdeck.Unauthorized)
	if sshdeck.ErrorMessage(err) != sshdeck.ErrorMessage(errWrongLogin) {
		t.Fatalf("wrong password with a code: %q, want the answer of any wrong password", err)
	}
	if n := f.failures(t, "alice"); n != 5 {
		t.Fatalf("%d failures, want 5", n)
	}
	f.clock.Add(FailureWindow + time.Second) // a new window, and a later step

	code := auth.TOTPCode(key, f.clock.Now())
	if err := login(code); err != nil {
		t.Fatalf("login with the current code: %v", err)
	}
	wantCode(t, "the same code again", login(code), sshdeck.Unauthorized)
	wantCode(t, "the code of the step before", login(auth.TOTPCode(key, f.clock.Now().Add(-30*time.Second))), sshdeck.Unauthorized)
	if err := login(auth.TOTPCode(key, f.clock.Now().Add(30*time.Second))); err != nil {
		t.Fatalf("login with the next step's code: %v", err)
	}
	f.clock.Add(60 * time.Second)
	if err := login(auth.TOTPCode(key, f.clock.Now())); err != nil {
		t.Fatalf("login a minute later: %v", err)
	}

	f.clock.Add(30 * time.Second)
	wantCode(t, "disable with a wrong code", noted(f.svc.DisableTOTP(ctx, caller, wrongCode(key, f.clock.Now()))), sshdeck.Forbidden)
	wantCode(t, "disable with a used code", noted(f.svc.DisableTOTP(ctx, caller, auth.TOTPCode(key, f.clock.Now().Add(-30*time.Second)))), sshdeck.Forbidden)
	wantCode(t, "disable with a malformed code", noted(f.svc.DisableTOTP(ctx, caller, "")), sshdeck.Invalid)
	if err := noted(f.svc.DisableTOTP(ctx, caller, auth.TOTPCode(key, f.clock.Now()))); err != nil {
		t.Fatal(err)
	}
	if me, err := try(f.svc.Me(ctx, caller)); err != nil || me.TOTP {
		t.Fatalf("Me = %+v, %v: want TOTP off", me, err)
	}
	f.login(t, "alice", pwAlice, "")
	// On again with a new secret: a code of the old one is wrong.
	f.clock.Add(FailureWindow)
	key2 := f.enableTOTP(t, caller)
	if bytes.Equal(key, key2) {
		t.Fatal("the new secret is the old one")
	}
	if auth.TOTPCode(key, f.clock.Now()) != auth.TOTPCode(key2, f.clock.Now()) {
		wantCode(t, "login with the old secret's code", login(auth.TOTPCode(key, f.clock.Now())), sshdeck.Unauthorized)
	}
	f.login(t, "alice", pwAlice, auth.TOTPCode(key2, f.clock.Now()))
}

// noted2 records the error of a call that returns a value too, and
// returns the error alone.
func noted2[T any](v T, err error) error {
	_, err = try(v, err)
	return err
}

// TestTOTPConcurrentReplay: two logins with one valid code at once, as a
// phished code replayed while its owner types it: exactly one succeeds.
func TestTOTPConcurrentReplay(t *testing.T) {
	f := newFixture(t)
	f.user(t, "alice", pwAlice, false)
	key := f.enableTOTP(t, f.caller(t, f.login(t, "alice", pwAlice, "")))
	for round := range 5 {
		code := auth.TOTPCode(key, f.clock.Now())
		var errs [2]error
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = try(f.svc.Login(t.Context(), LoginRequest{Username: "alice", Password: pwAlice, TOTP: code}))
			})
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: %v and %v, want exactly one success", round, errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil {
				wantCode(t, "the loser", err, sshdeck.Unauthorized)
			}
		}
		f.clock.Add(FailureWindow + 30*time.Second)
	}
}

// TestTOTPSealed: the stored secret, pending or on, is a sealed envelope
// bound to its user: neither its bytes nor its base32 are in the record,
// nor in the store's file.
func TestTOTPSealed(t *testing.T) {
	f := newFixture(t)
	alice := f.user(t, "alice", pwAlice, false)
	caller := f.caller(t, f.login(t, "alice", pwAlice, ""))
	s, err := try(f.svc.BeginTOTP(t.Context(), caller))
	if err != nil {
		t.Fatal(err)
	}
	key := totpKey(t, s)
	check := func(what string, sealed []byte) {
		t.Helper()
		if len(sealed) == 0 {
			t.Fatalf("%s: nothing stored", what)
		}
		if bytes.Contains(sealed, key) || bytes.Contains(sealed, []byte(s.Secret)) {
			t.Fatalf("%s holds the secret", what)
		}
		opened, err := f.sealer.Open(t.Context(), sealed, secret.AD("users", alice.ID, "totp"))
		if err != nil || !bytes.Equal(opened, key) {
			t.Fatalf("%s does not open to the secret with the user's AD: %v", what, err)
		}
	}
	ls, err := f.store.LoginSecrets(t.Context(), alice.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ls.TOTP != nil {
		t.Fatal("TOTP on before a code confirmed it")
	}
	check("the pending secret", ls.PendingTOTP)

	if err := noted(f.svc.EnableTOTP(t.Context(), caller, auth.TOTPCode(key, f.clock.Now()))); err != nil {
		t.Fatal(err)
	}
	if ls, err = f.store.LoginSecrets(t.Context(), alice.ID); err != nil {
		t.Fatal(err)
	}
	if ls.PendingTOTP != nil {
		t.Fatal("a secret still pending after enabling")
	}
	check("the active secret", ls.TOTP)
	if strings.Contains(ls.PasswordHash, pwAlice) || !strings.HasPrefix(ls.PasswordHash, "$argon2id$") {
		t.Fatalf("password hash %q…", ls.PasswordHash[:min(len(ls.PasswordHash), 10)])
	}

	raw, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	for what, b := range map[string][]byte{"TOTP secret": key, "base32 TOTP secret": []byte(s.Secret), "password": []byte(pwAlice)} {
		if bytes.Contains(raw, b) {
			t.Fatalf("the store's file holds the %s", what)
		}
	}
}
