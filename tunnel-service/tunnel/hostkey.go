package tunnel

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// ParsePin checks a host key pin as a client gives it: a SHA256:
// fingerprint, or an authorized_keys line (options and comment allowed).
// It returns the pin as stored: the fingerprint as given, or the key alone
// in authorized_keys format.
func ParsePin(pin string) (string, error) {
	pin = strings.TrimSpace(pin)
	if strings.ContainsAny(pin, "\r\n") {
		// ParseAuthorizedKey would take the first line and drop the rest.
		return "", sshdeck.Errorf(sshdeck.Invalid, "is more than one line: give one key")
	}
	if fp, ok := strings.CutPrefix(pin, "SHA256:"); ok {
		if len(fp) != 43 || strings.Trim(fp, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") != "" {
			return "", sshdeck.Errorf(sshdeck.Invalid, "is not a SHA256 fingerprint (SHA256: and 43 base64 characters)")
		}
		return pin, nil
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(pin))
	if err != nil {
		return "", sshdeck.Errorf(sshdeck.Invalid, "is neither a SHA256: fingerprint nor a public key line")
	}
	return marshalKey(key), nil
}

func marshalKey(key ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
}

// hostKeys verifies the host keys of one owner's tunnels: against the
// hop's pin when it has one, else against the first key seen at the
// address, which the store remembers for every replica.
type hostKeys struct {
	store sshdeck.TunnelStore
	now   func() time.Time
}

// verifier is the host key check of one dial. checked reports whether the
// host's key was accepted, so that a handshake failing after it is known
// to have failed in authentication.
type verifier struct {
	keys    *hostKeys
	ctx     context.Context
	owner   string
	addr    string // where the key is remembered: the hop's address, with the path to it (newPath)
	pin     string
	known   string      // the key remembered for addr, read by prepare
	checked atomic.Bool // set by the callback, which runs in the handshake's goroutine
}

// prepare reads the key remembered for the address, when there is no pin,
// and returns the host key algorithms that make the server present the key
// the verifier expects; nil (the defaults) when it does not know which. A
// server with several host keys would otherwise present whichever type
// the defaults prefer, and fail a remembered key of another type.
func (v *verifier) prepare() ([]string, error) {
	line := v.pin
	if line == "" {
		known, err := v.keys.store.KnownHost(v.ctx, v.owner, v.addr)
		if sshdeck.ErrorCode(err) == sshdeck.NotFound {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		v.known, line = known.Key, known.Key
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return nil, nil // a fingerprint pin: any key type may match it
	}
	if key.Type() == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}, nil
	}
	return []string{key.Type()}, nil
}

// callback is the ssh.HostKeyCallback.
func (v *verifier) callback(_ string, _ net.Addr, key ssh.PublicKey) error {
	if err := v.check(key); err != nil {
		return err
	}
	v.checked.Store(true)
	return nil
}

func (v *verifier) check(key ssh.PublicKey) error {
	got := marshalKey(key)
	switch {
	case v.pin != "":
		if v.pin == ssh.FingerprintSHA256(key) || v.pin == got {
			return nil
		}
		return v.mismatch("the pinned key", key)
	case v.known == "":
		err := v.keys.store.AddKnownHost(v.ctx, &sshdeck.KnownHost{Owner: v.owner, Addr: v.addr, Key: got, CreatedAt: v.keys.now().UTC()})
		if sshdeck.ErrorCode(err) != sshdeck.Conflict {
			return err // nil: this key is now the one remembered
		}
		// Another connection remembered a key first: that one wins.
		known, err := v.keys.store.KnownHost(v.ctx, v.owner, v.addr)
		if err != nil {
			return err
		}
		v.known = known.Key
	}
	if v.known == got {
		return nil
	}
	return v.mismatch("the key remembered on first connection", key)
}

func (v *verifier) mismatch(want string, key ssh.PublicKey) error {
	return &keyMismatch{presented: key, want: want}
}

// keyMismatch is the host key check's error for a key that is not the one
// expected; handshake makes it the failure, naming the host (the verifier,
// which lives as long as its connection, holds no name of its own).
type keyMismatch struct {
	presented ssh.PublicKey
	want      string
}

func (e *keyMismatch) Error() string { return "the host key is not " + e.want }

// failure names the host that presented the key.
func (e *keyMismatch) failure(host string) *failure {
	return fail(sshdeck.TunnelErrHostKey, false, nil,
		"%s presented host key %s, which is not %s: the host was replaced, or someone is in the middle",
		host, ssh.FingerprintSHA256(e.presented), e.want)
}
