package apibench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sshdeck/sshdeck/bench/proc"
	"github.com/sshdeck/sshdeck/bench/report"
	"github.com/sshdeck/sshdeck/internal/gobuild"
	"github.com/sshdeck/sshdeck/internal/upstreamtest"
)

// world is a running `sshdeck serve` with its data: users, their tokens
// and hosts, alerts, a warm releases cache.
type world struct {
	o      report.Options
	dir    string
	bin    string
	cmd    *exec.Cmd
	done   chan error
	url    string
	pprof  string // the server's pprof listener, when profiling
	client *http.Client

	github *upstreamtest.GitHub
	remote *upstreamtest.Alerts

	// Tokens of the users: small has 10 hosts, big bigHosts, writer one
	// host per worker of the PUT runs.
	small, big, writer string
	bigHosts           int
}

// start builds sshdeck (with the pprof build tag when profiling), starts
// the fakes of GitHub and the remote alerts, and serves on a free loopback
// port over a new data directory.
func start(ctx context.Context, o report.Options, profileDir string) (*world, error) {
	dir, err := os.MkdirTemp("", "sshdeck-apibench")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "sshdeck")
	var args []string
	if profileDir != "" {
		args = append(args, "-tags", "pprof")
	}
	o.Logf("building sshdeck")
	if err := gobuild.Build(filepath.Join(o.Root, "cmd", "sshdeck"), bin, nil, args...); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return startBinary(ctx, o, dir, bin, profileDir != "")
}

// startBinary serves with the sshdeck binary bin, its data in dir (which
// close removes).
func startBinary(ctx context.Context, o report.Options, dir, bin string, pprof bool) (_ *world, err error) {
	// The client's timeout guards a protocol wait (one request to a server
	// that is up): a minute is far beyond any answer, and turns a hang into
	// an error.
	w := &world{o: o, dir: dir, bin: bin, client: &http.Client{Timeout: time.Minute}}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	w.github = upstreamtest.NewGitHub()
	w.remote = upstreamtest.NewAlerts()
	expires := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	w.remote.Set(http.StatusOK, `[
		{"id":"remote-1","title":"Upgrade available","message":"sshdeck 1.3 is out","expiresAt":"`+expires+`","priority":"low","type":"info","actionUrl":"https://example.com/r","actionText":"Read"},
		{"id":"remote-2","title":"Planned outage","message":"Sunday 02:00 UTC","expiresAt":"`+expires+`","priority":"high","type":"warning","actionUrl":"","actionText":""}]`)

	data := filepath.Join(dir, "data")
	logPath := filepath.Join(dir, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	w.cmd = exec.Command(w.bin, "serve", "--addr", "127.0.0.1:0", "--tunnel-addr", "127.0.0.1:0", "--data", data)
	w.cmd.Env = append(os.Environ(),
		"SSHDECK_RELEASES_REPO=acme/deck",
		"SSHDECK_RELEASES_API_URL="+w.github.URL,
		"SSHDECK_ALERTS_URL="+w.remote.URL,
		"SSHDECK_GITHUB_TOKEN=",
	)
	if pprof {
		w.cmd.Env = append(w.cmd.Env, "SSHDECK_PPROF_ADDR=127.0.0.1:0")
	}
	// Its request log goes to a file: writing it is part of the cost.
	w.cmd.Stdout, w.cmd.Stderr = logFile, logFile
	if err := w.cmd.Start(); err != nil {
		return nil, err
	}
	w.done = make(chan error, 1)
	go func() { w.done <- w.cmd.Wait() }()
	if err := w.waitServing(ctx, logPath, pprof); err != nil {
		return nil, err
	}
	o.Logf("serving on %s (pid %d), request log in %s", w.url, w.cmd.Process.Pid, logPath)
	return w, nil
}

// waitServing reads the log until the server says where it serves (and,
// when profiling, where its pprof listener is). It has no deadline: a
// process starting on a busy machine takes what it takes; the wait ends
// when the server serves, when it exits, or with ctx.
func (w *world) waitServing(ctx context.Context, logPath string, pprof bool) error {
	for {
		select {
		case err := <-w.done:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("sshdeck serve exited (%v):\n%s", err, log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		f, err := os.Open(logPath)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var entry struct {
				Msg, API, Addr string
			}
			if json.Unmarshal(sc.Bytes(), &entry) != nil {
				continue
			}
			switch entry.Msg {
			case "serving":
				w.url = entry.API
			case "pprof":
				w.pprof = "http://" + entry.Addr
			}
		}
		f.Close()
		if w.url != "" && (!pprof || w.pprof != "") {
			return nil
		}
	}
}

func (w *world) close() {
	if w.cmd != nil && w.cmd.Process != nil {
		w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(time.Minute):
			// serve gives requests 10 s after SIGTERM; one that has not
			// exited after a minute is stuck, not slow. Nothing fails.
			w.cmd.Process.Kill()
			<-w.done
		}
	}
	if w.github != nil {
		w.github.Close()
	}
	if w.remote != nil {
		w.remote.Close()
	}
	os.RemoveAll(w.dir)
}

// admin runs an admin command of sshdeck against the running server (it
// goes through the admin socket) and returns its stdout.
func (w *world) admin(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, w.bin, append(args, "--data", filepath.Join(w.dir, "data"))...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("sshdeck %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// user adds a user and returns a new token of theirs, as the README does.
func (w *world) user(ctx context.Context, name string) (string, error) {
	if _, err := w.admin(ctx, "user", "add", name); err != nil {
		return "", err
	}
	return w.admin(ctx, "token", "create", "--user", name, "--name", "bench")
}

// call sends one request and decodes a 2xx answer into out (when not nil).
func (w *world) call(ctx context.Context, token, method, path string, body any, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.url+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// hostBody is a host as the benchmarks send it: with a password, so that
// every read opens sealed credentials.
func hostBody(name, password string) map[string]any {
	return map[string]any{
		"name": name, "ip": "10.0.0.5", "port": 22, "username": "deploy", "authType": "password",
		"password": password, "folder": "prod/eu", "tags": []string{"prod", "eu"},
		"enableTerminal": true, "enableTunnel": true, "enableFileManager": true, "defaultPath": "/var/www",
	}
}

// seedHosts creates n hosts for the token's user, a few requests at a time
// (each is a store write).
func (w *world) seedHosts(ctx context.Context, token string, n int) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				err := w.call(ctx, token, "POST", "/ssh/db/host", hostBody("host-"+strconv.Itoa(i), "pw-"+strconv.Itoa(i)), nil)
				if err != nil {
					mu.Lock()
					first = cmp(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func cmp(first, err error) error {
	if first == nil {
		return err
	}
	return first
}

// seed makes the users, their hosts, the alerts and their dismissals, the
// first 100 recent files of the recent runs' host, and the releases cache.
func (w *world) seed(ctx context.Context, writers int) error {
	var err error
	if w.small, err = w.user(ctx, "small"); err != nil {
		return err
	}
	if w.big, err = w.user(ctx, "big"); err != nil {
		return err
	}
	if w.writer, err = w.user(ctx, "writer"); err != nil {
		return err
	}
	w.o.Logf("seeding hosts: 10, %d and %d", w.bigHosts, writers)
	for _, s := range []struct {
		token string
		n     int
	}{{w.small, 10}, {w.big, w.bigHosts}, {w.writer, writers}} {
		if err := w.seedHosts(ctx, s.token, s.n); err != nil {
			return err
		}
	}
	// Four published alerts, two of which small dismissed, with one of the
	// two remote ones: small sees three.
	var ids []string
	for i, p := range []string{"critical", "high", "medium", "low"} {
		id, err := w.admin(ctx, "alert", "publish", "--title", "Alert "+strconv.Itoa(i), "--message", "Maintenance window "+p, "--priority", p, "--expires", "24h")
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	for _, id := range []string{ids[1], ids[3], "remote-1"} {
		if err := w.call(ctx, w.small, "POST", "/alerts/dismiss", map[string]string{"alertId": id}, nil); err != nil {
			return err
		}
	}
	var visible []struct{ ID string }
	if err := w.call(ctx, w.small, "GET", "/alerts", nil, &visible); err != nil {
		return err
	}
	if len(visible) != 3 {
		return fmt.Errorf("small sees %d alerts, want 3: %+v", len(visible), visible)
	}
	// The recent files of small's host 1 at their cap of 100: the runs
	// then move entries to the top and trim the oldest.
	for i := range recentCap {
		if err := w.call(ctx, w.small, "POST", "/ssh/file_manager/recent", recentBody(i), nil); err != nil {
			return err
		}
	}
	var recent []struct{ Path string }
	if err := w.call(ctx, w.small, "GET", "/ssh/file_manager/recent?hostId=1&limit=100", nil, &recent); err != nil {
		return err
	}
	if len(recent) != recentCap {
		return fmt.Errorf("host 1 has %d recent files, want %d", len(recent), recentCap)
	}
	return w.warmReleases(ctx)
}

// recentCap is the contract's most recent files per host; recentPaths is
// how many paths the runs cycle through, more than the cap, so that adds
// both move entries to the top and trim the oldest.
const (
	recentCap   = 100
	recentPaths = 150
)

func recentBody(i int) map[string]any {
	return map[string]any{"path": fmt.Sprintf("/var/log/app/%03d.log", i%recentPaths), "isSSH": true, "hostId": 1}
}

const releasesPath = "/releases/rss?per_page=20"

// warmReleases fills the releases cache and checks that the next answer
// comes from it.
func (w *world) warmReleases(ctx context.Context) error {
	var feed struct {
		Cached bool
		Items  []json.RawMessage
	}
	for i := range 2 {
		if err := w.call(ctx, w.small, "GET", releasesPath, nil, &feed); err != nil {
			return err
		}
		if len(feed.Items) == 0 || feed.Cached != (i == 1) {
			return fmt.Errorf("releases answer %d: cached %t with %d items", i+1, feed.Cached, len(feed.Items))
		}
	}
	return nil
}

// cpu returns the CPU time (user and system) the server process has used.
func (w *world) cpu() (time.Duration, error) {
	p, err := proc.Stat(w.cmd.Process.Pid)
	return p.CPU, err
}

// memory reads the server process's resident set, now and at its peak.
func (w *world) memory() (proc.Memory, error) {
	return proc.Status(w.cmd.Process.Pid)
}
