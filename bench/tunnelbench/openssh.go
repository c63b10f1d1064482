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
// -J: this machine is the source (the echo service listens here).
type openSSH struct {
	cmd    *exec.Cmd
	config string
	log    string
	exited chan struct{}
}

// sshRun says how OpenSSH runs a tunnel.
type sshRun struct {
	// oneHop is `ssh -R … endpoint` as run on the source, without -J.
	oneHop bool
	// cipher is forced on every hop (Ciphers in the config, which the
	// ProxyJump ssh reads too: it gets -F); "" leaves OpenSSH's defaults.
	cipher string
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

// startOpenSSH starts the ssh -J -R tunnel (ssh -R with how.oneHop) and
// returns once the endpoint port accepts connections, with how long that
// took from the start of ssh.
func (e *env) startOpenSSH(ctx context.Context, endpointPort int, how sshRun) (*openSSH, time.Duration, error) {
	config, err := e.sshConfig(how.cipher)
	if err != nil {
		return nil, 0, err
	}
	o := &openSSH{config: config, log: filepath.Join(e.dir, fmt.Sprintf("ssh-%d.log", endpointPort)), exited: make(chan struct{})}
	logFile, err := os.Create(o.log)
	if err != nil {
		return nil, 0, err
	}
	defer logFile.Close()
	args := []string{"-F", config}
	if !how.oneHop {
		args = append(args, "-J", "source")
	}
	args = append(args, "-R", fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", endpointPort, e.echo.Port), "-N", "endpoint")
	o.cmd = exec.Command("ssh", args...)
	o.cmd.Stdout, o.cmd.Stderr = logFile, logFile
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	began := time.Now()
	if err := o.cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("ssh: %w", err)
	}
	go func() { o.cmd.Wait(); close(o.exited) }()
	ready := make(chan error, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// No deadline: starting ssh, and the sshd processes it logs in to, takes
	// what the machine gives it; ssh exits if it cannot log in or forward
	// (BatchMode, ExitOnForwardFailure), which ends the wait below.
	go func() { ready <- waitListening(rctx, endpointPort, 0) }()
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

// stop kills ssh and its ProxyJump ssh (its process group).
func (o *openSSH) stop() {
	syscall.Kill(-o.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-o.exited:
	case <-time.After(time.Minute): // not slow but stuck: nothing fails, it is killed
		syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
		<-o.exited
	}
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
