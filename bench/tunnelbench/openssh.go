package tunnelbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// openSSH is OpenSSH doing a tunnel's job through the same sshd pair: what
// a relay tunnel replaces is
//
//	ssh -F <config> -J source -R 127.0.0.1:EP:127.0.0.1:SP endpoint -N
//
// run on this machine: the connection to the endpoint rides in one to the
// source, as a relay tunnel's does. What a direct tunnel replaces (issue
// 19), `ssh -R … endpoint` run on the source itself, is the same without
// -J: this machine is the source (the echo service listens here). What
// `sshdeck forward -L` replaces is `ssh -L … source`: this machine is the
// user's, and the echo service is reached from the source.
type openSSH struct {
	*child
	config string
	log    string
}

// sshRun says how OpenSSH runs a tunnel.
type sshRun struct {
	// oneHop is `ssh -R … endpoint` as run on the source, without -J.
	oneHop bool
	// local is `ssh -L 127.0.0.1:PORT:127.0.0.1:SP source`: ssh listens
	// on the port and the source connects to the echo (one hop; oneHop
	// is moot).
	local bool
	// cipher is forced on every hop (Ciphers in the config, which the
	// ProxyJump ssh reads too: it gets -F); "" leaves OpenSSH's defaults.
	cipher string
}

// child is a process the bench started, in a process group of its own,
// and killed if the bench dies.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func startChild(cmd *exec.Cmd) (*child, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(cmd.Path), err)
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(c.exited) }()
	return c, nil
}

// stop ends the process and its own children (its process group: ssh's
// ProxyJump ssh).
func (c *child) stop() {
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(time.Minute): // not slow but stuck: nothing fails, it is killed
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
	}
}

// sshConfig writes the ssh_config (-F) naming both hosts, with their host
// keys in a known_hosts file and nothing asked of anyone; cipher, unless
// empty, is the only one either host may be reached with.
func (e *env) sshConfig(cipher string) (string, error) {
	known := filepath.Join(e.dir, "known_hosts")
	var k strings.Builder
	for _, s := range []struct {
		port int
		key  ssh.PublicKey
	}{{e.source.Port, e.source.HostKey}, {e.endpoint.Port, e.endpoint.HostKey}} {
		fmt.Fprintf(&k, "[127.0.0.1]:%d %s", s.port, ssh.MarshalAuthorizedKey(s.key))
	}
	if err := os.WriteFile(known, []byte(k.String()), 0o644); err != nil {
		return "", err
	}
	name, ciphers := "ssh_config", ""
	if cipher != "" {
		name, ciphers = name+"-"+cipher, "  Ciphers "+cipher+"\n"
	}
	host := func(name string, port int) string {
		return fmt.Sprintf(`Host %s
  HostName 127.0.0.1
  Port %d
  User root
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ExitOnForwardFailure yes
%s`, name, port, e.keyFile, known, ciphers)
	}
	path := filepath.Join(e.dir, name)
	text := "# Written by bench/tunnelbench.\n" + host("source", e.source.Port) + host("endpoint", e.endpoint.Port)
	return path, os.WriteFile(path, []byte(text), 0o644)
}

// startOpenSSH starts the ssh -J -R tunnel (ssh -R with how.oneHop, ssh -L
// with how.local) and returns once port (the endpoint's, or ssh's own for
// -L) accepts connections, with how long that took from the start of ssh.
func (e *env) startOpenSSH(ctx context.Context, port int, how sshRun) (*openSSH, time.Duration, error) {
	config, err := e.sshConfig(how.cipher)
	if err != nil {
		return nil, 0, err
	}
	o := &openSSH{config: config, log: filepath.Join(e.dir, fmt.Sprintf("ssh-%d.log", port))}
	logFile, err := os.Create(o.log)
	if err != nil {
		return nil, 0, err
	}
	defer logFile.Close()
	args := []string{"-F", config}
	forward := fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", port, e.echo.Port)
	switch {
	case how.local:
		args = append(args, "-L", forward, "-N", "source")
	case how.oneHop:
		args = append(args, "-R", forward, "-N", "endpoint")
	default:
		args = append(args, "-J", "source", "-R", forward, "-N", "endpoint")
	}
	cmd := exec.Command("ssh", args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	began := time.Now()
	if o.child, err = startChild(cmd); err != nil {
		return nil, 0, err
	}
	ready := make(chan error, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// No deadline: starting ssh, and the sshd processes it logs in to, takes
	// what the machine gives it; ssh exits if it cannot log in or forward
	// (BatchMode, ExitOnForwardFailure), which ends the wait below.
	go func() { ready <- waitListening(rctx, port, 0) }()
	select {
	case err = <-ready:
	case <-o.exited:
		err = fmt.Errorf("ssh exited: %v", o.cmd.ProcessState)
	}
	took := time.Since(began)
	if err != nil {
		o.stop()
		out, _ := os.ReadFile(o.log)
		return nil, 0, fmt.Errorf("ssh %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return o, took, nil
}

var kexCipher = regexp.MustCompile(`kex: client->server cipher: (\S+) MAC: (\S+)`)
var remoteSoftware = regexp.MustCompile(`remote software version (\S+)`)

// negotiated lists the client software and cipher (with its MAC) of the
// connections an sshd log shows after off, e.g. "Go: aes128-gcm@openssh.com".
func negotiated(log string, off int) []string {
	if off > len(log) {
		off = 0
	}
	var out []string
	var software string
	for line := range strings.Lines(log[off:]) {
		if m := remoteSoftware.FindStringSubmatch(line); m != nil {
			software = strings.TrimSuffix(m[1], ",")
		}
		if m := kexCipher.FindStringSubmatch(line); m != nil {
			c := m[1]
			if m[2] != "<implicit>" {
				c += " + " + m[2]
			}
			if software != "" {
				c = software + ": " + c
			}
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}
