package lambdahttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/shared/web"
)

// stream invokes h's streaming entry point and reads the answer as API
// Gateway does.
func stream(t *testing.T, ctx context.Context, h http.Handler, ev events.APIGatewayProxyRequest) (int, http.Header, io.Reader, *events.APIGatewayProxyStreamingResponse) {
	t.Helper()
	resp, err := NewStream(h).Handle(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Close() })
	if resp.ContentType() != StreamContentType {
		t.Fatalf("content type %q", resp.ContentType())
	}
	status, header, body, err := ReadStream(resp)
	if err != nil {
		t.Fatal(err)
	}
	return status, header, body, resp
}

// TestStreamEventBecomesRequest: the streaming entry point gives the
// handler the request the buffered one does, and API Gateway the status,
// headers and body the handler wrote.
func TestStreamEventBecomesRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	status, header, body, _ := stream(t, ctx, http.HandlerFunc(echo), events.APIGatewayProxyRequest{
		HTTPMethod:                      "GET",
		Path:                            "/ssh/db/host",
		MultiValueHeaders:               map[string][]string{"Authorization": {"Bearer x"}},
		MultiValueQueryStringParameters: map[string][]string{"limit": {"5"}},
		RequestContext: events.APIGatewayProxyRequestContext{
			RequestID:  "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
			Authorizer: map[string]any{"principalId": "usr_1", "userId": "usr_1", "admin": "false"},
		},
	})
	if status != http.StatusTeapot || header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, headers %v", status, header)
	}
	var got seen
	if err := json.NewDecoder(body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := seen{Method: "GET", Path: "/ssh/db/host", Query: "5", Auth: "Bearer x",
		RequestID: "c6af9ac6-7b61-11e6-9a41-93e8deadbeef", UserID: "usr_1", HasCaller: true, HasDeadline: true}
	if got != want {
		t.Fatalf("handler saw\n %+v\nwant\n %+v", got, want)
	}
}

// TestStreamMemoryIsBounded: the handler cannot run ahead of the stream by
// more than one chunk and its own write: 64 MB written in 1 MB writes
// while the reader takes them slowly.
func TestStreamMemoryIsBounded(t *testing.T) {
	const write, writes = 1 << 20, 64
	var written, read atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", "1") // never sent: the stream is chunked
		chunk := bytes.Repeat([]byte{'x'}, write)
		for range writes {
			if _, err := w.Write(chunk); err != nil {
				t.Errorf("write: %v", err)
				return
			}
			written.Add(write)
		}
	})
	status, header, body, _ := stream(t, context.Background(), h, events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/"})
	if status != http.StatusOK || header.Get("Content-Length") != "" {
		t.Fatalf("status %d, headers %v", status, header)
	}
	buf := make([]byte, 256<<10)
	var ahead int64
	for {
		n, err := body.Read(buf)
		read.Add(int64(n))
		ahead = max(ahead, written.Load()-read.Load())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Microsecond)
	}
	if read.Load() != write*writes {
		t.Fatalf("read %d bytes, want %d", read.Load(), write*writes)
	}
	// Besides what the reader holds: the chunk buffer and one write.
	if limit := int64(streamChunk + write + len(buf)); ahead > limit {
		t.Fatalf("the handler ran %d bytes ahead of the stream, more than %d", ahead, limit)
	}
}

// TestStreamAbortMidway: a handler that cuts its answer after the status
// makes the stream fail, not end: a truncated body, never a short one that
// looks whole.
func TestStreamAbortMidway(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list := web.StartJSONArray(w)
		for i := range 3 {
			list.Append(i)
		}
		w.(http.Flusher).Flush()
		web.Abort()
	})
	_, _, body, _ := stream(t, context.Background(), h, events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/"})
	got, err := io.ReadAll(body)
	if err == nil || !errors.Is(err, errAborted) {
		t.Fatalf("read %q, %v; want the abort", got, err)
	}
}

// TestStreamFailsBeforeStatus: a handler that fails before writing its
// status fails the invocation, with nothing streamed.
func TestStreamFailsBeforeStatus(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"abort": func(http.ResponseWriter, *http.Request) { web.Abort() },
		"panic": func(http.ResponseWriter, *http.Request) { panic("boom") },
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := NewStream(h).Handle(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/"})
			if err == nil || resp != nil {
				t.Fatalf("got %v, %v; want an error", resp, err)
			}
			if name == "panic" && !strings.Contains(err.Error(), "boom") {
				t.Fatalf("error %v does not say the panic", err)
			}
		})
	}
}

// TestStreamEmptyAnswer: a handler that writes nothing answers 200 with an
// empty body.
func TestStreamEmptyAnswer(t *testing.T) {
	status, _, body, _ := stream(t, context.Background(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/"})
	if b, err := io.ReadAll(body); status != http.StatusOK || len(b) != 0 || err != nil {
		t.Fatalf("status %d, body %q, %v", status, b, err)
	}
}

// TestStreamCloseStopsTheHandler: closing the answer (the runtime client
// does once it is posted, or when posting failed) cancels the handler's
// context, fails its writes, and returns only once the handler did.
func TestStreamCloseStopsTheHandler(t *testing.T) {
	var returned atomic.Bool
	var writeErr, ctxErr atomic.Value
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer returned.Store(true)
		chunk := make([]byte, 32<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				writeErr.Store(err)
				ctxErr.Store(r.Context().Err() != nil)
				return
			}
		}
	})
	_, _, body, resp := stream(t, context.Background(), h, events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/"})
	if _, err := io.ReadFull(body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	resp.Close()
	if !returned.Load() || writeErr.Load() == nil || ctxErr.Load() != true {
		t.Fatalf("after Close: handler returned %t, its write failed with %v, its context done %v", returned.Load(), writeErr.Load(), ctxErr.Load())
	}
}

// TestReadStream: the prelude's single and multi-value headers, a default
// status, and refusals of what is not a stream.
func TestReadStream(t *testing.T) {
	in := `{"statusCode":201,"headers":{"A":"1"},"multiValueHeaders":{"B":["2","3"]}}` + "\x00\x00\x00\x00\x00\x00\x00\x00" + "[1,\x002]"
	status, header, body, err := ReadStream(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(body)
	if status != 201 || header.Get("A") != "1" || len(header.Values("B")) != 2 || string(b) != "[1,\x002]" {
		t.Fatalf("got %d %v %q", status, header, b)
	}
	if status, _, _, err := ReadStream(strings.NewReader("{}" + strings.Repeat("\x00", 8))); err != nil || status != 200 {
		t.Fatalf("empty prelude: %d %v", status, err)
	}
	for _, bad := range []string{"", "{}", "{}\x00\x00", "{}\x00\x00\x00\x00\x00\x00\x00x", "nope" + strings.Repeat("\x00", 8)} {
		if _, _, _, err := ReadStream(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
