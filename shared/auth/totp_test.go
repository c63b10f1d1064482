package auth

import (
	"bytes"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// rfcSecret is the SHA-1 seed of RFC 6238, Appendix B.
var rfcSecret = []byte("12345678901234567890")

// rfcVectors are the SHA-1 rows of RFC 6238, Appendix B: Unix time and
// 8-digit TOTP.
var rfcVectors = []struct {
	unix int64
	code string
}{
	{59, "94287082"},
	{1111111109, "07081804"},
	{1111111111, "14050471"},
	{1234567890, "89005924"},
	{2000000000, "69279037"},
	{20000000000, "65353130"},
}

func TestTOTPRFC6238Vectors(t *testing.T) {
	for _, v := range rfcVectors {
		step := totpStep(time.Unix(v.unix, 0))
		if got := totpCode(rfcSecret, step, 8); got != v.code {
			t.Fatalf("T=%d (step %d): %s, want %s", v.unix, step, got, v.code)
		}
		six := v.code[2:]
		if got := totpCode(rfcSecret, step, 6); got != six {
			t.Fatalf("T=%d, 6 digits: %s, want %s", v.unix, got, six)
		}
		if got := TOTPCode(rfcSecret, time.Unix(v.unix, 0)); got != six {
			t.Fatalf("TOTPCode(T=%d) = %s, want %s", v.unix, got, six)
		}
		if s, ok := VerifyTOTP(rfcSecret, six, time.Unix(v.unix, 0), 0); !ok || s != step {
			t.Fatalf("VerifyTOTP(T=%d, %s) = %d, %t; want step %d", v.unix, six, s, ok, step)
		}
	}
	// The steps RFC 6238 lists beside them, in hex.
	for unix, step := range map[int64]int64{59: 0x1, 1111111109: 0x23523EC, 1234567890: 0x273EF07, 20000000000: 0x27BC86AA} {
		if got := totpStep(time.Unix(unix, 0)); got != step {
			t.Fatalf("step of T=%d: %#x, want %#x", unix, got, step)
		}
	}
}

// The window tests use a fixed secret and clock, so that a chance equality
// of two steps' codes (one in a million) cannot make them flaky: they
// pass or fail the same way every run.
var testNow = time.Unix(1_750_000_015, 0) // mid-step

func TestTOTPSkew(t *testing.T) {
	cur := totpStep(testNow)
	for d := int64(-3); d <= 3; d++ {
		step, ok := VerifyTOTP(rfcSecret, totpCode(rfcSecret, cur+d, 6), testNow, 0)
		if want := d >= -1 && d <= 1; ok != want || (ok && step != cur+d) {
			t.Fatalf("code of step cur%+d: step cur%+d, %t; want %t", d, step-cur, ok, want)
		}
	}
	// At the edges of a step the window moves with it.
	start := time.Unix(cur*totpPeriod, 0)
	if _, ok := VerifyTOTP(rfcSecret, totpCode(rfcSecret, cur-2, 6), start.Add(-time.Second), 0); !ok {
		t.Fatal("the last second of a step refused the code of the step before it")
	}
	if _, ok := VerifyTOTP(rfcSecret, totpCode(rfcSecret, cur+1, 6), start, 0); !ok {
		t.Fatal("the first second of a step refused the next step's code")
	}
	if _, ok := VerifyTOTP(rfcSecret, totpCode(rfcSecret, cur-1, 6), start.Add(totpPeriod*time.Second), 0); ok {
		t.Fatal("a code two steps old accepted")
	}
}

// TestTOTPReplay: the caller stores the step returned; a code of that
// step or an earlier one is refused after, even though it is right.
func TestTOTPReplay(t *testing.T) {
	cur := totpStep(testNow)
	code := totpCode(rfcSecret, cur, 6)
	step, ok := VerifyTOTP(rfcSecret, code, testNow, 0)
	if !ok || step != cur {
		t.Fatalf("first use: %d, %t", step, ok)
	}
	if _, ok := VerifyTOTP(rfcSecret, code, testNow, step); ok {
		t.Fatal("a used code accepted twice")
	}
	if _, ok := VerifyTOTP(rfcSecret, code, testNow.Add(20*time.Second), step); ok {
		t.Fatal("a used code accepted in the next step")
	}
	if _, ok := VerifyTOTP(rfcSecret, totpCode(rfcSecret, cur-1, 6), testNow, step); ok {
		t.Fatal("a code older than the last used accepted")
	}
	// The next step's code is still good once, and moves lastStep on.
	if s, ok := VerifyTOTP(rfcSecret, totpCode(rfcSecret, cur+1, 6), testNow, step); !ok || s != cur+1 {
		t.Fatalf("next step's code: %d, %t", s, ok)
	}
	if _, ok := VerifyTOTP(rfcSecret, code, testNow, cur+1); ok {
		t.Fatal("an older code accepted after a newer one")
	}
	// Wrong codes: one digit off, and another secret's right code.
	wrong := []byte(code)
	wrong[5] = '0' + (wrong[5]-'0'+1)%10
	if _, ok := VerifyTOTP(rfcSecret, string(wrong), testNow, 0); ok {
		t.Fatal("a wrong code accepted")
	}
	if _, ok := VerifyTOTP([]byte("12345678901234567891"), code, testNow, 0); ok {
		t.Fatal("a code of another secret accepted")
	}
}

func TestCheckTOTPShape(t *testing.T) {
	for _, good := range []string{"000000", "123456", "999999"} {
		if err := CheckTOTPShape(good); err != nil {
			t.Fatalf("%q: %v", good, err)
		}
	}
	for _, bad := range []string{"", "12345", "1234567", "12345a", "abcdef", "123 456", " 12345", "123456 ", "12345\n", "-12345", "+12345", "١٢٣٤٥٦", "１２３４５６", "12345６", "12\x0034"} {
		err := CheckTOTPShape(bad)
		if sshdeck.ErrorCode(err) != sshdeck.Invalid || sshdeck.ErrorMessage(err) != "totp must be 6 digits" {
			t.Fatalf("%q: %v", bad, err)
		}
		if _, ok := VerifyTOTP(rfcSecret, bad, time.Unix(59, 0), 0); ok {
			t.Fatalf("VerifyTOTP accepted %q", bad)
		}
	}
}

func TestTOTPSecretAndURL(t *testing.T) {
	a, b := NewTOTPSecret(), NewTOTPSecret()
	if len(a) != 20 || bytes.Equal(a, b) {
		t.Fatalf("secrets %x, %x", a, b)
	}
	if got := EncodeTOTPSecret(rfcSecret); got != "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ" {
		t.Fatalf("EncodeTOTPSecret = %q", got)
	}
	if enc := EncodeTOTPSecret(a); len(enc) != 32 || strings.Contains(enc, "=") {
		t.Fatalf("EncodeTOTPSecret = %q", enc)
	}

	for _, c := range []struct{ issuer, account, label string }{
		{"sshdeck", "alice", "sshdeck:alice"},
		{"ACME Co", "bob@example.com", "ACME Co:bob@example.com"},
		{"a:b+c", "c:d/e?f#g&h+i", "a%3Ab%2Bc:c%3Ad%2Fe%3Ff%23g&h%2Bi"},
		{"", "alice", "alice"},
	} {
		raw := TOTPURL(a, c.issuer, c.account)
		if strings.Contains(raw, "+") {
			t.Fatalf("%q holds a +, which apps read differently", raw)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if u.Scheme != "otpauth" || u.Host != "totp" {
			t.Fatalf("%q: scheme %q, host %q", raw, u.Scheme, u.Host)
		}
		// The label, split on its one unescaped colon, gives both parts back.
		label := strings.TrimPrefix(u.EscapedPath(), "/")
		if want := strings.ReplaceAll(c.label, " ", "%20"); label != want {
			t.Fatalf("%q: label %q, want %q", raw, label, want)
		}
		parts := strings.Split(label, ":")
		if c.issuer == "" {
			parts = append([]string{""}, parts...)
		}
		if len(parts) != 2 {
			t.Fatalf("%q: label %q has %d colons", raw, label, len(parts)-1)
		}
		issuer, err1 := url.PathUnescape(parts[0])
		account, err2 := url.PathUnescape(parts[1])
		if err1 != nil || err2 != nil || issuer != c.issuer || account != c.account {
			t.Fatalf("%q: label gives %q, %q (%v, %v)", raw, issuer, account, err1, err2)
		}
		q := u.Query()
		secret, err := totpEncoding.DecodeString(q.Get("secret"))
		if err != nil || !bytes.Equal(secret, a) || q.Get("secret") != EncodeTOTPSecret(a) {
			t.Fatalf("%q: secret %q (%v)", raw, q.Get("secret"), err)
		}
		if q.Get("issuer") != c.issuer || q.Get("algorithm") != "SHA1" || q.Get("digits") != "6" || q.Get("period") != "30" {
			t.Fatalf("%q: query %v", raw, q)
		}
		if _, ok := q["issuer"]; ok != (c.issuer != "") {
			t.Fatalf("%q: issuer given: %t", raw, ok)
		}
	}
}
