package kmstest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/sshdeck/sshdeck/internal/awsjson"
	"github.com/sshdeck/sshdeck/internal/kmstest"
)

var purpose = map[string]string{"purpose": "test", "app": "kmstest"}

// TestWireFormat speaks the protocol by hand, as a client other than the Go
// SDK would, and checks the bytes the real service would answer.
func TestWireFormat(t *testing.T) {
	s := kmstest.Start(t)
	post := func(target, body string) (int, map[string]any) {
		t.Helper()
		return awsjson.Post(t, s.URL, target, body)
	}

	status, gen := post("TrentService.GenerateDataKey", `{"KeyId":"`+s.KeyID+`","KeySpec":"AES_256","EncryptionContext":{"purpose":"test"}}`)
	if status != 200 || gen["KeyId"] != s.KeyID {
		t.Fatalf("GenerateDataKey: %d %v", status, gen)
	}
	plain, err := base64.StdEncoding.DecodeString(gen["Plaintext"].(string))
	if err != nil || len(plain) != 32 {
		t.Fatalf("Plaintext: %d bytes, %v", len(plain), err)
	}
	blob := gen["CiphertextBlob"].(string)
	status, dec := post("TrentService.Decrypt", `{"CiphertextBlob":"`+blob+`","EncryptionContext":{"purpose":"test"}}`)
	if status != 200 || dec["Plaintext"] != gen["Plaintext"] || dec["KeyId"] != s.KeyID || dec["EncryptionAlgorithm"] != "SYMMETRIC_DEFAULT" {
		t.Fatalf("Decrypt: %d %v", status, dec)
	}

	for _, c := range []struct{ target, body, errType string }{
		{"TrentService.Decrypt", `{"CiphertextBlob":"` + blob + `","EncryptionContext":{"purpose":"other"}}`, "InvalidCiphertextException"},
		{"TrentService.Decrypt", `{"CiphertextBlob":"` + blob + `"}`, "InvalidCiphertextException"},
		{"TrentService.Decrypt", `{"CiphertextBlob":"AAAA"}`, "InvalidCiphertextException"},
		{"TrentService.Decrypt", `{"CiphertextBlob":"` + blob + `","KeyId":"` + s.NewKey() + `","EncryptionContext":{"purpose":"test"}}`, "IncorrectKeyException"},
		{"TrentService.Decrypt", `{}`, "ValidationException"},
		{"TrentService.GenerateDataKey", `{"KeyId":"` + s.KeyID + `x","KeySpec":"AES_256"}`, "NotFoundException"},
		{"TrentService.GenerateDataKey", `{"KeyId":"` + s.KeyID + `","KeySpec":"AES_256","NumberOfBytes":32}`, "ValidationException"},
		{"TrentService.GenerateDataKey", `{"KeyId":"` + s.KeyID + `","KeySpec":"AES_512"}`, "ValidationException"},
		{"TrentService.GenerateDataKey", `{"KeySpec":"AES_256"}`, "ValidationException"},
		{"TrentService.GenerateDataKey", `{"KeyId":`, "SerializationException"},
		{"TrentService.Encrypt", `{}`, "UnknownOperationException"},
		{"", `{}`, "UnknownOperationException"},
	} {
		status, out := post(c.target, c.body)
		if status != 400 || out["__type"] != c.errType || out["message"] == "" {
			t.Errorf("%s %s: %d %v, want 400 %s with a message", c.target, c.body, status, out, c.errType)
		}
	}
	if got := s.Calls("Decrypt"); got != 6 {
		t.Errorf("Calls(Decrypt) = %d, want 6", got)
	}
	// Unknown operations count too, under their name without the prefix.
	want := map[string]int{"GenerateDataKey": 6, "Decrypt": 6, "Encrypt": 1, "": 1}
	if got := s.AllCalls(); !maps.Equal(got, want) {
		t.Errorf("AllCalls() = %v, want %v", got, want)
	}
	s.ResetCalls()
	if got := s.AllCalls(); len(got) != 0 {
		t.Errorf("AllCalls() after ResetCalls = %v, want none", got)
	}
}

// TestSDKClient checks that the real SDK client works against the fake and
// sees its errors as the service's typed errors.
func TestSDKClient(t *testing.T) {
	s := kmstest.Start(t)
	c := s.Client()
	ctx := context.Background()

	gen, err := c.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: &s.KeyID, NumberOfBytes: ptr(int32(16)), EncryptionContext: purpose})
	if err != nil {
		t.Fatal(err)
	}
	if len(gen.Plaintext) != 16 || *gen.KeyId != s.KeyID {
		t.Fatalf("GenerateDataKey: %d bytes, key %s", len(gen.Plaintext), *gen.KeyId)
	}
	if bytes.Contains(gen.CiphertextBlob, gen.Plaintext) {
		t.Fatal("blob contains the data key")
	}
	bareID := s.KeyID[strings.LastIndex(s.KeyID, "/")+1:]
	dec, err := c.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: gen.CiphertextBlob, KeyId: &bareID, EncryptionContext: map[string]string{"app": "kmstest", "purpose": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dec.Plaintext, gen.Plaintext) || dec.EncryptionAlgorithm != types.EncryptionAlgorithmSpecSymmetricDefault {
		t.Fatalf("Decrypt: %+v", dec)
	}

	tampered := bytes.Clone(gen.CiphertextBlob)
	tampered[len(tampered)-1] ^= 1
	other := s.NewKey()
	unknown := strings.TrimSuffix(s.KeyID, bareID) + "00000000-0000-4000-8000-000000000000"
	var invalid *types.InvalidCiphertextException
	var incorrect *types.IncorrectKeyException
	var notFound *types.NotFoundException
	for name, tc := range map[string]struct {
		in   *kms.DecryptInput
		want any
	}{
		"other context": {&kms.DecryptInput{CiphertextBlob: gen.CiphertextBlob, EncryptionContext: map[string]string{"purpose": "test"}}, &invalid},
		"tampered":      {&kms.DecryptInput{CiphertextBlob: tampered, EncryptionContext: purpose}, &invalid},
		"other key":     {&kms.DecryptInput{CiphertextBlob: gen.CiphertextBlob, KeyId: &other, EncryptionContext: purpose}, &incorrect},
		"unknown key":   {&kms.DecryptInput{CiphertextBlob: gen.CiphertextBlob, KeyId: &unknown, EncryptionContext: purpose}, &notFound},
	} {
		if _, err := c.Decrypt(ctx, tc.in); !errors.As(err, tc.want) {
			t.Errorf("%s: err = %v, want %T", name, err, tc.want)
		}
	}
	if got := s.Calls("GenerateDataKey"); got != 1 {
		t.Errorf("Calls(GenerateDataKey) = %d, want 1", got)
	}
}

func ptr[T any](v T) *T { return &v }
