package sshkey

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func marshal(t *testing.T, key any, passphrase string) string {
	t.Helper()
	var block *pem.Block
	var err error
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(key, "test")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(key, "test", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block))
}

func TestParse(t *testing.T) {
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ed := marshal(t, edKey, "")
	edLocked := marshal(t, edKey, "s3cret")
	rsaPEM := marshal(t, rsaKey, "")
	ecPEM := marshal(t, ecKey, "")
	pub, _ := ssh.NewPublicKey(edKey.Public())
	cases := []struct {
		name, key, pass, keyType string
		wantErr                  string
	}{
		{"ed25519 auto", ed, "", Auto, ""},
		{"ed25519 named", ed, "", "ssh-ed25519", ""},
		{"rsa as rsa-sha2-512", rsaPEM, "", "rsa-sha2-512", ""},
		{"ecdsa", ecPEM, "", "ecdsa-sha2-nistp256", ""},
		{"encrypted with passphrase", edLocked, "s3cret", Auto, ""},
		{"encrypted without passphrase", edLocked, "", Auto, "keyPassword is required"},
		{"encrypted wrong passphrase", edLocked, "nope", Auto, "cannot be decrypted"},
		{"type mismatch", ed, "", "ssh-rsa", "key is ssh-ed25519 but keyType is ssh-rsa"},
		{"unknown keyType", ed, "", "ssh-foo", "keyType \"ssh-foo\""},
		{"garbage", "not a key", "", Auto, "not a private key"},
		{"public key", string(ssh.MarshalAuthorizedKey(pub)), "", Auto, "not a private key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.key, c.pass, c.keyType)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, c.wantErr)
			}
			if sshdeck.ErrorCode(err) != sshdeck.Invalid {
				t.Fatalf("code = %s, want invalid", sshdeck.ErrorCode(err))
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") || (c.pass != "" && strings.Contains(err.Error(), c.pass)) {
				t.Fatal("error quotes the key or its passphrase")
			}
		})
	}
}

func TestKeyTypes(t *testing.T) {
	types := KeyTypes()
	if types[0] != Auto || len(types) != len(algorithms)+1 {
		t.Fatalf("KeyTypes = %v", types)
	}
	for _, kt := range types {
		if !ValidKeyType(kt) {
			t.Fatalf("%s listed but not valid", kt)
		}
	}
}

// TestKDFRounds: an encrypted OpenSSH key asking for more bcrypt rounds
// than MaxKDFRounds is refused before any round is run; one within them
// parses.
func TestKDFRounds(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("no ssh-keygen")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		rounds int
		ok     bool
	}{{16, true}, {MaxKDFRounds, true}, {MaxKDFRounds + 1, false}} {
		path := filepath.Join(dir, fmt.Sprintf("k%d", tc.rounds))
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-a", fmt.Sprint(tc.rounds), "-N", "pw", "-f", path).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
		key, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := bcryptRounds(string(key)); got != uint32(tc.rounds) {
			t.Errorf("bcryptRounds = %d, want %d", got, tc.rounds)
		}
		start := time.Now()
		_, err = Parse(string(key), "pw", Auto)
		if tc.ok != (err == nil) {
			t.Errorf("%d rounds: %v", tc.rounds, err)
		}
		if !tc.ok && (!strings.Contains(err.Error(), "bcrypt rounds") || time.Since(start) > time.Second) {
			t.Errorf("%d rounds: %v after %v, want a refusal at once", tc.rounds, err, time.Since(start))
		}
	}
}
