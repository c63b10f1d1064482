package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"golang.org/x/crypto/argon2"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// cheapParams keep the tests fast; the format and the checks are the same.
var cheapParams = PasswordParams{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}

// useLimiter makes l the process's limiter for the test.
func useLimiter(t *testing.T, l *hashLimiter) {
	t.Helper()
	saved := passwordWork
	passwordWork = l
	t.Cleanup(func() { passwordWork = saved })
}

func TestPasswordRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, p := range []PasswordParams{cheapParams, DefaultPasswordParams} {
		h, err := HashPassword(ctx, "correct horse", p)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := VerifyPassword(ctx, h, "correct horse"); err != nil || !ok {
			t.Fatalf("right password: %t, %v", ok, err)
		}
		for _, wrong := range []string{"correct horsE", "correct horse ", "correct hors", "Correct horse"} {
			if ok, err := VerifyPassword(ctx, h, wrong); err != nil || ok {
				t.Fatalf("wrong password %q: %t, %v", wrong, ok, err)
			}
		}
		if again, _ := HashPassword(ctx, "correct horse", p); again == h {
			t.Fatal("two hashes of one password are equal: the salt is not random")
		}
		if NeedsRehash(h, p) {
			t.Fatalf("NeedsRehash with its own params %+v", p)
		}
	}
}

func TestPasswordHashCarriesParams(t *testing.T) {
	p := PasswordParams{Memory: 256, Time: 3, Threads: 2, SaltLen: 24, KeyLen: 48}
	h, err := HashPassword(context.Background(), "correct horse", p)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(h, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v=19" || parts[3] != "m=256,t=3,p=2" {
		t.Fatalf("hash %q", h)
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	key, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) != 24 || len(key) != 48 {
		t.Fatalf("salt %q, key %q: %v, %v", parts[4], parts[5], err1, err2)
	}
	if got, _, _, err := decodeHash(h); err != nil || got != p {
		t.Fatalf("decodeHash = %+v, %v; want %+v", got, err, p)
	}
}

// TestPasswordOldParamsVerify: a hash made with other params than today's
// defaults keeps verifying, and asks to be redone.
func TestPasswordOldParamsVerify(t *testing.T) {
	ctx := context.Background()
	old := PasswordParams{Memory: 32, Time: 1, Threads: 4, SaltLen: 8, KeyLen: 16}
	h, err := HashPassword(ctx, "correct horse", old)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := VerifyPassword(ctx, h, "correct horse"); err != nil || !ok {
		t.Fatalf("old params: %t, %v", ok, err)
	}
	if !NeedsRehash(h, DefaultPasswordParams) {
		t.Fatal("NeedsRehash false for other params")
	}
	for _, p := range []PasswordParams{
		{Memory: 64, Time: 1, Threads: 4, SaltLen: 8, KeyLen: 16},
		{Memory: 32, Time: 2, Threads: 4, SaltLen: 8, KeyLen: 16},
		{Memory: 32, Time: 1, Threads: 1, SaltLen: 8, KeyLen: 16},
		{Memory: 32, Time: 1, Threads: 4, SaltLen: 16, KeyLen: 16},
		{Memory: 32, Time: 1, Threads: 4, SaltLen: 8, KeyLen: 32},
	} {
		if !NeedsRehash(h, p) {
			t.Fatalf("NeedsRehash false against %+v", p)
		}
	}
}

// TestPasswordKnownAnswer checks the encoding against argon2.IDKey
// computed here, and against hashes written by the reference C
// implementation (libargon2 0~20171227, argon2id_hash_encoded), so that a
// hash made by the argon2 CLI verifies here and the other way round.
func TestPasswordKnownAnswer(t *testing.T) {
	ctx := context.Background()
	p := DefaultPasswordParams
	salt := []byte("sshdeck-salt-16b")
	key := argon2.IDKey([]byte("correct horse battery staple"), salt, 2, 19456, 1, 32)
	want := "$argon2id$v=19$m=19456,t=2,p=1$" + base64.RawStdEncoding.EncodeToString(salt) + "$" + base64.RawStdEncoding.EncodeToString(key)
	if got, err := hashPassword(ctx, "correct horse battery staple", salt, p); err != nil || got != want {
		t.Fatalf("hashPassword = %q, %v\nwant %q", got, err, want)
	}

	// HashPassword's own output, rebuilt from its salt.
	h, err := HashPassword(ctx, "correct horse battery staple", p)
	if err != nil {
		t.Fatal(err)
	}
	salt, err = base64.RawStdEncoding.DecodeString(strings.Split(h, "$")[4])
	if err != nil {
		t.Fatal(err)
	}
	key = argon2.IDKey([]byte("correct horse battery staple"), salt, 2, 19456, 1, 32)
	if want := fmt.Sprintf("$argon2id$v=19$m=19456,t=2,p=1$%s$%s", base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)); h != want {
		t.Fatalf("HashPassword = %q\nwant %q", h, want)
	}

	for _, v := range []struct {
		password, salt string
		p              PasswordParams
		encoded        string
	}{
		{"correct horse battery staple", "sshdeck-salt-16b", p,
			"$argon2id$v=19$m=19456,t=2,p=1$c3NoZGVjay1zYWx0LTE2Yg$Os3QNwJkZ3w2GlFCcndNBMfiYXMMn0B6CkYARQ9bPw8"},
		{"password", "somesalt", PasswordParams{Memory: 65536, Time: 2, Threads: 4, SaltLen: 8, KeyLen: 32},
			"$argon2id$v=19$m=65536,t=2,p=4$c29tZXNhbHQ$GpZ3sK/oH9p7VIiV56G/64Zo/8GaUw434IimaPqxwCo"},
		{"pässwörd!", "0123456789abcdef0123", PasswordParams{Memory: 64, Time: 1, Threads: 2, SaltLen: 20, KeyLen: 16},
			"$argon2id$v=19$m=64,t=1,p=2$MDEyMzQ1Njc4OWFiY2RlZjAxMjM$fm7PX0z7YNFPULfS7LPpSg"},
	} {
		if got, err := hashPassword(ctx, v.password, []byte(v.salt), v.p); err != nil || got != v.encoded {
			t.Fatalf("hashPassword(%q) = %q, %v\nwant %q", v.password, got, err, v.encoded)
		}
		if ok, err := VerifyPassword(ctx, v.encoded, v.password); err != nil || !ok {
			t.Fatalf("VerifyPassword(%q) = %t, %v", v.encoded, ok, err)
		}
		if ok, err := VerifyPassword(ctx, v.encoded, v.password+"x"); err != nil || ok {
			t.Fatalf("VerifyPassword(%q) of a wrong password = %t, %v", v.encoded, ok, err)
		}
	}
}

func TestPasswordLength(t *testing.T) {
	ctx := context.Background()
	for password, want := range map[string]string{
		"":                             "password must not be empty",
		"1234567":                      "password must be at least 8 characters",
		"äöüßéèà":                      "password must be at least 8 characters", // 14 bytes, 7 characters
		strings.Repeat("x", 1025):      "password must be at most 1024 bytes",
		strings.Repeat("é", 512) + "x": "password must be at most 1024 bytes", // 1025 bytes
		"secret-hunter2":               "",
	} {
		_, err := HashPassword(ctx, password, cheapParams)
		if want == "" {
			if err != nil {
				t.Fatalf("HashPassword of a good password: %v", err)
			}
			continue
		}
		if sshdeck.ErrorCode(err) != sshdeck.Invalid || sshdeck.ErrorMessage(err) != want {
			t.Fatalf("HashPassword of %d bytes: %v; want %q", len(password), err, want)
		}
	}
	for _, password := range []string{"äöüßéèàç", strings.Repeat("x", 1024), strings.Repeat("é", 512)} {
		if _, err := HashPassword(ctx, password, cheapParams); err != nil {
			t.Fatalf("HashPassword of %d bytes: %v", len(password), err)
		}
	}

	// A login is refused the same way for what can never be a password,
	// but a short one still verifies: the minimum is for new passwords.
	h, _ := HashPassword(ctx, "correct horse", cheapParams)
	for _, password := range []string{"", strings.Repeat("x", 1025)} {
		if ok, err := VerifyPassword(ctx, h, password); ok || sshdeck.ErrorCode(err) != sshdeck.Invalid {
			t.Fatalf("VerifyPassword of %d bytes: %t, %v", len(password), ok, err)
		}
		if err := VerifyNoPassword(ctx, password); sshdeck.ErrorCode(err) != sshdeck.Invalid {
			t.Fatalf("VerifyNoPassword of %d bytes: %v", len(password), err)
		}
	}
	if ok, err := VerifyPassword(ctx, h, "short"); ok || err != nil {
		t.Fatalf("VerifyPassword of a short password: %t, %v", ok, err)
	}
}

func TestHashPasswordRefusesBadParams(t *testing.T) {
	for _, p := range []PasswordParams{
		{},
		{Memory: 64, Time: 0, Threads: 1, SaltLen: 16, KeyLen: 32},
		{Memory: 64, Time: 1, Threads: 0, SaltLen: 16, KeyLen: 32},
		{Memory: 8, Time: 1, Threads: 2, SaltLen: 16, KeyLen: 32},
		{Memory: 2 << 20, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32},
		{Memory: 64, Time: 65, Threads: 1, SaltLen: 16, KeyLen: 32},
		{Memory: 64, Time: 1, Threads: 1, SaltLen: 4, KeyLen: 32},
		{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 0},
		{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 1 << 20},
	} {
		if h, err := HashPassword(context.Background(), "correct horse", p); err == nil || sshdeck.ErrorCode(err) != sshdeck.Internal {
			t.Fatalf("HashPassword with %+v = %q, %v", p, h, err)
		}
	}
}

// TestPasswordMalformedHash: a corrupt record is an internal error that
// does not quote it, never a panic nor an absurd allocation.
func TestPasswordMalformedHash(t *testing.T) {
	salt := base64.RawStdEncoding.EncodeToString([]byte("0123456789abcdef"))
	key := base64.RawStdEncoding.EncodeToString(make([]byte, 32))
	good := "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key
	if _, _, _, err := decodeHash(good); err != nil {
		t.Fatalf("the base case does not parse: %v", err)
	}
	withParams := func(params string) string { return "$argon2id$v=19$" + params + "$" + salt + "$" + key }
	for name, encoded := range map[string]string{
		"empty":               "",
		"argon2i":             "$argon2i$v=19$m=64,t=1,p=1$" + salt + "$" + key,
		"argon2d":             "$argon2d$v=19$m=64,t=1,p=1$" + salt + "$" + key,
		"bcrypt":              "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy",
		"version 16":          "$argon2id$v=16$m=64,t=1,p=1$" + salt + "$" + key,
		"no version":          "$argon2id$m=64,t=1,p=1$" + salt + "$" + key,
		"no hash":             "$argon2id$v=19$m=64,t=1,p=1$" + salt,
		"empty hash":          "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$",
		"no salt":             "$argon2id$v=19$m=64,t=1,p=1$" + key,
		"extra part":          good + "$" + key,
		"trailing newline":    good + "\n",
		"no params":           "$argon2id$v=19$$" + salt + "$" + key,
		"salt not base64":     "$argon2id$v=19$m=64,t=1,p=1$!!!!!!!!$" + key,
		"hash not base64":     "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$****",
		"padded salt":         "$argon2id$v=19$m=64,t=1,p=1$" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef")) + "$" + key,
		"url-safe base64":     "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + base64.RawURLEncoding.EncodeToString([]byte{0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff}),
		"salt too short":      "$argon2id$v=19$m=64,t=1,p=1$" + base64.RawStdEncoding.EncodeToString([]byte("1234567")) + "$" + key,
		"salt too long":       "$argon2id$v=19$m=64,t=1,p=1$" + base64.RawStdEncoding.EncodeToString(make([]byte, 65)) + "$" + key,
		"key too short":       "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + base64.RawStdEncoding.EncodeToString(make([]byte, 8)),
		"key too long":        "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + base64.RawStdEncoding.EncodeToString(make([]byte, 1<<20)),
		"memory 2 GiB":        withParams("m=2097152,t=1,p=1"),
		"memory max uint32":   withParams("m=4294967295,t=1,p=1"),
		"memory overflow":     withParams("m=4294967296,t=1,p=1"),
		"memory below 8p":     withParams("m=15,t=1,p=2"),
		"memory zero":         withParams("m=0,t=1,p=1"),
		"time zero":           withParams("m=64,t=0,p=1"),
		"time 65":             withParams("m=64,t=65,p=1"),
		"time huge":           withParams("m=64,t=4000000000,p=1"),
		"threads zero":        withParams("m=64,t=1,p=0"),
		"threads 256":         withParams("m=4096,t=1,p=256"),
		"negative":            withParams("m=-64,t=1,p=1"),
		"plus sign":           withParams("m=+64,t=1,p=1"),
		"leading zero":        withParams("m=064,t=1,p=1"),
		"hex":                 withParams("m=0x40,t=1,p=1"),
		"space":               withParams("m=64, t=1,p=1"),
		"params out of order": withParams("t=1,m=64,p=1"),
		"missing p":           withParams("m=64,t=1"),
		"extra param":         withParams("m=64,t=1,p=1,keyid=x"),
		"unnamed":             withParams("64,1,1"),
		"empty value":         withParams("m=,t=1,p=1"),
	} {
		p, s, k, err := decodeHash(encoded)
		if !errors.Is(err, errMalformedHash) || s != nil || k != nil {
			t.Fatalf("%s: decodeHash = %+v, %v", name, p, err)
		}
		ok, err := VerifyPassword(context.Background(), encoded, "correct horse")
		if ok || !errors.Is(err, errMalformedHash) || sshdeck.ErrorCode(err) != sshdeck.Internal {
			t.Fatalf("%s: VerifyPassword = %t, %v", name, ok, err)
		}
		if strings.Contains(err.Error(), "correct horse") || (len(encoded) > 8 && strings.Contains(err.Error(), encoded[8:])) {
			t.Fatalf("%s: the error quotes its input: %v", name, err)
		}
		if !NeedsRehash(encoded, DefaultPasswordParams) {
			t.Fatalf("%s: NeedsRehash false", name)
		}
	}
}

// TestVerifyNoPassword: the dummy hash has today's default params, so an
// unknown user costs what a known one does, and it matches no password.
func TestVerifyNoPassword(t *testing.T) {
	if h := dummyHash(); NeedsRehash(h, DefaultPasswordParams) || h != dummyHash() {
		t.Fatalf("dummy hash %q", h)
	}
	ctx := context.Background()
	if err := VerifyNoPassword(ctx, "correct horse"); err != nil {
		t.Fatal(err)
	}
	if ok, err := VerifyPassword(ctx, dummyHash(), ""); ok || err == nil {
		t.Fatal("the dummy hash matched the empty password")
	}
	n := 0
	l := newHashLimiter(1)
	l.held = func() { n++ }
	useLimiter(t, l)
	if err := VerifyNoPassword(ctx, "correct horse"); err != nil || n != 1 {
		t.Fatalf("VerifyNoPassword: %v, %d computations", err, n)
	}
}

// TestPasswordLimiterBounds runs 20 verifications at once through a
// limiter of 2, in a synctest bubble: synctest.Wait returns once every
// goroutine is blocked, either in its slot (held there by the test) or
// waiting for one, so the count of those inside is exact, whatever the
// scheduling, and no timing is involved.
func TestPasswordLimiterBounds(t *testing.T) {
	h, err := HashPassword(context.Background(), "correct horse", cheapParams)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		const workers, slots = 20, 2
		var (
			mu          sync.Mutex
			inside, ran int
		)
		gate := make(chan struct{})
		l := newHashLimiter(slots)
		l.held = func() {
			mu.Lock()
			inside++
			ran++
			mu.Unlock()
			<-gate
			mu.Lock()
			inside--
			mu.Unlock()
		}
		useLimiter(t, l)
		count := func() (int, int) {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return inside, ran
		}

		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for i := range workers {
			wg.Go(func() {
				password := "correct horse"
				if i%2 == 1 {
					password = "wrong horse!"
				}
				ok, err := VerifyPassword(context.Background(), h, password)
				if err == nil && ok != (i%2 == 0) {
					err = fmt.Errorf("verification %d: %t", i, ok)
				}
				errs <- err
			})
		}
		for done := 0; done < workers; done++ {
			n, r := count()
			if want := min(slots, workers-done); n != want || r != done+want {
				close(gate) // lets them all go, so that the bubble can end
				wg.Wait()
				t.Fatalf("after %d done: %d inside and %d begun, want %d and %d", done, n, r, want, done+want)
			}
			gate <- struct{}{} // lets one go: one more may come in
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestPasswordLimiterHonoursContext: a computation waiting for a slot
// gives up when its context ends, and an ended context is refused even
// with a slot free.
func TestPasswordLimiterHonoursContext(t *testing.T) {
	h, err := HashPassword(context.Background(), "correct horse", cheapParams)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		l := newHashLimiter(1)
		release := make(chan struct{})
		holding := true
		l.held = func() {
			if holding {
				holding = false
				<-release
			}
		}
		useLimiter(t, l)

		// One computation holds the only slot.
		holder := make(chan error, 1)
		go func() {
			_, err := VerifyPassword(context.Background(), h, "correct horse")
			holder <- err
		}()
		synctest.Wait()

		// Three wait for it, and their context ends while they do.
		ctx, cancel := context.WithCancel(context.Background())
		waiters := make(chan error, 3)
		go func() {
			_, err := VerifyPassword(ctx, h, "correct horse")
			waiters <- err
		}()
		go func() {
			_, err := HashPassword(ctx, "correct horse", cheapParams)
			waiters <- err
		}()
		go func() { waiters <- VerifyNoPassword(ctx, "correct horse") }()
		synctest.Wait()
		if len(waiters) != 0 {
			t.Fatal("a computation did not wait for the slot")
		}
		cancel()
		for range 3 {
			if err := <-waiters; !errors.Is(err, context.Canceled) {
				t.Fatalf("waiting = %v, want context.Canceled", err)
			}
		}

		close(release)
		if err := <-holder; err != nil {
			t.Fatal(err)
		}
		if _, err := VerifyPassword(ctx, h, "correct horse"); !errors.Is(err, context.Canceled) {
			t.Fatalf("VerifyPassword with the slot free = %v, want context.Canceled", err)
		}
		if ok, err := VerifyPassword(context.Background(), h, "correct horse"); err != nil || !ok {
			t.Fatalf("after release: %t, %v", ok, err)
		}
	})
}

func TestNewHashLimiterAtLeastOne(t *testing.T) {
	for _, n := range []int{-1, 0, 1} {
		if c := cap(newHashLimiter(n).slots); c != 1 {
			t.Fatalf("newHashLimiter(%d) has %d slots", n, c)
		}
	}
	if c := cap(passwordWork.slots); c < 1 {
		t.Fatalf("passwordWork has %d slots", c)
	}
}

// BenchmarkPasswordVerify measures one login's argon2id with the default
// params, on one thread. ns/op is CPU time here, near enough; a Lambda of
// 256 MB gets about 0.145 of a vCPU, so its wall time per login is about
// ns/op / 0.145 (some 7 times longer), and B/op shows the 19 MiB each
// verification holds while it runs.
func BenchmarkPasswordVerify(b *testing.B) {
	ctx := context.Background()
	h, err := HashPassword(ctx, "correct horse battery staple", DefaultPasswordParams)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := VerifyPassword(ctx, h, "correct horse battery staple"); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
