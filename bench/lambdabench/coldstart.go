package lambdabench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sshdeck/sshdeck/bench/proc"
	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/bench/runtimeapi"
	"github.com/sshdeck/sshdeck/internal/cloudtest"
	"github.com/sshdeck/sshdeck/shared/lambdahttp"
	"github.com/sshdeck/sshdeck/shared/routes"
)

// coldStart is one run of a function's bootstrap, from exec to its answer
// to its first event.
type coldStart struct {
	// init is exec to the first next request (the end of the function's
	// initialisation), first exec to the answer of the first event.
	init, first time.Duration
	// cpu is the process's CPU time (user and system, its rusage) until it
	// exited, when the Runtime API closed after its answer: less noisy than
	// wall time on a busy machine. initCPU is its CPU time at its first
	// next (proc.RunTime: main's setup), so that cpu - initCPU is the CPU
	// of its answer to the event (and of its exit right after, a fraction
	// of a millisecond): a login's argon2id hash shows there.
	cpu, initCPU time.Duration
	// peakRSS is the process's peak resident memory (VmHWM) once it had
	// answered, in bytes.
	peakRSS uint64
	// initCalls are the DynamoDB calls made before the first next,
	// calls those of the first event; initKMS and kms the same of KMS.
	initCalls, calls, initKMS, kms map[string]int
	// answer is the status of the response (200) or the authorizer's
	// effect (Allow).
	answer string
	// output is what the function wrote (stdout and stderr).
	output string
}

// results are each function's runs, by name.
type results map[string][]coldStart

// coldStarts builds every function for this machine and runs each one's
// bootstrap against a fresh fixture, round-robin (every function once, then
// again) so that a burst of load on the machine spreads over them all.
func coldStarts(ctx context.Context, o report.Options, fns []function) (results, error) {
	dir, err := os.MkdirTemp("", "lambdabench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	o.Logf("building %d functions for %s/%s into %s", len(fns), runtime.GOOS, runtime.GOARCH, dir)
	if err := buildFunctions(ctx, o.Root, dir, fns, nil); err != nil {
		return nil, err
	}
	n := runs
	if o.Quick {
		n = 1
	}
	res := results{}
	for i := range n {
		o.Logf("cold starts: round %d of %d", i+1, n)
		for _, f := range fns {
			cs, err := runColdStart(ctx, o.Root, filepath.Join(dir, f.name), f, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
			res[f.name] = append(res[f.name], cs)
		}
	}
	return res, nil
}

// lambdaEnv is the environment Lambda gives a provided.al2023 function of
// memoryMB (routes.Route.MemoryMB, as infra/functions.go), with the
// Runtime API at api.
func lambdaEnv(name string, memoryMB int, api string) []string {
	fn := "sshdeck-" + name
	return []string{
		"AWS_LAMBDA_RUNTIME_API=" + api,
		"AWS_LAMBDA_FUNCTION_NAME=" + fn,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=" + strconv.Itoa(memoryMB),
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/" + fn,
		"AWS_LAMBDA_LOG_STREAM_NAME=2026/01/01/[$LATEST]0123456789abcdef0123456789abcdef",
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"AWS_DEFAULT_REGION=eu-west-1",
		"LAMBDA_TASK_ROOT=/var/task",
		"LAMBDA_RUNTIME_DIR=/var/runtime",
		"_HANDLER=bootstrap",
		"TZ=:UTC",
		"LANG=en_US.UTF-8",
		"PATH=/usr/local/bin:/usr/bin/:/bin:/opt/bin",
		"LD_LIBRARY_PATH=/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib",
	}
}

// runColdStart starts a fresh fixture (DynamoDB holding what the events
// expect, KMS, the upstream services) and a Runtime API with the function's
// event queued, runs the bootstrap bin with the environment Lambda and the
// CDK stack would give it (plus env), and times it until the Runtime API
// has its answer; then closes the Runtime API, which makes it exit.
func runColdStart(ctx context.Context, root, bin string, f function, env []string) (coldStart, error) {
	var cs coldStart
	cloud, err := cloudtest.New(ctx)
	if err != nil {
		return cs, err
	}
	defer cloud.Close()
	fixture, err := cloud.SeedFixture(ctx, filepath.Join(root, "events"))
	if err != nil {
		return cs, fmt.Errorf("seed: %w", err)
	}
	payload, err := eventPayload(root, f, fixture, time.Now())
	if err != nil {
		return cs, err
	}

	var mu sync.Mutex // guards cs, which OnNext writes
	started := make(chan int, 1)
	rt := runtimeapi.New(runtimeapi.Config{
		FunctionARN: "arn:aws:lambda:eu-west-1:123456789012:function:sshdeck-" + f.name,
		OnNext: func(n int) {
			if n == 1 {
				// The function waits for this next's answer: its CPU
				// time stands still while it is read.
				initCPU, _ := proc.RunTime(<-started)
				mu.Lock()
				cs.initCalls, cs.initKMS = cloud.Dynamo.Calls(), cloud.KMS.AllCalls()
				cs.initCPU = initCPU
				mu.Unlock()
			}
		},
	})
	defer rt.Close()
	inv := rt.Enqueue(payload)
	cloud.Reset()

	cmd := exec.Command(bin)
	cmd.Dir = filepath.Dir(bin)
	memory := routes.DefaultMemoryMB
	if !f.isAuthorizer() {
		memory = f.route.MemoryMB()
	}
	cmd.Env = append(append(lambdaEnv(f.name, memory, rt.Addr), cloud.Env()...), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return cs, err
	}
	started <- cmd.Process.Pid
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	// No deadline on the answer: a cold start on a busy machine takes what
	// it takes. The wait ends with the answer, with the process (one that
	// exited will not answer) or with ctx.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel() // it will not answer
		case <-wctx.Done():
		}
	}()
	res, err := rt.Wait(wctx, inv)
	// Still running (it waits for its next event): its peak memory.
	if m, merr := proc.Status(cmd.Process.Pid); merr == nil {
		cs.peakRSS = m.Peak
	}
	// Without its Runtime API a function exits (aws-lambda-go fails on
	// next); one that has not after a minute is not slow but stuck, and is
	// killed (the run fails below only if it had not answered).
	rt.Close()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-exited
	}
	if err != nil {
		if exitErr != nil || ctx.Err() == nil {
			err = fmt.Errorf("no answer (%v; exit: %v); its output:\n%s", err, exitErr, tail(out.String()))
		}
		return cs, err
	}
	if res.Err != nil {
		return cs, fmt.Errorf("the function answered an error: %v; its output:\n%s", res.Err, tail(out.String()))
	}
	cs.output = out.String()
	cs.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	next, _ := rt.FirstNext()
	cs.init, cs.first = next.Sub(start), res.At.Sub(start)

	mu.Lock()
	defer mu.Unlock()
	cs.calls, cs.kms = minus(cloud.Dynamo.Calls(), cs.initCalls), minus(cloud.KMS.AllCalls(), cs.initKMS)
	cs.answer, err = checkAnswer(f, res.Body, res.ContentType)
	if err != nil {
		return cs, fmt.Errorf("%w; its output:\n%s", err, tail(out.String()))
	}
	return cs, nil
}

// eventPayload is the event of function f as the fixture takes it now: the
// file as it is, but for the routes that send a TOTP code, whose code is
// the current one of the fixture's secret (cloudtest.Fixture.Event).
func eventPayload(root string, f function, fixture *cloudtest.Fixture, now time.Time) ([]byte, error) {
	switch f.name {
	case "enable-totp", "disable-totp":
		ev, err := fixture.Event(filepath.Join(root, "events"), f.name, now)
		if err != nil {
			return nil, err
		}
		return json.Marshal(ev)
	}
	return os.ReadFile(f.event)
}

// checkAnswer reads a route's status (2xx) or the authorizer's effect
// (Allow). A route that streams (list-hosts) answers in API Gateway's
// streaming format (contentType lambdahttp.StreamContentType).
func checkAnswer(f function, body []byte, contentType string) (string, error) {
	if contentType == lambdahttp.StreamContentType {
		status, _, rest, err := lambdahttp.ReadStream(bytes.NewReader(body))
		if err != nil {
			return "", fmt.Errorf("the streamed answer: %v", err)
		}
		if status < 200 || status > 299 {
			b, _ := io.ReadAll(rest)
			return "", fmt.Errorf("status %d, want 2xx: %s", status, b)
		}
		return fmt.Sprint(status), nil
	}
	if f.isAuthorizer() {
		var resp struct {
			PrincipalID    string
			PolicyDocument struct{ Statement []struct{ Effect string } }
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			return "", fmt.Errorf("the authorizer's answer is not a policy: %v: %s", err, body)
		}
		if st := resp.PolicyDocument.Statement; len(st) == 0 || st[0].Effect != "Allow" || resp.PrincipalID == "" {
			return "", fmt.Errorf("the authorizer did not allow the valid token: %s", body)
		}
		return "Allow", nil
	}
	var resp struct {
		StatusCode int
		Body       string
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return "", fmt.Errorf("the answer is not a proxy response: %v: %s", err, body)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("status %d, want 2xx: %s", resp.StatusCode, resp.Body)
	}
	return fmt.Sprint(resp.StatusCode), nil
}

// minus is after - before, by key, without the zeros.
func minus(after, before map[string]int) map[string]int {
	d := maps.Clone(after)
	for k, n := range before {
		d[k] -= n
		if d[k] == 0 {
			delete(d, k)
		}
	}
	return d
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) }

// median and max of a function's runs.
func stats(runs []coldStart, of func(coldStart) time.Duration) (p50, maxd time.Duration) {
	ds := make([]time.Duration, len(runs))
	for i, r := range runs {
		ds[i] = of(r)
	}
	slices.Sort(ds)
	n := len(ds)
	if n%2 == 1 {
		p50 = ds[n/2]
	} else {
		p50 = (ds[n/2-1] + ds[n/2]) / 2
	}
	return p50, ds[n-1]
}

func coldStartSection(o report.Options, fns []function, res results) report.Section {
	n := len(res[fns[0].name])
	s := report.Section{
		Title:   "Lambda functions: cold start",
		Command: command(o),
		Text: fmt.Sprintf("Each function built for this machine (%s/%s) with the Makefile's flags, its real bootstrap run as a process "+
			"against a minimal Lambda Runtime API on loopback (`bench/runtimeapi`, the protocol aws-lambda-go's runtime client speaks) "+
			"with the environment Lambda gives its function (256 MB; 1024 MB for the routes that hash passwords) and the settings the CDK stack gives it, pointing at DynamoDB (minidyn), "+
			"KMS (kmstest) and the upstream services (upstreamtest) in the benchmark's process, which hold the fixture of `events/`. "+
			"Its event (`events/<name>.json`, the authorizer's `events/authorizer/valid.json`) is queued before exec. "+
			"**init** is exec to the first `GET …/invocation/next` (main's setup done), **first answer** exec to the Runtime API "+
			"receiving the response to the event (which must be 2xx, or Allow), **CPU** the process's user and system time "+
			"(its rusage) until it exited (the Runtime API closes after the answer) (steadier than wall time on a busy machine), "+
			"**answer CPU** the part of it after the first `next`: the CPU of answering the event (and of exiting, a fraction of a "+
			"millisecond), with the CPU at the first `next` read from the scheduler's count of the process's threads "+
			"(`/proc/<pid>/task/*/sched`, which its rusage adds up to), **peak RSS** its resident memory's high-water mark (VmHWM) "+
			"once it had answered, in MB, the largest of the runs. %d runs per function, each on a fresh fixture, "+
			"round-robin over the functions; milliseconds.", runtime.GOOS, runtime.GOARCH, n),
	}
	t := report.Table{Header: []string{"function", "init p50", "init max", "first answer p50", "first answer max", "CPU p50", "answer CPU p50", "peak RSS", "answer"}}
	var worst, loginCPU time.Duration
	var worstName string
	var hashing []string
	for _, f := range fns {
		runs := res[f.name]
		ip50, imax := stats(runs, func(c coldStart) time.Duration { return c.init })
		fp50, fmax := stats(runs, func(c coldStart) time.Duration { return c.first })
		cpu, _ := stats(runs, func(c coldStart) time.Duration { return c.cpu })
		answerCPU, _ := stats(runs, func(c coldStart) time.Duration { return c.cpu - c.initCPU })
		var peak uint64
		for _, r := range runs {
			peak = max(peak, r.peakRSS)
		}
		t.Add(f.name, ms(ip50), ms(imax), ms(fp50), ms(fmax), ms(cpu), ms(answerCPU), fmt.Sprintf("%.1f", float64(peak)/1e6), runs[0].answer)
		if f.name == "login" {
			loginCPU = answerCPU
		}
		if f.route.Argon2 {
			// Their answer is an argon2id hash: the request's work, not
			// the cold start's, reported below for login.
			hashing = append(hashing, f.name)
			continue
		}
		if fp50 > worst {
			worst, worstName = fp50, f.name
		}
	}
	s.Tables = []report.Table{t}
	verdict := "met"
	if worst > goalColdStartMS*time.Millisecond {
		verdict = "**not met**"
	}
	s.Notes = fmt.Sprintf("Worst median first answer: **%s ms** (%s); the goal, ≤ %d ms, is %s. "+
		"This is the process's own cold start only: Lambda's part (placing the sandbox, downloading and unpacking the zip, "+
		"starting the runtime) comes before exec and is not in it; and a 256 MB function gets a fraction of a vCPU "+
		"(Lambda allocates CPU in proportion to memory, a full vCPU at 1769 MB), where these runs had up to %d cores, "+
		"shared with the fixture's servers in the benchmark's process.",
		ms(worst), worstName, goalColdStartMS, verdict, runtime.NumCPU())
	if len(hashing) > 0 {
		s.Notes += fmt.Sprintf(" Not in that worst: %s, whose answer is an argon2id hash of a password (the work of the request, "+
			"not of the cold start; their functions have %d MB).", strings.Join(hashing, ", "), routes.PasswordMemoryMB)
	}
	if loginCPU > 0 {
		// Lambda gives a function CPU in proportion to its memory: a
		// full vCPU at 1769 MB.
		at := func(mb int) time.Duration { return time.Duration(float64(loginCPU) * lambdaFullVCPUMB / float64(mb)) }
		login, _ := routes.ByName("login")
		verdict := "met"
		if at(login.MemoryMB()) > goalLoginCPUMS*time.Millisecond {
			verdict = "**not met**"
		}
		s.Notes += fmt.Sprintf(" Login's answer, the first of a fresh process (its argon2id check of the password, whose 19 MiB "+
			"the process faults in and its GC then collects, and the token's writes), took **%s ms** of CPU here (median). "+
			"At %d MB (%d/%d of a vCPU) that is about **%s ms**, against the goal of a login under %d ms; so login has %d MB, "+
			"about **%s ms**: %s. (A later login of the same process reuses the memory and costs about the hash alone: "+
			"`go test -bench PasswordVerify ./shared/auth/`.) Peak RSS is the column above, against the function's memory.",
			ms(loginCPU), routes.DefaultMemoryMB, routes.DefaultMemoryMB, lambdaFullVCPUMB, ms(at(routes.DefaultMemoryMB)),
			goalLoginCPUMS, login.MemoryMB(), ms(at(login.MemoryMB())), verdict)
		if runtime.GOARCH != "arm64" {
			s.Notes += fmt.Sprintf(" The functions run on arm64 in AWS, where golang.org/x/crypto/argon2 runs its generic Go code, "+
				"not the %s assembly of this machine's build: measure there before trusting a margin.", runtime.GOARCH)
		}
	}
	return s
}

// The memory at which Lambda gives a full vCPU, and the bound on
// a login.
const (
	lambdaFullVCPUMB = 1769
	goalLoginCPUMS   = 250
)

func callsSection(o report.Options, fns []function, res results) report.Section {
	s := report.Section{
		Title:   "Lambda functions: DynamoDB calls per request",
		Command: command(o),
		Text: "The DynamoDB calls (counted by `internal/dynamotest`) of the cold starts above: those of main's setup, before the first " +
			"`next`, and those of the first event, by operation; and the KMS calls of the event (credentials are sealed with a data key " +
			"from KMS). The routes' functions run behind the authorizer, whose answer API Gateway caches for 30 s per token " +
			"(`infra/api.go`): its lookup is its own row, and is not made again by a route's request while the answer is cached. " +
			"The fixture's tokens were used a moment before, so the authorizer's row has no write of a token's `lastUsedAt`.",
	}
	t := report.Table{Header: []string{"function", "route", "init calls", "calls per request", "total", "KMS per request", "goal"}}
	var missed, varied []string
	for _, f := range fns {
		runs := res[f.name]
		r := runs[0]
		for _, other := range runs[1:] {
			if !maps.Equal(other.calls, r.calls) || !maps.Equal(other.initCalls, r.initCalls) {
				varied = append(varied, f.name)
				break
			}
		}
		goal := ""
		switch {
		case slices.Contains(oneCall, f.name) && total(r.calls) == 1:
			goal = "1 call: met"
		case slices.Contains(oneCall, f.name):
			goal = fmt.Sprintf("1 call: **not met** (%d)", total(r.calls))
			missed = append(missed, f.name)
		case f.isAuthorizer():
			goal = "cached 30 s by API Gateway"
		}
		t.Add(f.name, f.describe(), formatCalls(r.initCalls), formatCalls(r.calls), total(r.calls), formatCalls(r.kms), goal)
	}
	s.Tables = []report.Table{t}
	var notes []string
	if len(missed) > 0 {
		notes = append(notes, "One call per request is not met by "+strings.Join(missed, ", ")+".")
	} else if slices.ContainsFunc(fns, func(f function) bool { return slices.Contains(oneCall, f.name) }) {
		notes = append(notes, "list-hosts, get-host and update-host make one DynamoDB call each (besides the authorizer's cached lookup).")
	}
	if len(varied) > 0 {
		notes = append(notes, "The calls differed between runs of "+strings.Join(varied, ", ")+"; the table shows the first run's.")
	}
	s.Notes = strings.Join(notes, " ")
	return s
}
