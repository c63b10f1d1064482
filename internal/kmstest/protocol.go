package kmstest

import (
	"crypto/rand"
	"net/http"

	"github.com/sshdeck/sshdeck/internal/awsjson"
)

// targetPrefix is KMS's in X-Amz-Target.
const targetPrefix = "TrentService."

func validation(format string, args ...any) *awsjson.Error {
	return awsjson.Errorf("ValidationException", format, args...)
}

func notFound(keyID string) *awsjson.Error {
	return awsjson.Errorf("NotFoundException", "Key '%s' does not exist", keyID)
}

func (s *Server) handler() http.Handler {
	return awsjson.Service{
		Prefix: targetPrefix,
		Operations: map[string]awsjson.Operation{
			"GenerateDataKey": awsjson.Call(s.generateDataKey),
			"Decrypt":         awsjson.Call(s.decrypt),
		},
		Count: func(op string) {
			s.mu.Lock()
			s.calls[op]++
			s.mu.Unlock()
		},
	}
}

type generateDataKeyIn struct {
	KeyId             string
	KeySpec           string
	NumberOfBytes     int
	EncryptionContext map[string]string
}

type generateDataKeyOut struct {
	CiphertextBlob []byte
	Plaintext      []byte
	KeyId          string
}

func (s *Server) generateDataKey(in *generateDataKeyIn) (*generateDataKeyOut, *awsjson.Error) {
	if in.KeyId == "" {
		return nil, validation("1 validation error detected: Value null at 'keyId' failed to satisfy constraint: Member must not be null")
	}
	var size int
	switch {
	case in.KeySpec != "" && in.NumberOfBytes != 0, in.KeySpec == "" && in.NumberOfBytes == 0:
		return nil, validation("Please specify either number of bytes or key spec.")
	case in.KeySpec == "AES_256":
		size = 32
	case in.KeySpec == "AES_128":
		size = 16
	case in.KeySpec != "":
		return nil, validation("1 validation error detected: Value '%s' at 'keySpec' failed to satisfy constraint: Member must satisfy enum value set: [AES_256, AES_128]", in.KeySpec)
	case in.NumberOfBytes < 1 || in.NumberOfBytes > 1024:
		return nil, validation("1 validation error detected: Value '%d' at 'numberOfBytes' failed to satisfy constraint: Member must have value between 1 and 1024", in.NumberOfBytes)
	default:
		size = in.NumberOfBytes
	}
	id, master, ok := s.masterKey(in.KeyId)
	if !ok {
		return nil, notFound(in.KeyId)
	}
	plaintext := make([]byte, size)
	rand.Read(plaintext)
	return &generateDataKeyOut{
		CiphertextBlob: wrap(id, master, plaintext, in.EncryptionContext),
		Plaintext:      plaintext,
		KeyId:          arnPrefix + id,
	}, nil
}

type decryptIn struct {
	CiphertextBlob    []byte
	KeyId             string
	EncryptionContext map[string]string
}

type decryptOut struct {
	Plaintext           []byte
	KeyId               string
	EncryptionAlgorithm string
}

func (s *Server) decrypt(in *decryptIn) (*decryptOut, *awsjson.Error) {
	if len(in.CiphertextBlob) == 0 {
		return nil, validation("1 validation error detected: Value at 'ciphertextBlob' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	var named string
	if in.KeyId != "" {
		var ok bool
		if named, _, ok = s.masterKey(in.KeyId); !ok {
			return nil, notFound(in.KeyId)
		}
	}
	invalid := &awsjson.Error{Type: "InvalidCiphertextException", Message: "The ciphertext is invalid, or was made with another encryption context."}
	// A blob naming a key this server never made is as undecryptable as a
	// corrupted one.
	id, err := blobKey(in.CiphertextBlob)
	if err != nil {
		return nil, invalid
	}
	_, master, ok := s.masterKey(id)
	if !ok {
		return nil, invalid
	}
	if named != "" && named != id {
		return nil, &awsjson.Error{Type: "IncorrectKeyException", Message: "The key ID in the request does not identify a CMK that can perform this operation."}
	}
	plaintext, err := unwrap(master, in.CiphertextBlob, in.EncryptionContext)
	if err != nil {
		return nil, invalid
	}
	return &decryptOut{Plaintext: plaintext, KeyId: arnPrefix + id, EncryptionAlgorithm: "SYMMETRIC_DEFAULT"}, nil
}
