package kmstest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The AWS JSON 1.1 protocol: every call is POST / with the operation in
// X-Amz-Target, bodies are JSON with blobs as base64 strings (which is how
// encoding/json writes []byte), and errors are 400 with the error's name in
// __type.
const (
	contentType  = "application/x-amz-json-1.1"
	targetPrefix = "TrentService."
)

// apiError is an error response body.
type apiError struct {
	Type    string `json:"__type"`
	Message string `json:"message"`
}

func validation(format string, args ...any) *apiError {
	return &apiError{"ValidationException", fmt.Sprintf(format, args...)}
}

func notFound(keyID string) *apiError {
	return &apiError{"NotFoundException", fmt.Sprintf("Key '%s' does not exist", keyID)}
}

func (s *Server) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op, _ := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
		s.mu.Lock()
		s.calls[op]++
		s.mu.Unlock()

		var out any
		var err *apiError
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/":
			err = &apiError{"UnknownOperationException", "requests are POST /"}
		case op == "GenerateDataKey":
			out, err = call(r, s.generateDataKey)
		case op == "Decrypt":
			out, err = call(r, s.decrypt)
		default:
			err = &apiError{"UnknownOperationException", fmt.Sprintf("the fake does not serve %q", r.Header.Get("X-Amz-Target"))}
		}

		w.Header().Set("Content-Type", contentType)
		w.Header().Set("X-Amzn-Requestid", newUUID())
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			out = err
		}
		json.NewEncoder(w).Encode(out)
	})
}

// call decodes a request body into In and runs op on it.
func call[In, Out any](r *http.Request, op func(*In) (*Out, *apiError)) (any, *apiError) {
	in := new(In)
	if err := json.NewDecoder(r.Body).Decode(in); err != nil {
		return nil, &apiError{"SerializationException", err.Error()}
	}
	out, err := op(in)
	if err != nil {
		return nil, err
	}
	return out, nil
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

func (s *Server) generateDataKey(in *generateDataKeyIn) (*generateDataKeyOut, *apiError) {
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

func (s *Server) decrypt(in *decryptIn) (*decryptOut, *apiError) {
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
	invalid := &apiError{"InvalidCiphertextException", "The ciphertext is invalid, or was made with another encryption context."}
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
		return nil, &apiError{"IncorrectKeyException", "The key ID in the request does not identify a CMK that can perform this operation."}
	}
	plaintext, err := unwrap(master, in.CiphertextBlob, in.EncryptionContext)
	if err != nil {
		return nil, invalid
	}
	return &decryptOut{Plaintext: plaintext, KeyId: arnPrefix + id, EncryptionAlgorithm: "SYMMETRIC_DEFAULT"}, nil
}
