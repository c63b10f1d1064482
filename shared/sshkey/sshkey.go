// Package sshkey checks the private keys clients give sshdeck, through
// golang.org/x/crypto/ssh, the same parser the tunnel service signs with.
// Its errors are *sshdeck.Error with code Invalid and never quote the key.
package sshkey

import (
	"bytes"
	"encoding/pem"
	"errors"
	"slices"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Auto lets the key say what algorithm it is.
const Auto = "auto"

// MaxKDFRounds is the most bcrypt rounds an encrypted OpenSSH key may ask
// for. Decrypting costs CPU in proportion to them, on every parse (a
// request, each dial of a tunnel): ssh-keygen's default is 16 and -a 100
// a common choice, while x/crypto/ssh takes up to 2048, seconds of CPU
// that one request could make the service spend twice.
const MaxKDFRounds = 128

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
		if rounds := bcryptRounds(key); rounds > MaxKDFRounds {
			return nil, sshdeck.Errorf(sshdeck.Invalid, "key is encrypted with %d bcrypt rounds; at most %d are accepted (ssh-keygen's default is 16): re-encrypt it with ssh-keygen -p -a 64", rounds, MaxKDFRounds)
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

// bcryptRounds returns the bcrypt rounds of an encrypted OpenSSH private
// key (the first PEM block, as ssh.ParsePrivateKey reads it), or 0.
func bcryptRounds(key string) uint32 {
	block, _ := pem.Decode([]byte(key))
	if block == nil || block.Type != "OPENSSH PRIVATE KEY" {
		return 0
	}
	const magic = "openssh-key-v1\x00"
	rest, ok := bytes.CutPrefix(block.Bytes, []byte(magic))
	if !ok {
		return 0
	}
	var header struct {
		CipherName, KdfName, KdfOpts string
		Rest                         []byte `ssh:"rest"`
	}
	if ssh.Unmarshal(rest, &header) != nil || header.KdfName != "bcrypt" {
		return 0
	}
	var opts struct {
		Salt   string
		Rounds uint32
	}
	if ssh.Unmarshal([]byte(header.KdfOpts), &opts) != nil {
		return 0
	}
	return opts.Rounds
}
