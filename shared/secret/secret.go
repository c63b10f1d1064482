// Package secret seals credential fields with AES-256-GCM under a data key
// before any store sees them. A Keyring supplies the data key and its wrapped
// form, which travels inside every envelope so that any instance holding the
// keyring can open it: locally the "wrapping" is the id of a key file, in AWS
// (KMSKeyring) it is the data key encrypted by KMS.
//
// Every envelope is bound to additional data naming the record and field it
// belongs to (see AD), so a ciphertext moved to another owner, record or field
// does not open.
package secret

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// KeySize is the size of a data key: AES-256.
const KeySize = 32

// version is the first byte of every envelope.
const version = 1

// ErrOpen is returned when an envelope cannot be opened: tampered, moved to
// another record, or sealed under a key this keyring does not have. Its text
// never includes key material or plaintext.
var ErrOpen = errors.New("secret: envelope cannot be opened")

// Keyring supplies data keys.
type Keyring interface {
	// DataKey returns the key to seal with and its wrapped form.
	DataKey(ctx context.Context) (key, wrapped []byte, err error)
	// Unwrap returns the key a wrapped form stands for.
	Unwrap(ctx context.Context, wrapped []byte) ([]byte, error)
}

// Sealer seals and opens envelopes with the keys of a Keyring. It keeps
// the AES-GCM cipher of each data key it used: setting one up (key
// expansion, GHASH tables) cost more than opening a password with it, and a
// list of hosts opens one per host.
type Sealer struct {
	keyring Keyring

	mu    sync.RWMutex
	aeads map[string]cipher.AEAD // by data key
}

// maxAEADs bounds Sealer.aeads (as the KMS keyring bounds its keys); past
// it, it starts over.
const maxAEADs = 1024

// NewSealer returns a Sealer over the keyring.
func NewSealer(k Keyring) *Sealer { return &Sealer{keyring: k, aeads: map[string]cipher.AEAD{}} }

// aead returns the cipher of a data key. An AES-GCM AEAD holds no state
// between calls, so one serves every goroutine.
func (s *Sealer) aead(key []byte) (cipher.AEAD, error) {
	s.mu.RLock()
	a, ok := s.aeads[string(key)]
	s.mu.RUnlock()
	if ok {
		return a, nil
	}
	a, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.aeads) >= maxAEADs {
		clear(s.aeads)
	}
	s.aeads[string(key)] = a
	s.mu.Unlock()
	return a, nil
}

// AD names the field of a record for the additional data of its envelope,
// e.g. AD("host", owner, "7", "password"). Parts are server-made ids and
// field names; they must not contain a slash.
func AD(parts ...string) string { return strings.Join(parts, "/") }

// Seal encrypts plaintext bound to ad. The envelope is
// version | uvarint len(wrapped) | wrapped | nonce | ciphertext+tag.
func (s *Sealer) Seal(ctx context.Context, plaintext []byte, ad string) ([]byte, error) {
	key, wrapped, err := s.keyring.DataKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("secret: data key: %w", err)
	}
	aead, err := s.aead(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 1+binary.MaxVarintLen64+len(wrapped)+aead.NonceSize()+len(plaintext)+aead.Overhead())
	out = append(out, version)
	out = binary.AppendUvarint(out, uint64(len(wrapped)))
	out = append(out, wrapped...)
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("secret: nonce: %w", err)
	}
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plaintext, []byte(ad)), nil
}

// Open decrypts an envelope made by Seal with the same ad.
func (s *Sealer) Open(ctx context.Context, envelope []byte, ad string) ([]byte, error) {
	if len(envelope) < 2 || envelope[0] != version {
		return nil, ErrOpen
	}
	n, size := binary.Uvarint(envelope[1:])
	if size <= 0 {
		return nil, ErrOpen
	}
	rest := envelope[1+size:]
	if uint64(len(rest)) < n {
		return nil, ErrOpen
	}
	wrapped, rest := rest[:n], rest[n:]
	key, err := s.keyring.Unwrap(ctx, wrapped)
	if err != nil {
		return nil, fmt.Errorf("secret: unwrap data key: %w", err)
	}
	aead, err := s.aead(key)
	if err != nil {
		return nil, err
	}
	if len(rest) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrOpen
	}
	nonce, ciphertext := rest[:aead.NonceSize()], rest[aead.NonceSize():]
	plaintext, err := aead.Open(nil, nonce, ciphertext, []byte(ad))
	if err != nil {
		return nil, ErrOpen
	}
	return plaintext, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret: data key has %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return cipher.NewGCM(block)
}
