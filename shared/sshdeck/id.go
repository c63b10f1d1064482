package sshdeck

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns a random id with a prefix that names its kind ("usr_",
// "tok_", "alr_"): 64 random bits, unguessable and unique enough for ids
// that are also guarded by conditional writes.
func NewID(prefix string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
