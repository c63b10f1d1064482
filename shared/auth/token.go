// Package auth issues and checks bearer tokens. A token is TokenPrefix
// followed by 43 base64url characters (256 random bits); only its SHA-256
// hash is stored, so a leaked store leaks no usable token.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// TokenPrefix makes tokens recognisable to people and secret scanners.
const TokenPrefix = "sshdeck_"

const secretBytes = 32

var secretLen = base64.RawURLEncoding.EncodedLen(secretBytes)

// NewToken returns a new bearer token and the hash to store for it.
func NewToken() (token, hash string) {
	b := make([]byte, secretBytes)
	rand.Read(b) // never fails (crypto/rand panics if the OS has no randomness)
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token)
}

// HashToken returns the hex SHA-256 of a token, its key in the store.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// WellFormed reports whether s has the shape of a token, so that garbage is
// refused without a store read.
func WellFormed(s string) bool {
	rest, ok := strings.CutPrefix(s, TokenPrefix)
	if !ok || len(rest) != secretLen {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil
}

// BearerToken returns the token of an Authorization header value
// ("Bearer <token>", scheme case-insensitive), and whether it had one.
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
