package runtimeapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/internal/gobuild"
)

func start(t *testing.T, c Config) *Server {
	t.Helper()
	s := New(c)
	t.Cleanup(s.Close)
	return s
}

func base(s *Server) string { return "http://" + s.Addr + "/2018-06-01/runtime/" }

// ctx bounds the in-process tests' waits for a result that the test has
// already posted: a protocol wait, which a minute is far beyond (it turns a
// lost result into a failure instead of go test's timeout). The wait on a
// function process has no deadline (TestAWSLambdaGo).
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func post(t *testing.T, url, contentType string, body []byte, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestProtocol drives the server over HTTP as aws-lambda-go's runtime
// client does: next blocks until an event, hands it out with its headers;
// the response is accepted once, with 202.
func TestProtocol(t *testing.T) {
	var mu sync.Mutex
	var nexts []int
	s := start(t, Config{OnNext: func(n int) { mu.Lock(); nexts = append(nexts, n); mu.Unlock() }})

	type got struct {
		resp *http.Response
		body []byte
		err  error
	}
	next := make(chan got, 1)
	go func() {
		resp, err := http.Get(base(s) + "invocation/next")
		if err != nil {
			next <- got{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		next <- got{resp, b, err}
	}()
	select {
	case g := <-next:
		t.Fatalf("next answered with no event queued: %+v", g)
	case <-time.After(100 * time.Millisecond):
	}
	if at, ok := s.FirstNext(); !ok || time.Since(at) > 5*time.Second {
		t.Fatalf("FirstNext %v %v after a next request", at, ok)
	}

	inv := s.Enqueue([]byte(`{"hello":"world"}`))
	g := <-next
	if g.err != nil {
		t.Fatal(g.err)
	}
	if g.resp.StatusCode != http.StatusOK || string(g.body) != `{"hello":"world"}` {
		t.Fatalf("next: %d %s", g.resp.StatusCode, g.body)
	}
	h := g.resp.Header
	if id := h.Get("Lambda-Runtime-Aws-Request-Id"); id != inv.ID || id == "" {
		t.Errorf("request id %q, want %q", id, inv.ID)
	}
	ms, err := strconv.ParseInt(h.Get("Lambda-Runtime-Deadline-Ms"), 10, 64)
	if d := time.Until(time.UnixMilli(ms)); err != nil || d < 10*time.Second || d > 16*time.Second {
		t.Errorf("deadline %q (%v from now), want the 15 s timeout", h.Get("Lambda-Runtime-Deadline-Ms"), d)
	}
	if !strings.HasPrefix(h.Get("Lambda-Runtime-Invoked-Function-Arn"), "arn:aws:lambda:") {
		t.Errorf("function ARN %q", h.Get("Lambda-Runtime-Invoked-Function-Arn"))
	}
	if !strings.HasPrefix(h.Get("Lambda-Runtime-Trace-Id"), "Root=1-") {
		t.Errorf("trace id %q", h.Get("Lambda-Runtime-Trace-Id"))
	}

	if resp := post(t, base(s)+"invocation/"+inv.ID+"/response", "application/json", []byte(`{"ok":true}`)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("response: %d, want 202", resp.StatusCode)
	}
	res, err := s.Wait(ctx(t), inv)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil || string(res.Body) != `{"ok":true}` || res.RequestID != inv.ID || res.ContentType != "application/json" {
		t.Fatalf("result %+v", res)
	}
	if res.Delivered.IsZero() || res.At.Before(res.Delivered) {
		t.Errorf("delivered %v, answered %v", res.Delivered, res.At)
	}
	// Once only, and only for events handed out.
	for _, id := range []string{inv.ID, "no-such-id"} {
		if resp := post(t, base(s)+"invocation/"+id+"/response", "application/json", nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("response to %s: %d, want 400", id, resp.StatusCode)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(nexts) != 1 || nexts[0] != 1 || s.Nexts() != 1 {
		t.Errorf("OnNext saw %v, Nexts %d", nexts, s.Nexts())
	}
}

func TestErrorsAndLimits(t *testing.T) {
	s := start(t, Config{})
	// An event queued first is handed out at once.
	inv := s.Enqueue([]byte(`{}`))
	resp, err := http.Get(base(s) + "invocation/next")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if id := resp.Header.Get("Lambda-Runtime-Aws-Request-Id"); id != inv.ID {
		t.Fatalf("next handed out %q, want %q", id, inv.ID)
	}
	doc := []byte(`{"errorMessage":"boom","errorType":"errorString"}`)
	if r := post(t, base(s)+"invocation/"+inv.ID+"/error", "application/json", doc, "Lambda-Runtime-Function-Error-Type", "Function.Boom"); r.StatusCode != http.StatusAccepted {
		t.Fatalf("error: %d", r.StatusCode)
	}
	res, err := s.Wait(ctx(t), inv)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err == nil || res.Err.Type != "Function.Boom" || res.Err.Message != "boom" || !bytes.Equal(res.Body, doc) {
		t.Fatalf("result %+v err %+v", res, res.Err)
	}

	// Over 6 MB: 413.
	inv = s.Enqueue([]byte(`{}`))
	resp, err = http.Get(base(s) + "invocation/next")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if r := post(t, base(s)+"invocation/"+inv.ID+"/response", "application/json", make([]byte, MaxPayload+1)); r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a response over 6 MB: %d, want 413", r.StatusCode)
	}

	for _, c := range []struct{ method, path string }{
		{"POST", "invocation/next"}, {"GET", "invocation/x/response"}, {"GET", "init/error"},
	} {
		req, _ := http.NewRequest(c.method, base(s)+c.path, nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d, want 405", c.method, c.path, r.StatusCode)
		}
	}
	for _, p := range []string{"invocation/x/other", "invocation//response", "elsewhere"} {
		if r := post(t, base(s)+p, "application/json", nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", p, r.StatusCode)
		}
	}
}

func TestInitErrorAndClose(t *testing.T) {
	s := start(t, Config{})
	inv := s.Enqueue([]byte(`{}`))
	if r := post(t, base(s)+"init/error", "application/json", []byte(`{"errorMessage":"no table","errorType":"Config"}`), "Lambda-Runtime-Function-Error-Type", "Runtime.Config"); r.StatusCode != http.StatusAccepted {
		t.Fatalf("init/error: %d", r.StatusCode)
	}
	if _, err := s.Wait(ctx(t), inv); !errors.Is(err, ErrInit) {
		t.Fatalf("Wait after an init error: %v", err)
	}
	if e := s.InitError(); e == nil || e.Type != "Runtime.Config" || e.Message != "no table" {
		t.Fatalf("InitError %+v", e)
	}

	// Close ends a waiting next with an error status.
	s2 := New(Config{})
	done := make(chan int, 1)
	go func() {
		resp, err := http.Get(base(s2) + "invocation/next")
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	for s2.Nexts() == 0 {
		time.Sleep(time.Millisecond)
	}
	s2.Close()
	select {
	case code := <-done:
		if code == http.StatusOK {
			t.Fatalf("next after Close: %d", code)
		}
	case <-time.After(time.Minute): // a protocol wait (Close answers at once): generous, to fail rather than hang
		t.Fatal("Close left next waiting")
	}
}

// TestAWSLambdaGo runs a function built with aws-lambda-go against the
// server: its runtime client must find what it expects, in order.
func TestAWSLambdaGo(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "echo")
	if err := gobuild.Build("./testdata/echo", bin, []string{"CGO_ENABLED=0"}, "-tags", "lambda.norpc"); err != nil {
		t.Fatal(err)
	}
	s := start(t, Config{FunctionARN: "arn:aws:lambda:eu-west-1:123456789012:function:echo"})
	cmd := exec.Command(bin)
	cmd.Env = []string{"AWS_LAMBDA_RUNTIME_API=" + s.Addr, "AWS_LAMBDA_FUNCTION_NAME=echo", "PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	// invoke waits for the function's answer with no deadline: the first
	// includes the process's start, whose time is the machine's. The
	// function exiting ends the wait (an answer it posted before exiting
	// still counts).
	invoke := func(payload string) (*Invocation, Result, error) {
		inv := s.Enqueue([]byte(payload))
		wctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() {
			select {
			case <-exited:
				cancel()
			case <-wctx.Done():
			}
		}()
		res, err := s.Wait(wctx, inv)
		if err != nil && wctx.Err() != nil && t.Context().Err() == nil {
			select {
			case res := <-inv.result:
				return inv, res, nil
			default:
				return inv, res, fmt.Errorf("the function exited (%v) without answering: %s", exitErr, stderr.String())
			}
		}
		return inv, res, err
	}

	for i := range 3 {
		event := `{"n":` + strconv.Itoa(i) + `}`
		inv, res, err := invoke(event)
		if err != nil {
			t.Fatalf("event %d: %v\n%s", i, err, stderr.String())
		}
		var a struct {
			Event       json.RawMessage
			RequestID   string
			FunctionARN string
			DeadlineMS  int64
			TraceID     string
		}
		if err := json.Unmarshal(res.Body, &a); err != nil || res.Err != nil {
			t.Fatalf("event %d: %s %v %v", i, res.Body, err, res.Err)
		}
		// The function's deadline is the 15 s timeout from the event's
		// delivery, in milliseconds: not a guess at how long it all took.
		if string(a.Event) != event || a.RequestID != inv.ID || a.FunctionARN != "arn:aws:lambda:eu-west-1:123456789012:function:echo" ||
			!strings.HasPrefix(a.TraceID, "Root=1-") || a.DeadlineMS != res.Delivered.Add(15*time.Second).UnixMilli() {
			t.Errorf("event %d: the function saw %s", i, res.Body)
		}
	}
	_, res, err := invoke(`{"fail":"no such host"}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err == nil || res.Err.Message != "no such host" || res.Err.Type != "errorString" {
		t.Fatalf("a failing event: %+v %+v", res, res.Err)
	}
	_, res, err = invoke(`{"panic":"oops"}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err == nil || res.Err.Message != "oops" {
		t.Fatalf("a panicking event: %+v %+v", res, res.Err)
	}
	// After a panic aws-lambda-go exits; it asked for no event after it.
	<-exited
	if exitErr == nil {
		t.Errorf("the function exited 0 after a panic")
	}
	if s.Nexts() != 5 {
		t.Errorf("%d next requests for 5 events", s.Nexts())
	}
}

// TestStreamedResponse: an event queued with EnqueueStream takes a chunked
// response past 6 MB, copies it to the caller's writer rather than keeping
// it, and reports an error sent in the trailers after the body.
func TestStreamedResponse(t *testing.T) {
	s := start(t, Config{})
	for _, fail := range []bool{false, true} {
		var got bytes.Buffer
		inv := s.EnqueueStream([]byte(`{}`), &got)
		resp, err := http.Get(base(s) + "invocation/next")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		body := bytes.Repeat([]byte("0123456789abcdef"), (MaxPayload+1<<20)/16)
		pr, pw := io.Pipe()
		go func() {
			for chunk := range slices.Chunk(body, 1<<20) {
				pw.Write(chunk)
			}
			pw.Close()
		}()
		req, err := http.NewRequest(http.MethodPost, base(s)+"invocation/"+inv.ID+"/response", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/vnd.awslambda.http-integration-response")
		req.Trailer = http.Header{"Lambda-Runtime-Function-Error-Type": nil, "Lambda-Runtime-Function-Error-Body": nil}
		if fail {
			req.Body = io.NopCloser(io.MultiReader(pr, trailerSetter{req.Trailer}))
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		res, err := s.Wait(ctx(t), inv)
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode != http.StatusAccepted || !res.Chunked || res.Streamed != int64(len(body)) || res.Body != nil || !bytes.Equal(got.Bytes(), body) {
			t.Fatalf("status %d, chunked %t, %d bytes streamed, %d kept, %d copied", r.StatusCode, res.Chunked, res.Streamed, len(res.Body), got.Len())
		}
		if fail != (res.Err != nil) || fail && res.Err.Type != "Function.Cut" {
			t.Fatalf("fail %t: error %v", fail, res.Err)
		}
	}
}

// trailerSetter sets the error trailers when the body before it is read,
// as aws-lambda-go does when its reader fails.
type trailerSetter struct{ trailer http.Header }

func (s trailerSetter) Read([]byte) (int, error) {
	s.trailer.Set("Lambda-Runtime-Function-Error-Type", "Function.Cut")
	s.trailer.Set("Lambda-Runtime-Function-Error-Body", base64.StdEncoding.EncodeToString([]byte(`{"errorMessage":"cut","errorType":"Function.Cut"}`)))
	return 0, io.EOF
}
