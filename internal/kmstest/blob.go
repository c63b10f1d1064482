package kmstest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
)

// A blob is the key's UUID, a nonce, and the data key sealed with AES-GCM
// under that key's master key with the canonical encryption context as
// additional data. Like a real KMS ciphertext it names its key, so Decrypt
// needs no KeyId, and it opens only with the context it was made with.
const uuidSize = 36

var errBlob = errors.New("kmstest: invalid ciphertext")

func wrap(keyUUID string, master, plaintext []byte, ec map[string]string) []byte {
	aead := newGCM(master)
	blob := make([]byte, uuidSize+aead.NonceSize(), uuidSize+aead.NonceSize()+len(plaintext)+aead.Overhead())
	copy(blob, keyUUID)
	rand.Read(blob[uuidSize:])
	return aead.Seal(blob, blob[uuidSize:], plaintext, canonical(ec))
}

// blobKey returns the UUID of the key a blob was made with.
func blobKey(blob []byte) (string, error) {
	if len(blob) < uuidSize {
		return "", errBlob
	}
	return string(blob[:uuidSize]), nil
}

func unwrap(master, blob []byte, ec map[string]string) ([]byte, error) {
	aead := newGCM(master)
	if len(blob) < uuidSize+aead.NonceSize()+aead.Overhead() {
		return nil, errBlob
	}
	nonce, sealed := blob[uuidSize:uuidSize+aead.NonceSize()], blob[uuidSize+aead.NonceSize():]
	plaintext, err := aead.Open(nil, nonce, sealed, canonical(ec))
	if err != nil {
		return nil, errBlob
	}
	return plaintext, nil
}

// canonical serialises an encryption context with sorted keys, each key and
// value length-prefixed so no two contexts serialise alike. As in KMS, no
// context and an empty one are the same.
func canonical(ec map[string]string) []byte {
	var out []byte
	for _, k := range slices.Sorted(maps.Keys(ec)) {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
		out = binary.AppendUvarint(out, uint64(len(ec[k])))
		out = append(out, ec[k]...)
	}
	return out
}

func newGCM(key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // master keys are made here, always 32 bytes
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}
