// Package kmstest is a fake AWS KMS for tests: an HTTP server speaking the
// service's JSON 1.1 protocol for GenerateDataKey and Decrypt, so the real
// SDK client (or a Lambda configured with only a URL and a key id) talks to
// it exactly as to KMS. It really encrypts: each key has a random master key
// and data keys are wrapped with AES-GCM over their encryption context, so a
// wrong key or context fails as it would in AWS.
package kmstest

import (
	"crypto/rand"
	"maps"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sshdeck/sshdeck/internal/awsjson"
)

// region is the region of the fake's key ARNs; clients may name any.
const region = "us-east-1"

// arnPrefix names the fake's keys: a key's ARN is arnPrefix + its UUID.
const arnPrefix = "arn:aws:kms:" + region + ":111122223333:key/"

// Server is a running fake KMS.
type Server struct {
	URL   string // endpoint, e.g. for kms.Options.BaseEndpoint or AWS_ENDPOINT_URL_KMS
	KeyID string // ARN of a key the server knows

	srv   *httptest.Server
	mu    sync.Mutex
	keys  map[string][]byte // master keys by key UUID
	calls map[string]int    // requests by operation name
}

// Start runs a fake KMS with one key until the test ends.
func Start(t testing.TB) *Server {
	s := New()
	t.Cleanup(s.Close)
	return s
}

// New runs a fake KMS with one key until Close (for the benchmarks, which
// are not tests).
func New() *Server {
	s := &Server{keys: make(map[string][]byte), calls: make(map[string]int)}
	s.srv = httptest.NewServer(s.handler())
	s.URL = s.srv.URL
	s.KeyID = s.NewKey()
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// NewKey makes another key and returns its ARN.
func (s *Server) NewKey() string {
	id, master := awsjson.UUID(), make([]byte, 32)
	rand.Read(master)
	s.mu.Lock()
	s.keys[id] = master
	s.mu.Unlock()
	return arnPrefix + id
}

// Client returns an SDK client for the server, with static credentials (the
// fake does not check signatures).
func (s *Server) Client() *kms.Client {
	return kms.New(kms.Options{
		BaseEndpoint: aws.String(s.URL),
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDKMSTEST", "kmstest", ""),
	})
}

// Calls reports how many requests named op ("GenerateDataKey", "Decrypt")
// the server has received since Start or the last ResetCalls, failed ones
// included.
func (s *Server) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// AllCalls returns the number of requests of each operation since Start or
// the last ResetCalls, failed and unknown ones included: a test can tell
// that code made no KMS call at all.
func (s *Server) AllCalls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// ResetCalls sets every count back to zero.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
}

// masterKey returns the UUID and master key of keyID, given as a UUID or ARN.
func (s *Server) masterKey(keyID string) (string, []byte, bool) {
	id := strings.TrimPrefix(keyID, arnPrefix)
	s.mu.Lock()
	defer s.mu.Unlock()
	key, ok := s.keys[id]
	return id, key, ok
}
