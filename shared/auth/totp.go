package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"net/url"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// TOTP is RFC 6238 with the parameters every authenticator app takes by
// default: HMAC-SHA1, 30 s steps, 6 digits. A code of the step before or
// after the current one is accepted too, for clocks a little off and codes
// typed as they change.
const (
	totpPeriod = 30
	totpDigits = 6
	totpSkew   = 1
	// totpSecretBytes is the HMAC-SHA1 key length RFC 4226 recommends.
	totpSecretBytes = 20
)

// totpEncoding is how a secret is shown and put into the URL: RFC 4648
// base32 without padding, as the apps expect it.
var totpEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewTOTPSecret returns a new random secret of 160 bits.
func NewTOTPSecret() []byte {
	b := make([]byte, totpSecretBytes)
	rand.Read(b) // never fails (crypto/rand panics if the OS has no randomness)
	return b
}

// EncodeTOTPSecret returns the secret as a person types it into an app
// that cannot read the QR code.
func EncodeTOTPSecret(secret []byte) string { return totpEncoding.EncodeToString(secret) }

// TOTPURL returns the otpauth:// URL of the secret (the Key URI Format
// that authenticator apps read from a QR code), labelled issuer:account.
// The colon separates the two in the label, so one inside either is
// escaped; a space is written %20 and a + %2B everywhere, since some apps
// read a + as a space and others show it as is.
func TOTPURL(secret []byte, issuer, account string) string {
	label := labelEscape(account)
	q := url.Values{
		"secret":    {EncodeTOTPSecret(secret)},
		"algorithm": {"SHA1"},
		"digits":    {"6"},
		"period":    {"30"},
	}
	if issuer != "" {
		label = labelEscape(issuer) + ":" + label
		q.Set("issuer", issuer)
	}
	// Encode writes a space as + and a + as %2B: every + left is a space.
	return "otpauth://totp/" + label + "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
}

// labelEscape escapes one part of the label: PathEscape leaves : and +.
func labelEscape(s string) string {
	return strings.NewReplacer(":", "%3A", "+", "%2B").Replace(url.PathEscape(s))
}

// totpStep is the step of RFC 6238 at t: whole periods since the epoch.
func totpStep(t time.Time) int64 { return t.Unix() / totpPeriod }

// totpCode is the HOTP value (RFC 4226) of the secret at the counter step,
// by dynamic truncation, as digits decimal digits with leading zeros.
func totpCode(secret []byte, step int64, digits int) string {
	mac := hmac.New(sha1.New, secret)
	var counter [8]byte
	binary.BigEndian.PutUint64(counter[:], uint64(step))
	mac.Write(counter[:])
	sum := mac.Sum(nil)
	offset := sum[len(sum)-1] & 0x0f
	v := binary.BigEndian.Uint32(sum[offset:offset+4]) & 0x7fffffff
	code := make([]byte, digits)
	for i := digits - 1; i >= 0; i-- {
		code[i] = byte('0' + v%10)
		v /= 10
	}
	return string(code)
}

// TOTPCode is the secret's 6-digit code at the time: what an authenticator
// app shows then. The service only verifies codes (VerifyTOTP); clients
// that hold a secret, and tests that play the app, make them with this.
func TOTPCode(secret []byte, at time.Time) string {
	return totpCode(secret, totpStep(at), totpDigits)
}

// CheckTOTPShape refuses a code that is not exactly 6 ASCII digits, before
// any secret is read. The message does not echo the code.
func CheckTOTPShape(code string) error {
	if len(code) != totpDigits {
		return sshdeck.Errorf(sshdeck.Invalid, "totp must be 6 digits")
	}
	for i := range len(code) {
		if code[i] < '0' || code[i] > '9' {
			return sshdeck.Errorf(sshdeck.Invalid, "totp must be 6 digits")
		}
	}
	return nil
}

// VerifyTOTP reports whether code is the secret's code of a step within
// totpSkew of now's and after lastStep, and returns that step. The caller
// stores it as the new lastStep, so that a code once accepted, or any
// older one, is refused from then on: no code is accepted twice. Every
// candidate step is compared, in constant time, whatever matches.
func VerifyTOTP(secret []byte, code string, now time.Time, lastStep int64) (step int64, ok bool) {
	if CheckTOTPShape(code) != nil {
		return 0, false
	}
	cur := totpStep(now)
	for s := cur - totpSkew; s <= cur+totpSkew; s++ {
		match := subtle.ConstantTimeCompare([]byte(totpCode(secret, s, totpDigits)), []byte(code)) == 1
		if match && s > lastStep && !ok {
			step, ok = s, true
		}
	}
	return step, ok
}
