// Package sshkey checks the private keys clients give sshdeck, through
// golang.org/x/crypto/ssh, the same parser the tunnel service signs with.
// Its errors are *sshdeck.Error with code Invalid and never quote the key.
package sshkey

import (
	"errors"
	"slices"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Auto lets the key say what algorithm it is.
const Auto = "auto"

// algorithms maps every accepted keyType to the key type ssh reports for it:
// signature algorithms of RSA (rsa-sha2-*) are RSA keys.
var algorithms = map[string]string{
	ssh.KeyAlgoRSA:        ssh.KeyAlgoRSA,
	ssh.KeyAlgoRSASHA256:  ssh.KeyAlgoRSA,
	ssh.KeyAlgoRSASHA512:  ssh.KeyAlgoRSA,
	ssh.KeyAlgoDSA:        ssh.KeyAlgoDSA,
	ssh.KeyAlgoECDSA256:   ssh.KeyAlgoECDSA256,
	ssh.KeyAlgoECDSA384:   ssh.KeyAlgoECDSA384,
	ssh.KeyAlgoECDSA521:   ssh.KeyAlgoECDSA521,
	ssh.KeyAlgoED25519:    ssh.KeyAlgoED25519,
	ssh.KeyAlgoSKECDSA256: ssh.KeyAlgoSKECDSA256,
	ssh.KeyAlgoSKED25519:  ssh.KeyAlgoSKED25519,
}

// KeyTypes returns every accepted keyType, Auto first.
func KeyTypes() []string {
	types := []string{Auto}
	for t := range algorithms {
		types = append(types, t)
	}
	slices.Sort(types[1:])
	return types
}

// ValidKeyType reports whether t is Auto or an SSH key algorithm name.
func ValidKeyType(t string) bool {
	_, ok := algorithms[t]
	return ok || t == Auto
}

// Parse parses a PEM or OpenSSH private key, decrypting it with passphrase
// when it is encrypted, and checks it is of keyType (unless Auto).
func Parse(key, passphrase, keyType string) (ssh.Signer, error) {
	if !ValidKeyType(keyType) {
		return nil, sshdeck.Errorf(sshdeck.Invalid, "keyType %q is not \"auto\" or an SSH key algorithm", keyType)
	}
	signer, err := ssh.ParsePrivateKey([]byte(key))
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if passphrase == "" {
			return nil, sshdeck.Errorf(sshdeck.Invalid, "key is encrypted: keyPassword is required")
		}
		signer, err = ssh.ParsePrivateKeyWithPassphrase([]byte(key), []byte(passphrase))
		if err != nil {
			return nil, sshdeck.Errorf(sshdeck.Invalid, "key cannot be decrypted with keyPassword")
		}
	}
	if err != nil {
		return nil, sshdeck.Errorf(sshdeck.Invalid, "key is not a private key in PEM or OpenSSH format")
	}
	if got := signer.PublicKey().Type(); keyType != Auto && algorithms[keyType] != got {
		return nil, sshdeck.Errorf(sshdeck.Invalid, "key is %s but keyType is %s", got, keyType)
	}
	return signer, nil
}
