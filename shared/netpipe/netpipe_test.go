package netpipe

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
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

// TestPipeCounted carries a different number of bytes each way between
// two real TCP connections, half-closing as a client does, and checks
// that each counter holds exactly the bytes carried its way.
func TestPipeCounted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// pair returns both ends of a loopback TCP connection.
	pair := func() (client, server net.Conn) {
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err = ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return client, server
	}
	aClient, a := pair()
	bClient, b := pair()
	defer aClient.Close()
	defer bClient.Close()

	var aToB, bToA atomic.Int64
	piped := make(chan struct{})
	go func() {
		PipeCounted(a, b, &aToB, &bToA)
		close(piped)
	}()
	// More than one buffer each way, and not a multiple of one.
	forth := bytes.Repeat([]byte("forth"), 3*BufferSize/5+11)
	back := bytes.Repeat([]byte("b"), BufferSize+3)
	send := func(c net.Conn, data []byte) {
		if _, err := c.Write(data); err != nil {
			t.Error(err)
		}
		c.(*net.TCPConn).CloseWrite()
	}
	go send(aClient, forth)
	if got, err := io.ReadAll(bClient); err != nil || !bytes.Equal(got, forth) {
		t.Fatalf("b received %d bytes (%v), want the %d sent", len(got), err, len(forth))
	}
	// a's direction is done and counted before b answers: half-close.
	if n := aToB.Load(); n != int64(len(forth)) {
		t.Errorf("a to b counted %d bytes, want %d", n, len(forth))
	}
	go send(bClient, back)
	if got, err := io.ReadAll(aClient); err != nil || !bytes.Equal(got, back) {
		t.Fatalf("a received %d bytes (%v), want the %d sent", len(got), err, len(back))
	}
	<-piped
	if n, m := aToB.Load(), bToA.Load(); n != int64(len(forth)) || m != int64(len(back)) {
		t.Errorf("counted %d bytes a to b and %d b to a, want %d and %d", n, m, len(forth), len(back))
	}
}
