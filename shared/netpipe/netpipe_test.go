package netpipe

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// readFromTrap is a writer whose ReadFrom fails the test: the relay's copy
// must go through its pooled buffer, never a side's own ReadFrom/WriteTo.
type readFromTrap struct {
	t *testing.T
	bytes.Buffer
}

func (w *readFromTrap) ReadFrom(io.Reader) (int64, error) {
	w.t.Error("CopyPooled called ReadFrom")
	return 0, errors.New("trap")
}

type writeToTrap struct {
	t *testing.T
	io.Reader
}

func (r writeToTrap) WriteTo(io.Writer) (int64, error) {
	r.t.Error("CopyPooled called WriteTo")
	return 0, errors.New("trap")
}

func TestCopyPooled(t *testing.T) {
	// More than one buffer, not a multiple of it.
	data := strings.Repeat("relay", 3*BufferSize/5+7)
	dst := &readFromTrap{t: t}
	if err := CopyPooled(dst, writeToTrap{t, strings.NewReader(data)}); err != nil {
		t.Fatalf("copy to EOF: %v, want nil", err)
	}
	if dst.String() != data {
		t.Errorf("copied %d bytes, want the %d sent", dst.Len(), len(data))
	}

	broken := errors.New("broken")
	if err := CopyPooled(failingWriter{broken}, strings.NewReader("x")); err != broken {
		t.Errorf("write error: %v, want %v", err, broken)
	}
	if err := CopyPooled(io.Discard, io.MultiReader(strings.NewReader("x"), failingReader{broken})); err != broken {
		t.Errorf("read error: %v, want %v", err, broken)
	}
	if err := CopyPooled(shortWriter{}, strings.NewReader("xy")); err != io.ErrShortWrite {
		t.Errorf("short write: %v, want %v", err, io.ErrShortWrite)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) - 1, nil }
