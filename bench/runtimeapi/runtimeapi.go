// Package runtimeapi is a minimal AWS Lambda Runtime API on loopback, for
// running a real Lambda bootstrap as a process outside Lambda (the Lambda
// benchmark of sshdeck measures cold starts with it). It speaks the
// protocol of version 2018-06-01 as aws-lambda-go's runtime client uses it:
//
//   - GET  /2018-06-01/runtime/invocation/next blocks until an event is
//     queued, then answers 200 with the event as body and the headers
//     Lambda-Runtime-Aws-Request-Id, Lambda-Runtime-Deadline-Ms,
//     Lambda-Runtime-Invoked-Function-Arn and Lambda-Runtime-Trace-Id;
//   - POST /2018-06-01/runtime/invocation/{id}/response and
//     POST /2018-06-01/runtime/invocation/{id}/error take the answer of an
//     event handed out by next (202; 400 for an id never handed out or
//     already answered, 413 over the 6 MB payload limit);
//   - POST /2018-06-01/runtime/init/error records a failed initialisation
//     (202).
//
// An event queued with EnqueueStream stands for an invocation by
// InvokeWithResponseStream (what API Gateway makes of a method whose
// integration streams): its response is not kept but copied as it arrives
// to the caller's writer, up to MaxStreamPayload (Lambda's 200 MB), and an
// error in the response's trailers fails it midway, as Lambda does.
//
// It knows no extensions and no SnapStart hooks.
package runtimeapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	prefix = "/2018-06-01/runtime/"

	// MaxPayload is Lambda's limit on a synchronous response (6 MB).
	MaxPayload = 6 * 1024 * 1024
	// MaxStreamPayload is Lambda's limit on a streamed response (200 MB).
	MaxStreamPayload = 200 * 1024 * 1024

	headerRequestID   = "Lambda-Runtime-Aws-Request-Id"
	headerDeadline    = "Lambda-Runtime-Deadline-Ms"
	headerFunctionARN = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID     = "Lambda-Runtime-Trace-Id"
	headerErrorType   = "Lambda-Runtime-Function-Error-Type"
	headerErrorBody   = "Lambda-Runtime-Function-Error-Body"
	headerMode        = "Lambda-Runtime-Function-Response-Mode"
)

// Server is a Runtime API for one function instance.
type Server struct {
	// Addr is host:port, what AWS_LAMBDA_RUNTIME_API holds.
	Addr string

	config Config
	srv    *httptest.Server
	queue  chan *Invocation
	done   chan struct{}
	closed sync.Once

	mu        sync.Mutex
	nexts     int
	firstNext time.Time
	handedOut map[string]*Invocation // events given out and not answered
	initErr   *FunctionError
	initFail  chan struct{}
}

// Config is what a server tells its function, and a hook.
type Config struct {
	// Timeout is each event's deadline from when next hands it out (the
	// function's timeout); 0 is 15 s.
	Timeout time.Duration
	// FunctionARN is sent with every event; "" is a made-up ARN.
	FunctionARN string
	// OnNext, when set, is called at each next request the moment it
	// arrives, before it waits for an event, with how many next requests
	// there have been (1 for the first: the function's initialisation is
	// over). No event is handed out before it returns.
	OnNext func(n int)
}

// Invocation is one queued event.
type Invocation struct {
	ID      string
	Payload []byte

	delivered time.Time // when next handed it out (guarded by Server.mu)
	result    chan Result
	stream    io.Writer // EnqueueStream's: the response goes there
}

// Result is a function's answer to an event.
type Result struct {
	// RequestID is the event's Lambda-Runtime-Aws-Request-Id.
	RequestID string
	// Delivered is when next handed the event out, At when the answer was
	// received (its body read).
	Delivered, At time.Time
	// Body is the response, or the error document when Err is set.
	Body        []byte
	ContentType string
	// Err is set when the function answered on /error (or its response
	// ended with the error trailers).
	Err *FunctionError

	// Streamed is the size of a streamed response (EnqueueStream), whose
	// Body is not kept; Chunked says it came with chunked encoding, Mode is
	// its Lambda-Runtime-Function-Response-Mode header (the Runtime API's
	// documentation asks "streaming"; aws-lambda-go sends none).
	Streamed int64
	Chunked  bool
	Mode     string
}

// FunctionError is what a function reports on /error or /init/error.
type FunctionError struct {
	// Type is the Lambda-Runtime-Function-Error-Type header, or the
	// document's errorType.
	Type    string
	Message string
	// Body is the error document as sent.
	Body []byte
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// ErrInit is the error of Wait when the function reported a failed
// initialisation; InitError holds what it said.
var ErrInit = errors.New("runtimeapi: the function reported an init error")

// New starts a server on loopback until Close.
func New(c Config) *Server {
	if c.Timeout == 0 {
		c.Timeout = 15 * time.Second
	}
	if c.FunctionARN == "" {
		c.FunctionARN = "arn:aws:lambda:eu-west-1:123456789012:function:runtimeapi"
	}
	s := &Server{
		config:    c,
		queue:     make(chan *Invocation, 64),
		done:      make(chan struct{}),
		handedOut: map[string]*Invocation{},
		initFail:  make(chan struct{}),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.Addr = strings.TrimPrefix(s.srv.URL, "http://")
	return s
}

// Close stops the server: a next request waiting for an event gets 500 (a
// Lambda runtime then exits), and so do later ones.
func (s *Server) Close() {
	s.closed.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Enqueue queues an event for the next next request; Wait on it for the
// answer.
func (s *Server) Enqueue(payload []byte) *Invocation {
	inv := &Invocation{ID: newID(), Payload: payload, result: make(chan Result, 1)}
	s.queue <- inv
	return inv
}

// EnqueueStream queues an event invoked with InvokeWithResponseStream: its
// response is copied to body as the function sends it, not kept. Wait on
// it for the rest of the answer.
func (s *Server) EnqueueStream(payload []byte, body io.Writer) *Invocation {
	inv := &Invocation{ID: newID(), Payload: payload, result: make(chan Result, 1), stream: body}
	s.queue <- inv
	return inv
}

// Invoke queues an event and waits for its answer.
func (s *Server) Invoke(ctx context.Context, payload []byte) (Result, error) {
	return s.Wait(ctx, s.Enqueue(payload))
}

// Wait returns the answer to inv: the function's response, or its error
// (Result.Err). It fails when ctx ends first, when the function reports an
// init error (ErrInit) or when the server is closed.
func (s *Server) Wait(ctx context.Context, inv *Invocation) (Result, error) {
	select {
	case r := <-inv.result:
		return r, nil
	case <-s.initFail:
		return Result{}, fmt.Errorf("%w: %v", ErrInit, s.InitError())
	case <-s.done:
		return Result{}, errors.New("runtimeapi: closed")
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// FirstNext is when the first next request arrived: the function's
// initialisation was over. ok is false before it.
func (s *Server) FirstNext() (at time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstNext, s.nexts > 0
}

// Nexts is the number of next requests received.
func (s *Server) Nexts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nexts
}

// InitError is what the function posted to /init/error, or nil.
func (s *Server) InitError() *FunctionError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initErr
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		apiError(w, http.StatusNotFound, "NotFound", "no such path: "+r.URL.Path)
		return
	}
	switch {
	case path == "invocation/next":
		if r.Method != http.MethodGet {
			apiError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "next is GET")
			return
		}
		s.next(w, r)
	case path == "init/error":
		if r.Method != http.MethodPost {
			apiError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "init/error is POST")
			return
		}
		s.initError(w, r)
	case strings.HasPrefix(path, "invocation/"):
		id, kind, ok := strings.Cut(strings.TrimPrefix(path, "invocation/"), "/")
		if !ok || id == "" || (kind != "response" && kind != "error") {
			apiError(w, http.StatusNotFound, "NotFound", "no such path: "+r.URL.Path)
			return
		}
		if r.Method != http.MethodPost {
			apiError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", kind+" is POST")
			return
		}
		s.answer(w, r, id, kind == "error")
	default:
		apiError(w, http.StatusNotFound, "NotFound", "no such path: "+r.URL.Path)
	}
}

func (s *Server) next(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.nexts++
	n := s.nexts
	if n == 1 {
		s.firstNext = time.Now()
	}
	s.mu.Unlock()
	if s.config.OnNext != nil {
		s.config.OnNext(n)
	}

	var inv *Invocation
	select {
	case inv = <-s.queue:
	case <-s.done:
		apiError(w, http.StatusInternalServerError, "ServiceShutdown", "the runtime API is closed")
		return
	case <-r.Context().Done():
		return
	}
	delivered := time.Now()
	s.mu.Lock()
	inv.delivered = delivered
	s.handedOut[inv.ID] = inv
	s.mu.Unlock()

	h := w.Header()
	h.Set(headerRequestID, inv.ID)
	h.Set(headerDeadline, strconv.FormatInt(delivered.Add(s.config.Timeout).UnixMilli(), 10))
	h.Set(headerFunctionARN, s.config.FunctionARN)
	h.Set(headerTraceID, fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", delivered.Unix(), randomHex(12), randomHex(8)))
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(inv.Payload)
}

// answer takes the response or error of the event id.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, id string, isError bool) {
	s.mu.Lock()
	inv := s.handedOut[id]
	s.mu.Unlock()
	if inv != nil && inv.stream != nil && !isError {
		s.streamed(w, r, inv)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayload+1))
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	}
	at := time.Now()
	if len(body) > MaxPayload {
		apiError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "the payload is over "+strconv.Itoa(MaxPayload)+" bytes")
		return
	}
	s.mu.Lock()
	inv, ok := s.handedOut[id]
	delete(s.handedOut, id)
	s.mu.Unlock()
	if !ok {
		apiError(w, http.StatusBadRequest, "InvalidRequestID", "no event "+id+" is waiting for an answer")
		return
	}
	res := Result{RequestID: id, Delivered: inv.delivered, At: at, Body: body, ContentType: r.Header.Get("Content-Type")}
	switch {
	case isError:
		res.Err = functionError(r.Header.Get(headerErrorType), body)
	case r.Trailer.Get(headerErrorType) != "":
		// The response body failed half-way: aws-lambda-go sends what it
		// had, and the error in trailers (its body base64 JSON).
		doc, _ := decodeBase64(r.Trailer.Get(headerErrorBody))
		res.Err = functionError(r.Trailer.Get(headerErrorType), doc)
	}
	inv.result <- res
	accepted(w)
}

// streamed takes the streamed response of inv: copied to inv.stream as it
// arrives, at most MaxStreamPayload bytes.
func (s *Server) streamed(w http.ResponseWriter, r *http.Request, inv *Invocation) {
	res := Result{RequestID: inv.ID, ContentType: r.Header.Get("Content-Type"),
		Chunked: slices.Contains(r.TransferEncoding, "chunked"), Mode: r.Header.Get(headerMode)}
	n, err := io.Copy(inv.stream, io.LimitReader(r.Body, MaxStreamPayload+1))
	res.Streamed, res.At = n, time.Now()
	s.mu.Lock()
	res.Delivered = inv.delivered
	_, ok := s.handedOut[inv.ID]
	delete(s.handedOut, inv.ID)
	s.mu.Unlock()
	switch {
	case !ok:
		apiError(w, http.StatusBadRequest, "InvalidRequestID", "no event "+inv.ID+" is waiting for an answer")
		return
	case err != nil:
		res.Err = &FunctionError{Type: "Runtime.StreamError", Message: err.Error()}
	case n > MaxStreamPayload:
		res.Err = &FunctionError{Type: "Function.ResponseSizeTooLarge", Message: "the streamed response is over " + strconv.Itoa(MaxStreamPayload) + " bytes"}
	case r.Trailer.Get(headerErrorType) != "":
		doc, _ := decodeBase64(r.Trailer.Get(headerErrorBody))
		res.Err = functionError(r.Trailer.Get(headerErrorType), doc)
	}
	inv.result <- res
	if res.Err != nil && res.Err.Type == "Function.ResponseSizeTooLarge" {
		apiError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", res.Err.Message)
		return
	}
	accepted(w)
}

func (s *Server) initError(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayload))
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	}
	s.mu.Lock()
	first := s.initErr == nil
	if first {
		s.initErr = functionError(r.Header.Get(headerErrorType), body)
	}
	s.mu.Unlock()
	if !first {
		apiError(w, http.StatusForbidden, "InvalidStateTransition", "init/error was already reported")
		return
	}
	close(s.initFail)
	accepted(w)
}

// functionError reads an error document ({"errorMessage","errorType",…}).
func functionError(headerType string, body []byte) *FunctionError {
	var doc struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}
	json.Unmarshal(body, &doc)
	e := &FunctionError{Type: headerType, Message: doc.Message, Body: body}
	if e.Type == "" {
		e.Type = doc.Type
	}
	if e.Type == "" {
		e.Type = "Unhandled"
	}
	return e
}

func accepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	w.Write([]byte(`{"status":"OK"}` + "\n"))
}

// apiError answers as the Runtime API does: a JSON error document.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"errorType": typ, "errorMessage": msg})
}

// newID is a request id shaped like Lambda's (a UUID).
func newID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func decodeBase64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
