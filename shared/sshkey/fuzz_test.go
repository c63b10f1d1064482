package sshkey

import (
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// FuzzParse: key parsing never panics, fails only with an Invalid error
// that quotes neither the key nor the passphrase, and a key it accepts is
// of the keyType asked for. Seeds (keys of every type, encrypted ones, PEM
// and OpenSSH, broken ones): testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, key, passphrase, keyType string) {
		signer, err := Parse(key, passphrase, keyType)
		if err != nil {
			if sshdeck.ErrorCode(err) != sshdeck.Invalid {
				t.Fatalf("Parse: %v, want Invalid", err)
			}
			msg := sshdeck.ErrorMessage(err)
			for _, secret := range []string{key, passphrase} {
				if len(secret) >= 8 && strings.Contains(msg, secret) {
					t.Fatalf("the error %q quotes the input", msg)
				}
			}
			return
		}
		if keyType != Auto && algorithms[keyType] != signer.PublicKey().Type() {
			t.Fatalf("keyType %s accepted a %s key", keyType, signer.PublicKey().Type())
		}
	})
}
