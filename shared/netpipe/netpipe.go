// Package netpipe carries bytes between two connections: the relay's
// forwarded connections, and the forwards of sshdeck's client and the
// tunnel service's end of them. One pooled buffer per direction, held
// only while bytes move.
package netpipe

import (
	"io"
	"net"
	"sync"
)

// halfCloser is a connection whose sending side closes on its own: SSH
// channels (EOF) and TCP connections (FIN).
type halfCloser interface {
	CloseWrite() error
}

// Pipe copies a to b and b to a. When one side finishes sending, the other
// is told so (half-close) and may still answer; both close once both
// directions are done.
func Pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		err := CopyPooled(dst, src)
		if hc, ok := dst.(halfCloser); ok && err == nil {
			hc.CloseWrite()
			return
		}
		// A broken side, or one that cannot half-close: end both.
		a.Close()
		b.Close()
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// BufferSize is an SSH channel's largest packet (x/crypto's and
// OpenSSH's 32 KiB): a read from a channel returns what its packets
// brought, and a write of that much goes out as one packet.
const BufferSize = 32 << 10

// buffers are the buffers of the directions being copied. A
// connection takes one per direction for as long as it carries bytes, so
// an idle tunnel holds none, and a busy service reuses them rather than
// allocating 64 KiB per connection (io.Copy's two buffers) for the GC to
// reclaim.
var buffers = sync.Pool{New: func() any { return new([BufferSize]byte) }}

// CopyPooled is io.Copy through a pooled buffer, with the loop written out
// rather than io.CopyBuffer's: that one hands the copy to src.WriteTo or
// dst.ReadFrom when either has one (a *net.TCPConn's allocate, or go
// through splice where the other side is no socket), and the relay's
// sides may be any net.Conn. Its error is nil when src ended (io.EOF).
func CopyPooled(dst io.Writer, src io.Reader) error {
	buf := buffers.Get().(*[BufferSize]byte)
	defer buffers.Put(buf)
	for {
		n, err := src.Read(buf[:])
		if n > 0 {
			w, werr := dst.Write(buf[:n])
			if werr != nil {
				return werr
			}
			if w != n {
				return io.ErrShortWrite
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
