package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// signed is the header of body signed with secret at the time at.
func signed(secret string, at time.Time, body []byte) http.Header {
	h := http.Header{}
	h.Set(HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(HeaderSignature, sign(secret, at.Unix(), body))
	return h
}

// TestSignatureIsTheDocumentedHMAC pins the scheme to the value of the
// README's shell recipe:
// printf '%s' '1700000000.{"id":"aud_1"}' | openssl dgst -sha256 -hmac whsec-test
func TestSignatureIsTheDocumentedHMAC(t *testing.T) {
	const want = "sha256=1493b807d119705a03362f385a174d7f24954cca5e38d42a2883dde0e57018dd"
	if got := sign("whsec-test", 1700000000, []byte(`{"id":"aud_1"}`)); got != want {
		t.Fatalf("sign = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	const secret = "whsec-test"
	now := time.Date(2026, 11, 21, 15, 4, 5, 0, time.UTC)
	body := []byte(`{"id":"aud_1","detail":{"id":"aud_1","action":"create-host"}}`)
	if err := Verify(secret, signed(secret, now, body), body, now, DefaultTolerance); err != nil {
		t.Fatalf("a fresh delivery: %v", err)
	}
	if err := Verify(secret, signed(secret, now.Add(-4*time.Minute), body), body, now, DefaultTolerance); err != nil {
		t.Fatalf("a delivery within the tolerance: %v", err)
	}

	replayed := signed(secret, now, body)
	replayed.Set(HeaderTimestamp, strconv.FormatInt(now.Unix()+60, 10))
	noPrefix := signed(secret, now, body)
	noPrefix.Set(HeaderSignature, noPrefix.Get(HeaderSignature)[len("sha256="):])
	notHex := signed(secret, now, body)
	notHex.Set(HeaderSignature, "sha256=zz")
	noTimestamp := signed(secret, now, body)
	noTimestamp.Del(HeaderTimestamp)
	for _, c := range []struct {
		name   string
		secret string
		header http.Header
		body   string
		want   error
	}{
		{"a tampered body", secret, signed(secret, now, body), `{"id":"aud_1","detail":{"id":"aud_1","action":"delete-host"}}`, ErrSignature},
		{"another secret", "whsec-other", signed(secret, now, body), string(body), ErrSignature},
		{"a timestamp changed to pass as recent", secret, replayed, string(body), ErrSignature},
		{"a signature without its prefix", secret, noPrefix, string(body), ErrSignature},
		{"a signature that is not hex", secret, notHex, string(body), ErrSignature},
		{"no timestamp", secret, noTimestamp, string(body), ErrSignature},
		{"no headers", secret, http.Header{}, string(body), ErrSignature},
		{"an old delivery (a replay)", secret, signed(secret, now.Add(-6*time.Minute), body), string(body), ErrTimestamp},
		{"a delivery from the future", secret, signed(secret, now.Add(6*time.Minute), body), string(body), ErrTimestamp},
	} {
		err := Verify(c.secret, c.header, []byte(c.body), now, DefaultTolerance)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Verify = %v, want %v", c.name, err, c.want)
		}
	}
}
