package lambdahttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// StreamHandler is the Lambda entry point of one http.Handler behind an API
// Gateway REST API method whose integration streams (responseTransferMode
// STREAM, invoked with InvokeWithResponseStream): the answer goes to API
// Gateway as the handler writes it, so that it may pass Lambda's 6 MB
// limit on a buffered response, and the function holds no more of it than
// the handler does.
//
// Handle runs the handler in a goroutine writing into a pipe, and returns
// as soon as the handler has written its status (WriteHeader or its first
// Write): an events.APIGatewayProxyStreamingResponse whose prelude is the
// status and headers, and whose body is the pipe. aws-lambda-go's runtime
// client posts it to the Runtime API with chunked encoding, each Write of
// the handler reaching Lambda before the next one returns. A write fails
// once the invocation's stream is gone.
//
// A handler that ends the answer midway (web.Abort, or any panic) after
// its status was sent fails the invocation in the middle of the stream:
// the pipe's reader returns the error, which aws-lambda-go reports in the
// Lambda-Runtime-Function-Error-Type/-Body trailers, and the client sees a
// truncated body, never a short answer that looks whole. Before the status
// was sent, Handle returns the error (API Gateway answers 502).
type StreamHandler struct {
	accessor core.RequestAccessor
	handler  http.Handler
}

// NewStream returns the streaming entry point serving h.
func NewStream(h http.Handler) *StreamHandler {
	return &StreamHandler{handler: fromGateway(h)}
}

// Handle answers one proxy event; it is what lambda.Start is given.
func (h *StreamHandler) Handle(ctx context.Context, event events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error) {
	req, err := h.accessor.EventToRequestWithContext(ctx, event)
	if err != nil {
		return nil, fmt.Errorf("lambdahttp: the proxy event is no request: %w", err)
	}
	// The handler stops when the stream is gone (the reader closed) or the
	// invocation ends.
	ctx, cancel := context.WithCancel(req.Context())
	pr, pw := io.Pipe()
	w := &streamWriter{header: http.Header{}, pipe: pw, ready: make(chan struct{})}
	w.buf = bufio.NewWriterSize(pw, streamChunk)
	body := &streamBody{pipe: pr, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(body.done)
		defer cancel()
		err := serve(h.handler, w, req.WithContext(ctx))
		w.finish(err)
	}()

	select {
	case <-w.ready:
	case <-body.done:
	}
	if w.early != nil { // failed before any status: no stream yet
		body.Close()
		return nil, w.early
	}
	return &events.APIGatewayProxyStreamingResponse{
		StatusCode:        w.status,
		MultiValueHeaders: w.sent,
		Body:              body,
	}, nil
}

// streamChunk is how much of the handler's writes is gathered into one
// chunk of the stream: large enough that a chunk's framing is negligible,
// small enough to be nothing beside a page of hosts.
const streamChunk = 64 << 10

// serve runs the handler, turning a panic (web.Abort's included) into an
// error.
func serve(h http.Handler, w http.ResponseWriter, r *http.Request) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				err = errAborted
			} else {
				err = fmt.Errorf("lambdahttp: the handler panicked: %v", v)
			}
		}
	}()
	h.ServeHTTP(w, r)
	return nil
}

var errAborted = errors.New("lambdahttp: the handler cut its answer short")

// streamWriter is the http.ResponseWriter of a streamed answer.
type streamWriter struct {
	header http.Header
	sent   map[string][]string // the headers as sent in the prelude
	status int
	pipe   *io.PipeWriter
	buf    *bufio.Writer
	ready  chan struct{} // closed once status and sent are set
	early  error         // the handler's failure before ready
	wrote  bool
	err    error // the stream's failure: no later write succeeds
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(status int) {
	if w.wrote || status < 200 { // 1xx answers cannot be streamed to API Gateway
		return
	}
	w.wrote = true
	w.status = status
	w.sent = map[string][]string(w.header.Clone())
	delete(w.sent, "Content-Length") // the stream is chunked
	close(w.ready)
}

func (w *streamWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		if w.header.Get("Content-Type") == "" && len(p) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(p))
		}
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.buf.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// Flush sends what the handler wrote so far.
func (w *streamWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.err == nil {
		w.err = w.buf.Flush()
	}
}

// finish ends the stream after the handler returned: with EOF when it
// succeeded, with err (which the runtime client reports in the trailers)
// when it failed after its status; a failure before it is Handle's error.
func (w *streamWriter) finish(err error) {
	if !w.wrote {
		if err != nil {
			w.early = err
			w.pipe.CloseWithError(err)
			return
		}
		w.WriteHeader(http.StatusOK) // a handler that wrote nothing: 200, empty
	}
	if err == nil && w.err == nil {
		err = w.buf.Flush()
	}
	w.pipe.CloseWithError(err) // nil is EOF
}

// streamBody is the body of a streamed answer, read by the runtime client.
// Closing it (aws-lambda-go does once the stream is posted, or failed)
// stops the handler and waits for it, so that no handler outlives its
// invocation.
type streamBody struct {
	pipe   *io.PipeReader
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func (b *streamBody) Read(p []byte) (int, error) { return b.pipe.Read(p) }

func (b *streamBody) Close() error {
	b.once.Do(func() {
		b.cancel()
		b.pipe.CloseWithError(errStreamClosed)
		<-b.done
	})
	return nil
}

var errStreamClosed = errors.New("lambdahttp: the stream was closed")

// StreamContentType is the content type under which a function posts a
// streamed answer to the Runtime API
// (events.APIGatewayProxyStreamingResponse.ContentType).
const StreamContentType = "application/vnd.awslambda.http-integration-response"

// ReadStream reads a streamed answer as API Gateway does: the JSON prelude
// (statusCode, headers, multiValueHeaders), eight NUL bytes, then the body,
// which the returned reader yields. For tests and benchmarks that stand
// where API Gateway does.
func ReadStream(r io.Reader) (status int, header http.Header, body io.Reader, err error) {
	br := bufio.NewReader(r)
	var prelude []byte
	for {
		line, err := br.ReadSlice(0)
		prelude = append(prelude, line...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return 0, nil, nil, fmt.Errorf("lambdahttp: no prelude delimiter in the stream: %w", err)
		}
		if len(prelude) > 1<<20 {
			return 0, nil, nil, errors.New("lambdahttp: the prelude passes 1 MB")
		}
		// The prelude is JSON, which holds no NUL: the first NUL starts the
		// delimiter.
		rest := make([]byte, 7)
		if _, err := io.ReadFull(br, rest); err != nil {
			return 0, nil, nil, fmt.Errorf("lambdahttp: a short prelude delimiter: %w", err)
		}
		if !bytes.Equal(rest, make([]byte, 7)) {
			return 0, nil, nil, errors.New("lambdahttp: the prelude delimiter is not eight NUL bytes")
		}
		prelude = prelude[:len(prelude)-1]
		break
	}
	var p struct {
		StatusCode        int                 `json:"statusCode"`
		Headers           map[string]string   `json:"headers"`
		MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	}
	if err := json.Unmarshal(prelude, &p); err != nil {
		return 0, nil, nil, fmt.Errorf("lambdahttp: the prelude %q is not JSON: %w", prelude, err)
	}
	header = http.Header{}
	for k, v := range p.Headers {
		header.Set(k, v)
	}
	for k, vs := range p.MultiValueHeaders {
		for _, v := range vs {
			header.Add(k, v)
		}
	}
	if p.StatusCode == 0 {
		p.StatusCode = http.StatusOK // API Gateway's default
	}
	return p.StatusCode, header, br, nil
}
