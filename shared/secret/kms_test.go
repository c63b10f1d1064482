package secret

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/sshdeck/sshdeck/internal/kmstest"
)

// Two keyrings over one fake KMS are two containers of the same deployment.
func TestKMSKeyringOpensAnotherContainersEnvelopes(t *testing.T) {
	kmsd := kmstest.Start(t)
	ctx := context.Background()
	sealer := NewSealer(NewKMSKeyring(kmsd.Client(), kmsd.KeyID))
	opener := NewSealer(NewKMSKeyring(kmsd.Client(), kmsd.KeyID))

	envs := make([][]byte, 5)
	for i := range envs {
		env, err := sealer.Seal(ctx, fmt.Appendf(nil, "hunter%d", i), AD("host", "usr_1", fmt.Sprint(i), "password"))
		if err != nil {
			t.Fatal(err)
		}
		envs[i] = env
	}
	for _, s := range []*Sealer{opener, sealer} {
		for i, env := range envs {
			got, err := s.Open(ctx, env, AD("host", "usr_1", fmt.Sprint(i), "password"))
			if err != nil || string(got) != fmt.Sprintf("hunter%d", i) {
				t.Fatalf("Open = %q, %v", got, err)
			}
		}
	}
	// One Decrypt: the opener's first envelope. The sealer knows its own key.
	if g, d := kmsd.Calls("GenerateDataKey"), kmsd.Calls("Decrypt"); g != 1 || d != 1 {
		t.Fatalf("GenerateDataKey %d, Decrypt %d calls; want 1, 1", g, d)
	}
}

func TestKMSKeyringMakesOneDataKeyUnderConcurrentFirstUse(t *testing.T) {
	kmsd := kmstest.Start(t)
	s := NewSealer(NewKMSKeyring(kmsd.Client(), kmsd.KeyID))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			<-start
			if _, err := s.Seal(context.Background(), []byte("hunter2"), "ad"); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := kmsd.Calls("GenerateDataKey"); n != 1 {
		t.Fatalf("GenerateDataKey called %d times, want 1", n)
	}
}

func TestKMSKeyringRefusesOtherKeysAndContexts(t *testing.T) {
	kmsd := kmstest.Start(t)
	ctx := context.Background()
	ours := NewKMSKeyring(kmsd.Client(), kmsd.KeyID)
	if _, _, err := ours.DataKey(ctx); err != nil { // a key of its own that must not leak either
		t.Fatal(err)
	}
	fromOtherKey := NewKMSKeyring(kmsd.Client(), kmsd.NewKey())
	withContext := func(ec map[string]string) Keyring {
		out, err := kmsd.Client().GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: &kmsd.KeyID, KeySpec: types.DataKeySpecAes256, EncryptionContext: ec})
		if err != nil {
			t.Fatal(err)
		}
		return fixedKeyring{out.Plaintext, out.CiphertextBlob}
	}
	for name, sealedBy := range map[string]Keyring{
		"other key":     fromOtherKey,
		"other context": withContext(map[string]string{"purpose": "something-else"}),
		"no context":    withContext(nil),
	} {
		t.Run(name, func(t *testing.T) {
			env, err := NewSealer(sealedBy).Seal(ctx, []byte("hunter2"), "ad")
			if err != nil {
				t.Fatal(err)
			}
			got, err := NewSealer(ours).Open(ctx, env, "ad")
			if err == nil {
				t.Fatalf("opened: %q", got)
			}
			for _, k := range []Keyring{sealedBy, ours} {
				key, _, _ := k.DataKey(ctx)
				for _, secret := range []string{"hunter2", string(key), hex.EncodeToString(key), base64.StdEncoding.EncodeToString(key)} {
					if strings.Contains(err.Error(), secret) {
						t.Fatalf("error text contains a secret: %v", err)
					}
				}
			}
		})
	}
}

func TestKMSKeyringDoesNotRememberFailures(t *testing.T) {
	kmsd := kmstest.Start(t)
	ctx := context.Background()
	unknownKey := kmsd.KeyID[:strings.LastIndex(kmsd.KeyID, "/")+1] + "00000000-0000-4000-8000-000000000000"
	broken := NewSealer(NewKMSKeyring(kmsd.Client(), unknownKey))
	env, err := NewSealer(NewKMSKeyring(kmsd.Client(), kmsd.KeyID)).Seal(ctx, []byte("hunter2"), "ad")
	if err != nil {
		t.Fatal(err)
	}
	for try := 1; try <= 2; try++ {
		_, err := broken.Seal(ctx, []byte("hunter2"), "ad")
		var notFound *types.NotFoundException
		if !errors.As(err, &notFound) {
			t.Fatalf("Seal: err = %v, want KMS NotFoundException", err)
		}
		if _, err := broken.Open(ctx, env, "ad"); !errors.As(err, &notFound) {
			t.Fatalf("Open: err = %v, want KMS NotFoundException", err)
		}
		// Each try reached KMS again: the sealer's own GenerateDataKey
		// call is the +1.
		if g, d := kmsd.Calls("GenerateDataKey"), kmsd.Calls("Decrypt"); g != try+1 || d != try {
			t.Fatalf("try %d: GenerateDataKey %d, Decrypt %d calls", try, g, d)
		}
	}
}

func TestKMSKeyringRefusesDataKeysOfTheWrongSize(t *testing.T) {
	k := NewKMSKeyring(&stubKMS{keySize: 16}, "key")
	if _, _, err := k.DataKey(context.Background()); err == nil {
		t.Fatal("DataKey accepted a 16-byte key")
	}
	if _, err := k.Unwrap(context.Background(), []byte("blob")); err == nil {
		t.Fatal("Unwrap accepted a 16-byte key")
	}
}

// A flood of distinct blobs must not grow the cache without bound, nor
// make the keyring forget its own key.
func TestKMSKeyringUnwrapCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	stub := &stubKMS{keySize: KeySize}
	k := NewKMSKeyring(stub, "key")
	own, wrapped, err := k.DataKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range unwrapCacheSize + 1 {
		if _, err := k.Unwrap(ctx, fmt.Appendf(nil, "blob %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(k.keys) > unwrapCacheSize {
		t.Fatalf("cache holds %d keys, bound is %d", len(k.keys), unwrapCacheSize)
	}
	before := stub.decrypts
	if key, err := k.Unwrap(ctx, wrapped); err != nil || !bytes.Equal(key, own) || stub.decrypts != before {
		t.Fatalf("own key after a flood: %v, %d more Decrypt calls", err, stub.decrypts-before)
	}
	if _, err := k.Unwrap(ctx, []byte("blob 0")); err != nil || stub.decrypts != before+1 {
		t.Fatalf("evicted blob: %v, %d more Decrypt calls, want 1", err, stub.decrypts-before)
	}
}

// fixedKeyring seals with a data key made outside KMSKeyring.
type fixedKeyring struct{ key, wrapped []byte }

func (f fixedKeyring) DataKey(context.Context) ([]byte, []byte, error) { return f.key, f.wrapped, nil }
func (f fixedKeyring) Unwrap(context.Context, []byte) ([]byte, error)  { return f.key, nil }

// stubKMS answers in process, for tests that need many or malformed keys.
// A blob's data key is its SHA-256, cut to keySize.
type stubKMS struct {
	keySize  int
	decrypts int
}

func (s *stubKMS) GenerateDataKey(context.Context, *kms.GenerateDataKeyInput, ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	blob := []byte("own blob")
	sum := sha256.Sum256(blob)
	return &kms.GenerateDataKeyOutput{CiphertextBlob: blob, Plaintext: sum[:s.keySize]}, nil
}

func (s *stubKMS) Decrypt(_ context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	s.decrypts++
	sum := sha256.Sum256(in.CiphertextBlob)
	return &kms.DecryptOutput{Plaintext: sum[:s.keySize]}, nil
}
