package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery besides Content-Type and User-Agent.
const (
	// HeaderEventID is the event's id: the audit record's, the body's id
	// and detail.id. A receiver dedupes by it; it is not signed, the body
	// that repeats it is.
	HeaderEventID = "X-Sshdeck-Event-Id"
	// HeaderTimestamp is when the attempt was signed, in Unix seconds.
	HeaderTimestamp = "X-Sshdeck-Timestamp"
	// HeaderSignature is "sha256=" and the hex of HMAC-SHA256(secret,
	// timestamp + "." + body).
	HeaderSignature = "X-Sshdeck-Signature"
)

// DefaultTolerance is how old (or how far ahead of the receiver's clock)
// a delivery's timestamp may be for Verify to accept it, Stripe's
// default: long enough for clocks apart by a little and a slow network,
// short enough that a captured request cannot be replayed for long.
const DefaultTolerance = 5 * time.Minute

// The errors of Verify (wrapped, with what was wrong).
var (
	// ErrSignature: the signature or the timestamp is missing or
	// malformed, or the signature is not the body's under the secret.
	ErrSignature = errors.New("webhook: invalid signature")
	// ErrTimestamp: the timestamp is further from the receiver's clock
	// than the tolerance: a replay, or a clock that is wrong.
	ErrTimestamp = errors.New("webhook: timestamp outside the tolerance")
)

const signaturePrefix = "sha256="

// sign is the value of HeaderSignature for body signed at timestamp.
// The timestamp is signed with the body so that a receiver that refuses
// old timestamps refuses a replayed request, whose timestamp cannot be
// changed without the secret.
func sign(secret string, timestamp int64, body []byte) string {
	return signaturePrefix + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret string, timestamp int64, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(strconv.AppendInt(nil, timestamp, 10))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a delivery as its receiver got it: its body is the one
// signed under secret (HeaderSignature), at a time (HeaderTimestamp)
// within tolerance of now. The error wraps ErrSignature or ErrTimestamp.
// A receiver verifies the body exactly as it arrived, before parsing it.
func Verify(secret string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	ts := header.Get(HeaderTimestamp)
	timestamp, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %q is not Unix seconds", ErrSignature, HeaderTimestamp, ts)
	}
	hexSig, ok := strings.CutPrefix(header.Get(HeaderSignature), signaturePrefix)
	if !ok {
		return fmt.Errorf("%w: %s does not begin with %q", ErrSignature, HeaderSignature, signaturePrefix)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return fmt.Errorf("%w: %s is not hex", ErrSignature, HeaderSignature)
	}
	// The signature first: a timestamp is worth comparing only once it is
	// known to be the sender's.
	if !hmac.Equal(got, mac(secret, timestamp, body)) {
		return fmt.Errorf("%w: it is not the body's and the timestamp's under the secret", ErrSignature)
	}
	if age := now.Sub(time.Unix(timestamp, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("%w: signed at %s, %s from now (tolerance %s)", ErrTimestamp,
			time.Unix(timestamp, 0).UTC().Format(time.RFC3339), age.Round(time.Second), tolerance)
	}
	return nil
}
