// Package awsjson is the AWS JSON 1.1 protocol as the fakes of AWS services
// serve it (kmstest, eventstest): every call is POST / with the operation
// in X-Amz-Target ("<prefix>.<operation>"), bodies are JSON (blobs as
// base64 strings, which is how encoding/json writes []byte; timestamps as
// epoch seconds), answers carry a request id, and errors are 400 with the
// error's name in __type.
package awsjson

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// ContentType is the protocol's content type, of requests and answers.
const ContentType = "application/x-amz-json-1.1"

// Error is an error answer: its type (ValidationException…) and message.
type Error struct {
	Type    string `json:"__type"`
	Message string `json:"message"`
}

// Errorf is the error of type typ with a formatted message.
func Errorf(typ, format string, args ...any) *Error {
	return &Error{typ, fmt.Sprintf(format, args...)}
}

// Operation answers one call: the value to encode as the answer's body, or
// an error.
type Operation func(*http.Request) (any, *Error)

// Service serves the operations of one service.
type Service struct {
	// Prefix is the service's in X-Amz-Target, dot included
	// ("TrentService.").
	Prefix string
	// Operations are by name ("Decrypt").
	Operations map[string]Operation
	// Count, when set, is told the operation's name of every request
	// (unknown and failed ones included) before it is served.
	Count func(operation string)
}

// ServeHTTP answers a call to an operation of the service.
func (s Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, _ := strings.CutPrefix(r.Header.Get("X-Amz-Target"), s.Prefix)
	if s.Count != nil {
		s.Count(name)
	}
	var out any
	var err *Error
	switch op, ok := s.Operations[name]; {
	case r.Method != http.MethodPost || r.URL.Path != "/":
		err = &Error{"UnknownOperationException", "requests are POST /"}
	case !ok:
		err = Errorf("UnknownOperationException", "the fake does not serve %q", r.Header.Get("X-Amz-Target"))
	default:
		out, err = op(r)
	}
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("X-Amzn-Requestid", UUID())
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		out = err
	}
	json.NewEncoder(w).Encode(out)
}

// Call decodes a request's body into In and runs op on it: an Operation
// from a function of typed input and output.
func Call[In, Out any](op func(*In) (*Out, *Error)) Operation {
	return func(r *http.Request) (any, *Error) {
		in := new(In)
		if err := json.NewDecoder(r.Body).Decode(in); err != nil {
			return nil, &Error{"SerializationException", err.Error()}
		}
		out, err := op(in)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

// UUID is a random (version 4) UUID, as AWS's request and resource ids.
func UUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Post sends one call of the protocol by hand to the fake at url, as a
// client other than the Go SDK would, and returns the answer's status and
// its body decoded; it fails t when the answer is not the protocol's.
// The fakes' wire-format tests use it.
func Post(t testing.TB, url, target, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("X-Amz-Target", target)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != ContentType {
		t.Errorf("%s: Content-Type %q", target, ct)
	}
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: body: %v", target, err)
	}
	return resp.StatusCode, out
}
