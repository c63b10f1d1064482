package tunnel

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
)

// clientOutput reads what a direct tunnel's client writes (its pty, where
// its log, its errors and its password prompt all go), line by line: it
// answers the password prompt, once; it tells when the forward is up; it
// keeps the last lines for the failure (directfail.go). It never keeps or
// logs what is typed: the client reads the password with echo off.
type clientOutput struct {
	w        io.Writer // the pty's input
	prompt   string    // "user@host's password: "; empty: no password login
	password string
	success  string // the line's part that says the forward is up

	up      chan struct{} // closed once the forward is up
	refused chan struct{} // closed when the password was asked again

	mu       sync.Mutex
	partial  []byte
	answered bool
	isUp     bool
	lines    []string // the last maxLines lines, debug ones left out
}

const (
	maxLines    = 16
	maxLineSize = 1 << 10
)

func newClientOutput(w io.Writer, a *directArgs, password string) *clientOutput {
	o := &clientOutput{
		w:       w,
		success: fmt.Sprintf("remote forward success for: listen %s:%d,", loopback, a.endpointPort),
		up:      make(chan struct{}),
		refused: make(chan struct{}),
	}
	if a.password {
		// OpenSSH's prompt (sshconnect2.c, userauth_passwd), with the
		// host as the client knows it (HostKeyAlias).
		o.prompt = fmt.Sprintf("%s@%s's password: ", a.user, a.knownHostsAlias())
		o.password = password
	}
	return o
}

// Write takes the client's output as it comes.
func (o *clientOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.line(strings.TrimRight(string(o.partial[:i]), "\r"))
		o.partial = o.partial[i+1:]
	}
	if len(o.partial) > maxLineSize {
		o.line(string(o.partial[:maxLineSize]))
		o.partial = o.partial[:0]
	}
	// A prompt ends without a line end: what is left is the whole of it,
	// after the carriage return readpassphrase(3) writes first.
	if o.prompt != "" && string(bytes.TrimLeft(o.partial, "\r")) == o.prompt {
		o.partial = o.partial[:0]
		o.answer()
	}
	return len(p), nil
}

// answer types the password into the prompt the first time; a second
// prompt means it was refused, and is left unanswered.
func (o *clientOutput) answer() {
	if o.answered {
		select {
		case <-o.refused:
		default:
			close(o.refused)
		}
		return
	}
	o.answered = true
	// The pty is in the client's no-echo mode for its prompt: nothing
	// typed comes back.
	io.WriteString(o.w, o.password+"\n")
}

func (o *clientOutput) line(l string) {
	if !o.isUp && strings.Contains(l, o.success) {
		o.isUp = true
		close(o.up)
	}
	if strings.HasPrefix(l, "debug") || strings.TrimSpace(l) == "" {
		return
	}
	if o.password != "" && strings.Contains(l, o.password) {
		return // never kept, whatever printed it
	}
	if len(o.lines) == maxLines {
		o.lines = append(o.lines[:0], o.lines[1:]...)
	}
	o.lines = append(o.lines, l)
}

// last returns the lines kept, the last one last, with a partial line.
func (o *clientOutput) last() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := append([]string(nil), o.lines...)
	if p := strings.TrimSpace(string(o.partial)); p != "" && (o.password == "" || !strings.Contains(p, o.password)) {
		out = append(out, p)
	}
	return out
}
