package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// PasswordParams are the argon2id costs of a password hash. They are
// written into every hash, so a hash keeps verifying with its own costs
// after DefaultPasswordParams changes; NeedsRehash says when to redo one.
type PasswordParams struct {
	Memory  uint32 // KiB
	Time    uint32 // passes over the memory
	Threads uint8  // lanes
	SaltLen uint32 // bytes
	KeyLen  uint32 // bytes
}

// DefaultPasswordParams are OWASP's argon2id recommendation (19 MiB, two
// passes) with one lane: a Lambda of 256 MB has a fraction of one vCPU, so
// more lanes would only share the same time slice while multiplying the
// goroutines.
var DefaultPasswordParams = PasswordParams{Memory: 19 * 1024, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}

// The password lengths a new password may have. The lower bound is a
// policy and applies to new passwords only; the upper one bounds the work
// an attacker can ask of a verification too.
const (
	minPasswordRunes = 8
	maxPasswordBytes = 1024
)

// The bounds of the params a hash may carry. A stored hash is trusted only
// so far: a corrupt or forged record must not make a login allocate more
// than 1 GiB or loop for minutes.
const (
	maxPasswordMemory = 1 << 20 // KiB: 1 GiB
	maxPasswordTime   = 64
	minSaltLen        = 8 // argon2's own minimum
	maxSaltLen        = 64
	minKeyLen         = 16
	maxKeyLen         = 64
)

const phcPrefix = "$argon2id$v=19$"

// errMalformedHash is the (internal) error of a stored hash that does not
// parse. It never quotes the hash.
var errMalformedHash = errors.New("auth: stored password hash is malformed")

func malformed(what string) error { return fmt.Errorf("%w: %s", errMalformedHash, what) }

// checkPassword refuses what can never be a password, for a new password
// and a login alike: the answer does not depend on any user, so it tells
// an attacker nothing. The messages never hold the password.
func checkPassword(password string) error {
	switch {
	case password == "":
		return sshdeck.Errorf(sshdeck.Invalid, "password must not be empty")
	case len(password) > maxPasswordBytes:
		return sshdeck.Errorf(sshdeck.Invalid, "password must be at most %d bytes", maxPasswordBytes)
	}
	return nil
}

// check reports params outside the bounds a stored hash may carry.
func (p PasswordParams) check() error {
	switch {
	case p.Threads < 1:
		return errors.New("threads must be at least 1")
	case p.Memory < 8*uint32(p.Threads) || p.Memory > maxPasswordMemory:
		return fmt.Errorf("memory must be %d to %d KiB", 8*uint32(p.Threads), maxPasswordMemory)
	case p.Time < 1 || p.Time > maxPasswordTime:
		return fmt.Errorf("time must be 1 to %d", maxPasswordTime)
	case p.SaltLen < minSaltLen || p.SaltLen > maxSaltLen:
		return fmt.Errorf("salt must be %d to %d bytes", minSaltLen, maxSaltLen)
	case p.KeyLen < minKeyLen || p.KeyLen > maxKeyLen:
		return fmt.Errorf("key must be %d to %d bytes", minKeyLen, maxKeyLen)
	}
	return nil
}

// HashPassword returns the argon2id hash of a new password in PHC form,
// $argon2id$v=19$m=…,t=…,p=…$salt$hash with both in unpadded standard
// base64, as the reference implementation and its argon2 CLI write it. A
// password that is empty, shorter than 8 characters or longer than 1024
// bytes is Invalid. It waits for a slot of passwordWork (see hashLimiter)
// and returns ctx.Err() if ctx ends first.
func HashPassword(ctx context.Context, password string, p PasswordParams) (string, error) {
	if err := checkPassword(password); err != nil {
		return "", err
	}
	if utf8.RuneCountInString(password) < minPasswordRunes {
		return "", sshdeck.Errorf(sshdeck.Invalid, "password must be at least %d characters", minPasswordRunes)
	}
	if err := p.check(); err != nil {
		return "", fmt.Errorf("auth: password params: %w", err)
	}
	salt := make([]byte, p.SaltLen)
	rand.Read(salt) // never fails (crypto/rand panics if the OS has no randomness)
	return hashPassword(ctx, password, salt, p)
}

// hashPassword is HashPassword with the salt given, for the known-answer
// tests.
func hashPassword(ctx context.Context, password string, salt []byte, p PasswordParams) (string, error) {
	var key []byte
	err := passwordWork.run(ctx, func() {
		key = argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
	})
	if err != nil {
		return "", err
	}
	return encodeHash(p, salt, key), nil
}

func encodeHash(p PasswordParams, salt, key []byte) string {
	return fmt.Sprintf("%sm=%d,t=%d,p=%d$%s$%s", phcPrefix, p.Memory, p.Time, p.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// VerifyPassword reports whether password is the one encoded was made
// from, computing with the params written in encoded and comparing in
// constant time. A malformed encoded (a corrupt record) is an internal
// error; a password that is empty or over 1024 bytes is Invalid, without
// any hashing. Like HashPassword it waits for a slot of passwordWork.
func VerifyPassword(ctx context.Context, encoded, password string) (ok bool, err error) {
	if err := checkPassword(password); err != nil {
		return false, err
	}
	p, salt, key, err := decodeHash(encoded)
	if err != nil {
		return false, err
	}
	var got []byte
	err = passwordWork.run(ctx, func() {
		got = argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
	})
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// NeedsRehash reports whether encoded was made with params other than p
// (or does not parse): a login that verified the password then stores a
// new hash of it, so that costs raised in DefaultPasswordParams reach
// every user who logs in.
func NeedsRehash(encoded string, p PasswordParams) bool {
	have, _, _, err := decodeHash(encoded)
	return err != nil || have != p
}

// decodeHash parses a PHC argon2id string, version 19 only, with its
// params in the order m, t, p that the reference implementation writes.
func decodeHash(encoded string) (p PasswordParams, salt, key []byte, err error) {
	rest, ok := strings.CutPrefix(encoded, phcPrefix)
	if !ok {
		return p, nil, nil, malformed("not an argon2id v=19 hash")
	}
	parts := strings.Split(rest, "$")
	if len(parts) != 3 {
		return p, nil, nil, malformed("want params, salt and hash")
	}
	if p, err = decodeParams(parts[0]); err != nil {
		return p, nil, nil, err
	}
	if salt, ok = decodeB64(parts[1]); !ok {
		return p, nil, nil, malformed("salt is not unpadded base64")
	}
	if key, ok = decodeB64(parts[2]); !ok {
		return p, nil, nil, malformed("hash is not unpadded base64")
	}
	// Capped so that no length wraps around uint32 into the bounds.
	p.SaltLen, p.KeyLen = uint32(min(len(salt), maxSaltLen+1)), uint32(min(len(key), maxKeyLen+1))
	if err := p.check(); err != nil {
		return p, nil, nil, malformed(err.Error())
	}
	return p, salt, key, nil
}

// decodeB64 decodes unpadded standard base64 in its one canonical form:
// the decoder alone would skip line breaks and accept stray low bits.
func decodeB64(s string) ([]byte, bool) {
	b, err := base64.RawStdEncoding.DecodeString(s)
	return b, err == nil && base64.RawStdEncoding.EncodeToString(b) == s
}

// decodeParams parses "m=19456,t=2,p=1", each a decimal without sign or
// leading zero that fits its field (threads 1 to 255).
func decodeParams(s string) (PasswordParams, error) {
	var p PasswordParams
	fields := strings.Split(s, ",")
	if len(fields) != 3 {
		return p, malformed("want m, t and p")
	}
	var vals [3]uint64
	for i, name := range []string{"m", "t", "p"} {
		v, ok := strings.CutPrefix(fields[i], name+"=")
		if !ok {
			return p, malformed("want m, t and p")
		}
		bits := 32
		if name == "p" {
			bits = 8
		}
		n, err := strconv.ParseUint(v, 10, bits)
		if err != nil || strconv.FormatUint(n, 10) != v {
			return p, malformed(name + " is not a decimal in range")
		}
		vals[i] = n
	}
	p.Memory, p.Time, p.Threads = uint32(vals[0]), uint32(vals[1]), uint8(vals[2])
	return p, nil
}

// dummyHash is a hash with DefaultPasswordParams of no password: random
// salt and key, so that nothing can match it, and no argon2 run to make it.
var dummyHash = sync.OnceValue(func() string {
	p := DefaultPasswordParams
	salt, key := make([]byte, p.SaltLen), make([]byte, p.KeyLen)
	rand.Read(salt)
	rand.Read(key)
	return encodeHash(p, salt, key)
})

// VerifyNoPassword spends the work of VerifyPassword against a hash made
// with DefaultPasswordParams, and fails the same way on a password of the
// wrong length. A login whose user name does not exist, or whose user has
// no password, calls it so that its 401 takes as long as a wrong password's
// and the timing does not tell which user names exist. (A user whose hash
// still has older params answers in its own time until it logs in again.)
func VerifyNoPassword(ctx context.Context, password string) error {
	_, err := VerifyPassword(ctx, dummyHash(), password)
	return err
}
