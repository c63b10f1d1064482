package secret

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// KMSAPI is the part of *kms.Client the keyring uses.
type KMSAPI interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// kmsEncryptionContext is sent with every GenerateDataKey and Decrypt. KMS
// binds it to the wrapped key, so a blob made for another purpose (or by
// another application sharing the KMS key) is refused, and it is logged in
// CloudTrail with each call, so a reader of the trail sees what every
// Decrypt was for. It must never change: a changed value would make every
// stored envelope unopenable.
var kmsEncryptionContext = map[string]string{"purpose": "sshdeck-credentials"}

// unwrapCacheSize bounds the keys an instance remembers. Each container that
// ever sealed contributes one, so the bound is only reached by a flood of
// distinct blobs; clearing then is simpler than LRU and costs one Decrypt per
// live key.
const unwrapCacheSize = 1024

// KMSKeyring wraps data keys with an AWS KMS key. Each instance (one per
// Lambda container or tunnel replica) makes one data key on first use and
// keeps it for its life, so sealing costs one KMS call per container, not
// one per field; opening costs one Decrypt per distinct data key seen.
type KMSKeyring struct {
	client KMSAPI
	keyID  string

	genMu sync.Mutex                 // held across GenerateDataKey so concurrent first calls make one
	own   atomic.Pointer[kmsDataKey] // apart from keys, so clearing them never forgets it

	mu   sync.Mutex
	keys map[string][]byte // unwrapped keys by wrapped form, other than own
}

type kmsDataKey struct{ key, wrapped []byte }

// NewKMSKeyring returns a keyring over the KMS key keyID (id, ARN or alias).
func NewKMSKeyring(client KMSAPI, keyID string) *KMSKeyring {
	return &KMSKeyring{client: client, keyID: keyID, keys: make(map[string][]byte)}
}

// DataKey returns this instance's data key, asking KMS for it on first use.
// A failed call is not remembered: the next call asks again.
func (k *KMSKeyring) DataKey(ctx context.Context) ([]byte, []byte, error) {
	if own := k.own.Load(); own != nil {
		return own.key, own.wrapped, nil
	}
	k.genMu.Lock()
	defer k.genMu.Unlock()
	if own := k.own.Load(); own != nil { // made while we waited
		return own.key, own.wrapped, nil
	}
	out, err := k.client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId:             &k.keyID,
		KeySpec:           types.DataKeySpecAes256,
		EncryptionContext: kmsEncryptionContext,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("kms generate data key: %w", err)
	}
	if len(out.Plaintext) != KeySize {
		return nil, nil, fmt.Errorf("kms generate data key: got %d bytes, want %d", len(out.Plaintext), KeySize)
	}
	if len(out.CiphertextBlob) == 0 {
		return nil, nil, errors.New("kms generate data key: no ciphertext blob")
	}
	own := &kmsDataKey{key: out.Plaintext, wrapped: out.CiphertextBlob}
	k.own.Store(own)
	return own.key, own.wrapped, nil
}

// Unwrap returns the data key of a blob made by any instance on the same KMS
// key, calling KMS only for a blob it has not seen.
func (k *KMSKeyring) Unwrap(ctx context.Context, wrapped []byte) ([]byte, error) {
	if own := k.own.Load(); own != nil && bytes.Equal(wrapped, own.wrapped) {
		return own.key, nil
	}
	k.mu.Lock()
	key, ok := k.keys[string(wrapped)]
	k.mu.Unlock()
	if ok {
		return key, nil
	}
	// KeyId and the context make KMS refuse a blob of another key or purpose
	// instead of decrypting whatever it is handed.
	out, err := k.client.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob:    wrapped,
		KeyId:             &k.keyID,
		EncryptionContext: kmsEncryptionContext,
	})
	if err != nil {
		return nil, fmt.Errorf("kms decrypt data key: %w", err)
	}
	if len(out.Plaintext) != KeySize {
		return nil, fmt.Errorf("kms decrypt data key: got %d bytes, want %d", len(out.Plaintext), KeySize)
	}
	k.mu.Lock()
	if len(k.keys) >= unwrapCacheSize {
		clear(k.keys)
	}
	k.keys[string(wrapped)] = out.Plaintext
	k.mu.Unlock()
	return out.Plaintext, nil
}
