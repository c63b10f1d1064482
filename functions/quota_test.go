package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/bench/runtimeapi"
	"github.com/sshdeck/sshdeck/internal/cloudtest"
	"github.com/sshdeck/sshdeck/internal/gobuild"
	"github.com/sshdeck/sshdeck/shared/lambdaapp"
	"github.com/sshdeck/sshdeck/shared/lambdahttp"
)

// TestListHostsAtTheQuota runs the real list-hosts bootstrap (built
// as make build builds it, for this machine) against a Runtime API on
// loopback (bench/runtimeapi) that invokes it as InvokeWithResponseStream
// does, over DynamoDB and KMS on loopback: aws-lambda-go posts the answer
// chunked, in API Gateway's streaming format, and the whole list of 1000
// hosts with 64 KiB keys arrives, valid; the process's peak resident memory
// (VmHWM) is that of a page of hosts: the list of 500 such hosts and the
// list of 1000 reach the same peak, well under the function's 256 MB.
//
// Then the same list through the entry point in this process
// (lambdaapp.StreamRoute): one Query per page of 100 hosts, every host.
func TestListHostsAtTheQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a bootstrap and seeds 1000 hosts of 64 KiB")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bin := filepath.Join(t.TempDir(), "bootstrap")
	if err := gobuild.Build("./list-hosts", bin, []string{"CGO_ENABLED=0"}, "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w"); err != nil {
		t.Fatal(err)
	}
	c := cloudtest.Start(t)
	if err := c.Seed(context.Background(), eventsDir); err != nil {
		t.Fatal(err)
	}
	event := readEvent(t, "list-hosts")
	payload, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}

	rt := runtimeapi.New(runtimeapi.Config{Timeout: 5 * time.Minute})
	t.Cleanup(rt.Close)
	cmd := exec.Command(bin)
	// Lambda's memory: 256 MB, which Go learns from nothing but GOMEMLIMIT
	// if set; the function sets none, as in AWS.
	cmd.Env = append(c.Env(), "AWS_LAMBDA_RUNTIME_API="+rt.Addr, "AWS_LAMBDA_FUNCTION_NAME=list-hosts",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256", "PATH="+os.Getenv("PATH"))
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })

	invoke := func() (int, []byte, int64, runtimeapi.Result) {
		t.Helper()
		pr, pw := io.Pipe()
		inv := rt.EnqueueStream(payload, pw)
		type answer struct {
			status int
			body   []byte
			hosts  int
			err    error
		}
		got := make(chan answer, 1)
		count := &countingReader{r: pr}
		go func() {
			defer io.Copy(io.Discard, pr)
			status, _, body, err := lambdahttp.ReadStream(count)
			if err != nil {
				got <- answer{err: err}
				return
			}
			// Keep a small answer whole; read a large one a host at a
			// time, as a client would.
			var head bytes.Buffer
			tee := io.TeeReader(body, &limitedBuffer{&head, 1 << 20})
			hosts, keys := readHostList(t, tee)
			_ = keys
			got <- answer{status: status, body: head.Bytes(), hosts: hosts}
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		go func() {
			select {
			case <-exited:
				cancel()
			case <-ctx.Done():
			}
		}()
		res, err := rt.Wait(ctx, inv)
		pw.Close()
		if err != nil {
			t.Fatalf("%v\n%s", err, logs.String())
		}
		if res.Err != nil {
			t.Fatalf("the function failed: %v\n%s", res.Err, logs.String())
		}
		a := <-got
		if a.err != nil {
			t.Fatal(a.err)
		}
		return a.status, a.body, int64(count.n), res
	}

	status, body, _, res := invoke()
	if status != http.StatusOK || !strings.HasPrefix(string(body), `[{"id":1,`) {
		t.Fatalf("the fixture's list: %d %s", status, body)
	}
	if res.ContentType != lambdahttp.StreamContentType || !res.Chunked {
		t.Fatalf("posted as %q, chunked %t; want %q, chunked", res.ContentType, res.Chunked, lambdahttp.StreamContentType)
	}
	small := procStatus(t, cmd.Process.Pid, "VmHWM")

	owner, _ := event.RequestContext.Authorizer["userId"].(string)
	var peaks, sizes [2]int64
	var size int64
	for i := range peaks {
		// The fixture's 2 hosts and 499 twice: 500, then the quota of 1000.
		seedHosts(t, c.Store, c.Sealer, owner, quotaHosts/2-1)
		start := time.Now()
		status, _, n, res := invoke()
		elapsed := time.Since(start)
		peaks[i], size = procStatus(t, cmd.Process.Pid, "VmHWM"), n
		sizes[i] = n
		if status != http.StatusOK || res.Streamed < n {
			t.Fatalf("status %d, %d bytes streamed, %d read", status, res.Streamed, n)
		}
		t.Logf("list of %d hosts with 64 KiB keys: %.1f MB streamed in %v (Lambda-Runtime-Function-Response-Mode %q); "+
			"the bootstrap's peak RSS so far %.1f MB (%.1f MB after the fixture's list)",
			(i+1)*(quotaHosts/2-1)+2, float64(res.Streamed)/1e6, elapsed.Round(time.Millisecond), res.Mode, float64(peaks[i])/1e6, float64(small)/1e6)
	}
	if size <= runtimeapi.MaxPayload {
		t.Fatalf("the answer is %d bytes, not past the 6 MB buffered limit", size)
	}

	// The environment the bootstrap had, for the entry point in process.
	for _, kv := range c.Env() {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	fn, err := lambdaapp.StreamRoute("list-hosts")
	if err != nil {
		t.Fatal(err)
	}
	c.Dynamo.ResetCalls()
	resp, err := fn.Handle(context.Background(), event)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	status, header, list, err := lambdahttp.ReadStream(resp)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK || header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("in process: status %d, headers %v", status, header)
	}
	if hosts, keys := readHostList(t, list); hosts != quotaHosts || keys != quotaHosts-2 {
		t.Fatalf("in process: the list holds %d hosts, %d of them with a 64 KiB key; want %d and %d", hosts, keys, quotaHosts, quotaHosts-2)
	}
	// Ten full pages, and the empty one that tells the last was the last.
	if calls := c.Dynamo.Calls(); calls["Query"] != quotaHosts/100+1 || len(calls) != 1 {
		t.Errorf("in process: DynamoDB calls %v, want one Query per page of 100 hosts", calls)
	}
	// Twice the list, about the same peak. A function that held the answer
	// would grow by at least the second half of it (33 MB of bytes alone;
	// twice that once the collector's target doubles the live heap). One
	// that streams holds a page at a time (100 hosts: the DynamoDB answer,
	// its items, the opened keys and their JSON, some 25 MB, which the
	// collector lets reach about twice that), so its peak is the largest
	// of its pages' and grows only by chance with more of them: a few MB
	// on an idle machine, 8.4 on one busy CI run, 16.6 on a busy fresh
	// clone (the half-answer bound this test had, 16.7 there, was too close
	// to that). The answer's growth itself tells the two apart with a
	// factor of two each way. 256 MB is the function's memory in AWS
	// (routes.DefaultMemoryMB).
	if grown := peaks[1] - peaks[0]; grown > sizes[1]-sizes[0] || peaks[1] > 128<<20 {
		t.Fatalf("peak RSS %d bytes after 500 hosts, %d after 1000 (answers of %d and %d bytes): not bounded by a page",
			peaks[0], peaks[1], sizes[0], sizes[1])
	}
}

// procStatus reads a size field of /proc/<pid>/status, in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// limitedBuffer keeps the first n bytes written to it.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
