// Package sshdtest runs real OpenSSH sshd servers on loopback for the
// tests of the SSH tunnel service: it logs in with keys or passwords, opens
// direct-tcpip channels and asks for remote forwards (tcpip-forward), and
// the tests kill and restart the servers to check that tunnels recover.
//
// A real sshd is used rather than an in-process Go server because the
// behaviour under test (what sshd allows, how it refuses, what dies with a
// crashed host) is OpenSSH's. sshd needs root, so Require skips otherwise.
package sshdtest

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHD is the OpenSSH server binary. sshd re-executes itself for each
// connection, which it only does from an absolute path.
const SSHD = "/usr/sbin/sshd"

// privsepDir is the empty directory sshd chroots its unprivileged
// pre-authentication child into; sshd refuses to start without it, and
// Debian's package only creates it at boot (tmpfiles) or by its init script.
const privsepDir = "/run/sshd"

// timeout bounds the waits of this package that are not work but waiting
// for the kernel or another process: for SIGKILLed or SIGSTOPped processes
// to show it, for a killed sshd's port to refuse, for another process's lock
// on /etc/passwd. They end as soon as the condition holds; a minute is far
// beyond any of them on a loaded machine, and fails a stuck one with what
// is stuck instead of waiting for go test's timeout. sshd's start has no
// deadline (waitReady): it is a process starting, which takes what the
// machine gives it, and its exit ends the wait.
const timeout = time.Minute

// Require skips the test, saying how to get what is missing, unless sshd is
// installed and we are root (sshd must be root to switch to the logged-in
// user and to read /etc/shadow for passwords).
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err.Error())
	}
}

// Available says why sshd cannot be run here (nil when it can): it is
// missing, or we are not root. Require skips a test with that message; a
// program (the benchmarks) reports it.
func Available() error {
	if _, err := os.Stat(SSHD); err != nil {
		return fmt.Errorf("sshdtest: %s is missing (%v); install OpenSSH's server, e.g. `apt-get install openssh-server` on Debian/Ubuntu, and run as root", SSHD, err)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("sshdtest: sshd must run as root (euid is %d); run as root, e.g. in a container", os.Geteuid())
	}
	return nil
}

// Config says how to start a server.
type Config struct {
	// AuthorizedKeys may log in as any user: the server's
	// AuthorizedKeysFile is one absolute file, shared by all users.
	AuthorizedKeys []ssh.PublicKey
	// HostKey is the server's host key: an ed25519.PrivateKey, an
	// *ecdsa.PrivateKey or an *rsa.PrivateKey. nil makes a new ed25519 key.
	// It is a crypto.Signer rather than an ssh.Signer because sshd needs the
	// private key in a file, and an ssh.Signer does not give it out.
	HostKey crypto.Signer
	// Port to listen on; 0 picks a free one.
	Port int
	// LogLevel is sshd's LogLevel; empty is VERBOSE (each connection, the
	// key that logged in, each forward). DEBUG1 adds the algorithms each
	// connection negotiated.
	LogLevel string
	// ListenAddress is the IPv4 address to listen on; empty is 127.0.0.1.
	// Every address of 127.0.0.0/8 is this machine's on Linux, so several
	// servers can stand for hosts at addresses of their own.
	ListenAddress string
	// Options are sshd_config lines written before this package's own,
	// which they override: sshd takes the first value of a keyword (e.g.
	// "AllowTcpForwarding local", "PermitOpen 127.0.0.3:2222",
	// "AllowUsers alice"). A Match block goes last in a config; none may
	// be given here.
	Options []string
}

// Server is a running (or killed) sshd. Its methods are safe for
// concurrent use; they fail the test given to Start, so call Kill and
// Restart from that test's goroutine (or its subtests', which then report
// that they called FailNow on a parent). A Server made by New, outside any
// test, has Close instead; its Kill and Restart panic on failure.
type Server struct {
	// Addr is "<ListenAddress>:<Port>" ("127.0.0.1:<Port>" by default).
	Addr string
	// Port is the TCP port sshd listens on, the same across restarts.
	Port int
	// HostKey is the public key sshd proves itself with, the same across
	// restarts.
	HostKey ssh.PublicKey

	t       testing.TB
	dir     string // sshd_config, host key, authorized_keys, pid file and log
	config  string // path of sshd_config
	logPath string
	pidPath string

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil while killed
	exited chan struct{} // closed once cmd has been reaped
}

// Start writes an sshd_config, checks it with `sshd -t`, starts
// `sshd -D -f <config> -E <log>` and returns once the port answers with an
// SSH banner. The server is killed when the test ends. On failure the test
// fails with sshd's output.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	Require(t)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// New is Start without a test, for programs (the benchmarks): it returns
// the running server, or why it could not start it (with sshd's output).
// Close kills it and removes its files.
func New(cfg Config) (_ *Server, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(privsepDir, 0o755); err != nil {
		return nil, fmt.Errorf("sshdtest: creating sshd's privilege separation directory: %w", err)
	}

	// Not t.TempDir: its directories are 0700 root, and sshd reads the
	// authorized keys as the user logging in, who must reach the file.
	dir, err := os.MkdirTemp("", "sshdtest-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		return nil, fmt.Errorf("sshdtest: making the server's directory: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()

	hostKey := cfg.HostKey
	if hostKey == nil {
		_, hostKey, err = ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("sshdtest: generating a host key: %w", err)
		}
	}
	hostPub, err := ssh.NewPublicKey(hostKey.Public())
	if err != nil {
		return nil, fmt.Errorf("sshdtest: host key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(hostKey, "sshdtest host key")
	if err != nil {
		return nil, fmt.Errorf("sshdtest: host key: %w", err)
	}
	port := cfg.Port
	if port == 0 {
		if port, err = FindFreePort(); err != nil {
			return nil, err
		}
	}
	listen := cfg.ListenAddress
	if listen == "" {
		listen = "127.0.0.1"
	}
	if ip := net.ParseIP(listen); ip == nil || ip.To4() == nil {
		return nil, fmt.Errorf("sshdtest: ListenAddress %q is not an IPv4 address", listen)
	}
	for _, o := range cfg.Options {
		if strings.ContainsAny(o, "\r\n") || strings.HasPrefix(strings.ToLower(strings.TrimSpace(o)), "match") {
			return nil, fmt.Errorf("sshdtest: option %q is not one line of sshd_config outside a Match block", o)
		}
	}
	s := &Server{
		Addr:    net.JoinHostPort(listen, strconv.Itoa(port)),
		Port:    port,
		HostKey: hostPub,
		dir:     dir,
		config:  filepath.Join(dir, "sshd_config"),
		logPath: filepath.Join(dir, "sshd.log"),
		pidPath: filepath.Join(dir, "sshd.pid"),
	}

	var keys bytes.Buffer
	for _, k := range cfg.AuthorizedKeys {
		keys.Write(ssh.MarshalAuthorizedKey(k))
	}
	logLevel := cfg.LogLevel
	if logLevel == "" {
		logLevel = "VERBOSE"
	}
	hostKeyPath := filepath.Join(dir, "host_key")
	keysPath := filepath.Join(dir, "authorized_keys")
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		// sshd refuses a host key that others may read.
		{hostKeyPath, pem.EncodeToMemory(block), 0o600},
		{keysPath, keys.Bytes(), 0o644},
		{s.config, []byte(sshdConfig(listen, port, hostKeyPath, keysPath, s.pidPath, logLevel, cfg.Options)), 0o644},
	} {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			return nil, fmt.Errorf("sshdtest: %w", err)
		}
	}
	if out, err := exec.Command(SSHD, "-t", "-f", s.config).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sshdtest: sshd rejects its config (sshd -t -f %s: %v):\n%s", s.config, err, out)
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Close kills sshd (as Kill does) and removes its files. Closing a closed
// server does nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.killLocked()
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir = ""
	}
	return err
}

// sshdConfig is the server's sshd_config: the test's options first, which
// win over the defaults after them. By default everything the tunnel
// service does is allowed, and nothing makes sshd refuse or slow down
// connections that tests open quickly and in numbers.
func sshdConfig(listen string, port int, hostKey, authorizedKeys, pidFile, logLevel string, options []string) string {
	var own strings.Builder
	for _, o := range options {
		own.WriteString(o + "\n")
	}
	return fmt.Sprintf(`# Written by sshdtest.
# The test's own options, which win: sshd takes a keyword's first value.
%sListenAddress %s
Port %d
HostKey %s
PidFile %s
# One file for all users; StrictModes would refuse it because it is not in
# the user's home and not owned by the user.
AuthorizedKeysFile %s
StrictModes no
# Without PAM, sshd checks passwords against /etc/shadow itself.
UsePAM no
PasswordAuthentication yes
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowTcpForwarding yes
PermitOpen any
PermitListen any
# Remote forwards listen on loopback whatever address the client asks for.
GatewayPorts no
ClientAliveInterval 0
# Tests open many connections at once; by default sshd starts dropping
# unauthenticated connections after 10 (MaxStartups 10:30:100).
MaxStartups 200
PerSourceMaxStartups none
MaxSessions 200
# VERBOSE logs each connection, the key that logged in and each forward.
LogLevel %s
`, own.String(), listen, port, hostKey, pidFile, authorizedKeys, logLevel)
}

// start starts sshd and waits until it is ready, or says why it did not
// become so.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	// A pid file left by a killed sshd would make us believe the new one
	// is listening before it is.
	if err := os.Remove(s.pidPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sshdtest: %w", err)
	}
	if err := os.MkdirAll(privsepDir, 0o755); err != nil {
		return fmt.Errorf("sshdtest: creating sshd's privilege separation directory: %w", err)
	}
	// sshd's own output (before -E takes effect) goes to the same log. A
	// file, not a pipe: with a pipe, Wait would wait for every descendant
	// that inherited it.
	logFile, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("sshdtest: opening the sshd log: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(SSHD, "-D", "-f", s.config, "-E", s.logPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// If the test binary dies without cleaning up (a timeout panic, a
	// SIGKILL), sshd is killed too rather than left listening.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sshdtest: starting sshd: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited

	if err := s.waitReady(cmd, exited); err != nil {
		kerr := s.killLocked()
		return errors.Join(fmt.Errorf("sshdtest: sshd on %s did not become ready after %v: %v\nsshd log:\n%s", s.Addr, time.Since(began).Round(time.Millisecond), err, s.Log()), kerr)
	}
	return nil
}

// fail fails the test the server was started for, or panics for a server
// made by New.
func (s *Server) fail(err error) {
	if err == nil {
		return
	}
	if s.t == nil {
		panic(err)
	}
	s.t.Helper()
	s.t.Fatal(err)
}

// waitReady polls until sshd has written its pid file, which it does
// after binding its port, and the port answers with an SSH banner. The pid
// file proves the port is ours and not some other server's. It has no
// deadline: sshd either becomes ready or exits (it cannot bind, its config
// or keys are refused), and a start on a busy machine takes what it takes.
func (s *Server) waitReady(cmd *exec.Cmd, exited <-chan struct{}) error {
	var last error
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		select {
		case <-exited:
			return errors.Join(fmt.Errorf("sshd exited: %v", cmd.ProcessState), last)
		default:
		}
		last = s.ready(cmd.Process.Pid)
		if last == nil {
			return nil
		}
		time.Sleep(wait)
	}
}

func (s *Server) ready(pid int) error {
	b, err := os.ReadFile(s.pidPath)
	if err != nil {
		return fmt.Errorf("no pid file yet: %w", err)
	}
	if got := strings.TrimSpace(string(b)); got != strconv.Itoa(pid) {
		return fmt.Errorf("pid file %s says %q, sshd is %d", s.pidPath, got, pid)
	}
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	// sshd forks (and re-executes itself) for each connection before its
	// banner: a process start, so the read is bounded only generously (and
	// waitReady polls again after it).
	conn.SetDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading the banner: %w", err)
	}
	if !strings.HasPrefix(line, "SSH-2.0-") {
		return fmt.Errorf("banner is %q, not SSH-2.0-…", line)
	}
	return nil
}

// Kill kills sshd and every process descended from it with SIGKILL, as if
// the host had crashed: live sessions and their remote forwards die, and
// clients see their connections close. It returns once the processes are
// dead and the port refuses connections. Killing a killed server does
// nothing.
func (s *Server) Kill() {
	if s.t != nil {
		s.t.Helper()
	}
	s.mu.Lock()
	err := s.killLocked()
	s.mu.Unlock()
	s.fail(err)
}

func (s *Server) killLocked() error {
	if s.cmd == nil {
		return nil
	}
	pid := s.cmd.Process.Pid
	killErr := killTree(pid)
	// Our child is reaped by the goroutine waiting for it; its
	// descendants, orphaned, by init.
	select {
	case <-s.exited:
	case <-time.After(timeout):
		killErr = errors.Join(killErr, fmt.Errorf("sshd %d not reaped after %v", pid, timeout))
	}
	s.cmd, s.exited = nil, nil
	if killErr != nil {
		return fmt.Errorf("sshdtest: killing sshd on %s: %w", s.Addr, killErr)
	}
	if err := waitRefused(s.Addr); err != nil {
		return fmt.Errorf("sshdtest: after killing sshd: %w", err)
	}
	return nil
}

// Restart starts sshd again, killing it first if it runs, on the same port
// with the same host key and config, and returns once it is ready.
func (s *Server) Restart() {
	if s.t != nil {
		s.t.Helper()
	}
	s.Kill()
	s.fail(s.start())
}

// Freeze stops sshd and every process descended from it (SIGSTOP), as a
// host that hangs: connections stay open, nothing answers on them, and new
// ones are accepted by the kernel but never greeted. Thaw resumes them.
func (s *Server) Freeze() {
	if s.t != nil {
		s.t.Helper()
	}
	s.mu.Lock()
	err := s.signalTree(syscall.SIGSTOP)
	s.mu.Unlock()
	s.fail(err)
}

// Thaw resumes a frozen server's processes (SIGCONT).
func (s *Server) Thaw() {
	if s.t != nil {
		s.t.Helper()
	}
	s.mu.Lock()
	err := s.signalTree(syscall.SIGCONT)
	s.mu.Unlock()
	s.fail(err)
}

// signalTree sends sig to sshd and all its descendants. For SIGSTOP it
// waits, as killTree does, until no stopped process can still fork.
func (s *Server) signalTree(sig syscall.Signal) error {
	if s.cmd == nil {
		return nil
	}
	deadline := time.Now().Add(timeout)
	root := s.cmd.Process.Pid
	tree := map[int]bool{root: true}
	syscall.Kill(root, sig)
	for {
		if sig == syscall.SIGSTOP {
			if err := waitState(tree, deadline, stopped); err != nil {
				return fmt.Errorf("sshdtest: freezing sshd on %s: %w", s.Addr, err)
			}
		}
		found, err := spread(tree, sig)
		if err != nil {
			return fmt.Errorf("sshdtest: signalling sshd on %s: %w", s.Addr, err)
		}
		if !found {
			return nil
		}
	}
}

// Pid is the process id of the listening sshd (its connections are its
// descendants), or 0 while it is killed.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Log returns what sshd logged so far, across restarts.
func (s *Server) Log() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no sshd log: %v)", err)
	}
	return string(b)
}

// killTree SIGKILLs root and all its descendants. Per-connection sshd
// processes call setsid(), so a process-group kill misses them, and once
// their parent dies they are re-parented to init and no longer found from
// root. So the tree is first frozen with SIGSTOP, top down, until a walk of
// /proc finds no new descendant (a stopped process cannot fork), and only
// then killed, by pid.
func killTree(root int) error {
	deadline := time.Now().Add(timeout)
	tree := map[int]bool{root: true}
	if err := syscall.Kill(root, syscall.SIGSTOP); err != nil && err != syscall.ESRCH {
		return fmt.Errorf("stopping sshd %d: %w", root, err)
	}
	for {
		// A process may be mid-fork when stopped; once it shows as
		// stopped, its children are visible.
		if err := waitState(tree, deadline, stopped); err != nil {
			return err
		}
		found, err := spread(tree, syscall.SIGSTOP)
		if err != nil {
			return err
		}
		if !found {
			break
		}
	}
	for pid := range tree {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	// Nothing can have forked since, but make sure: anything still alive
	// below the tree is killed too.
	for {
		found, err := spread(tree, syscall.SIGKILL)
		if err != nil {
			return err
		}
		if !found {
			break
		}
	}
	return waitState(tree, deadline, dead)
}

// spread sends sig to every child of the tree's processes that is not in
// it yet and adds them; found reports whether there was any.
func spread(tree map[int]bool, sig syscall.Signal) (found bool, err error) {
	kids, err := children(tree)
	if err != nil {
		return false, err
	}
	for _, pid := range kids {
		syscall.Kill(pid, sig)
		tree[pid] = true
	}
	return len(kids) > 0, nil
}

// stopped is true of a process that can no longer fork.
func stopped(state byte) bool { return state == 'T' || state == 't' || dead(state) }

// dead is true of a process that has exited, reaped or not: its sockets
// are closed.
func dead(state byte) bool { return state == 'Z' || state == 'X' || state == 0 }

// waitState waits until every process of tree is in a state that ok accepts
// (state 0: the process is gone).
func waitState(tree map[int]bool, deadline time.Time, ok func(state byte) bool) error {
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		var late []string
		for pid := range tree {
			_, state, err := stat(pid)
			if err != nil {
				return err
			}
			if !ok(state) {
				late = append(late, fmt.Sprintf("%d (state %c)", pid, state))
			}
		}
		if len(late) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still running: %s", strings.Join(late, ", "))
		}
		time.Sleep(wait)
	}
}

// children returns the live processes, not in tree, whose parent is in
// tree.
func children(tree map[int]bool) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var kids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || tree[pid] {
			continue
		}
		ppid, state, err := stat(pid)
		if err != nil {
			return nil, err
		}
		if tree[ppid] && !dead(state) {
			kids = append(kids, pid)
		}
	}
	return kids, nil
}

// stat reads a process's parent and state from /proc/<pid>/stat; a process
// that is gone has state 0.
func stat(pid int) (ppid int, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	// "pid (comm) state ppid …"; comm may hold spaces and parentheses.
	var fields []string
	if i := bytes.LastIndexByte(b, ')'); i >= 0 {
		fields = strings.Fields(string(b[i+1:]))
	}
	if len(fields) < 2 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: cannot parse %q", pid, b)
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: parent: %w", pid, err)
	}
	return ppid, fields[0][0], nil
}

// waitRefused waits until nothing listens on addr any more.
func waitRefused(addr string) error {
	deadline := time.Now().Add(timeout)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				return nil
			}
		} else {
			conn.Close()
			err = errors.New("it still accepts connections")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not refusing connections after %v: %w", addr, timeout, err)
		}
		time.Sleep(wait)
	}
}

// usersMu serialises EnsureUser within the test binary; other binaries
// running at the same time are handled by retrying.
var usersMu sync.Mutex

// EnsureUser creates the local user name if it does not exist, with no
// home and no login shell (sshd's forwarding needs neither), and sets its
// password so it can log in with it.
func EnsureUser(t testing.TB, name, password string) {
	t.Helper()
	Require(t)
	usersMu.Lock()
	defer usersMu.Unlock()
	deadline := time.Now().Add(timeout)
	for {
		err := ensureUser(name, password)
		if err == nil {
			return
		}
		// useradd and chpasswd fail when another process holds the lock
		// on /etc/passwd or /etc/shadow, or has just added the same user.
		if time.Now().After(deadline) {
			t.Fatalf("sshdtest: user %s: %v", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ensureUser(name, password string) error {
	if _, err := user.Lookup(name); err != nil {
		if !errors.As(err, new(user.UnknownUserError)) {
			return err
		}
		if out, err := exec.Command("useradd", "-M", "-s", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
			return fmt.Errorf("useradd: %v: %s", err, bytes.TrimSpace(out))
		}
	}
	cmd := exec.Command("chpasswd")
	cmd.Stdin = strings.NewReader(name + ":" + password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("chpasswd: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// NewKey returns a new ed25519 private key in OpenSSH's PEM format,
// encrypted with passphrase unless it is empty, and its public key.
func NewKey(t testing.TB, passphrase string) (privatePEM string, pub ssh.PublicKey) {
	t.Helper()
	privatePEM, pub, err := GenerateKey(passphrase)
	if err != nil {
		t.Fatal(err)
	}
	return privatePEM, pub
}

// GenerateKey is NewKey without a test.
func GenerateKey(passphrase string) (privatePEM string, pub ssh.PublicKey, err error) {
	public, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", nil, fmt.Errorf("sshdtest: generating a key: %w", err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(private, "sshdtest")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(private, "sshdtest", []byte(passphrase))
	}
	if err != nil {
		return "", nil, fmt.Errorf("sshdtest: encoding a key: %w", err)
	}
	pub, err = ssh.NewPublicKey(public)
	if err != nil {
		return "", nil, fmt.Errorf("sshdtest: %w", err)
	}
	return string(pem.EncodeToMemory(block)), pub, nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// kernel picks it from the ephemeral range, so another process may take it
// before it is used; that is unlikely within a test.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := FindFreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// FindFreePort is FreePort without a test. The port is below the
// kernel's ephemeral range (ip_local_port_range): a port from that range,
// free now, may become the local port of any outgoing connection, such as
// a shared SSH connection from the source's sshd to the endpoint's, which
// then holds it for as long as it lives and refuses the endpoint's listen
// on it (a port conflict no retry mends).
//
// A port is handed out once per process: a port is free only until its
// taker listens on it, and 50 tunnels connected at once would otherwise
// draw the same one now and then (as likely as two of 50 people sharing a
// birthday, among ~20000 days).
func FindFreePort() (int, error) {
	low := ephemeralLow()
	for range 200 {
		port := 10000 + mrand.IntN(low-10000)
		if _, taken := handedOut.LoadOrStore(port, true); taken {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("sshdtest: no free port between 10000 and %d", low)
}

// handedOut holds the ports FindFreePort returned.
var handedOut sync.Map

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default 32768 when it cannot be read).
func ephemeralLow() int {
	const fallback = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return fallback
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 11000 {
		return fallback
	}
	return low
}
