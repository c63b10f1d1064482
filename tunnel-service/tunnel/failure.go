package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/crypto/ssh"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// failure is why an attempt to run a tunnel ended: its class, whether a
// retry may help, and a sentence for the status that never holds a
// credential.
type failure struct {
	kind  sshdeck.TunnelError
	retry bool
	msg   string
	err   error // the cause, for the log
	// forget is set for a host tunnel whose host or item is gone: the run
	// ends and the tunnel is deleted (refs.go).
	forget bool
}

func (f *failure) Error() string { return f.msg }
func (f *failure) Unwrap() error { return f.err }

func fail(kind sshdeck.TunnelError, retry bool, err error, format string, args ...any) *failure {
	return &failure{kind: kind, retry: retry, msg: fmt.Sprintf(format, args...), err: err}
}

// asFailure classifies err: a *failure stays as it is; network errors and
// timeouts are retried; anything else is unknown and retried too, since a
// tunnel that may come back should not stay down for an error we did not
// foresee.
func asFailure(err error, what string) *failure {
	var f *failure
	if errors.As(err, &f) {
		return f
	}
	if isTimeout(err) {
		return fail(sshdeck.TunnelErrTimeout, true, err, "%s: timed out", what)
	}
	if isNetwork(err) {
		return fail(sshdeck.TunnelErrNetwork, true, err, "%s: %s", what, networkCause(err))
	}
	return fail(sshdeck.TunnelErrUnknown, true, err, "%s failed", what)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// isNetwork reports whether err is a connection that could not be made or
// that broke: what a retry may mend.
func isNetwork(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var open *ssh.OpenChannelError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.As(err, &op) || errors.As(err, &dns) || errors.As(err, &open)
}

// networkCause says what went wrong with a connection in a few words, from
// the error's type, never its text (which could echo an address or banner).
func networkCause(err error) string {
	var dns *net.DNSError
	var open *ssh.OpenChannelError
	switch {
	case errors.As(err, &dns):
		return "the name does not resolve"
	case errors.As(err, &open):
		return "the source host could not connect to it (" + open.Reason.String() + ")"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return "the connection closed"
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return "connection refused or unreachable"
	}
	return "the connection broke"
}
