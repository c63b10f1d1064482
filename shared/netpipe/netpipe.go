// Package netpipe carries bytes between two connections: the relay's
// forwarded connections, and the forwards of sshdeck's client and the
// tunnel service's end of them. One pooled buffer per direction, held
// only while bytes move.
package netpipe

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// halfCloser is a connection whose sending side closes on its own: SSH
// channels (EOF) and TCP connections (FIN).
type halfCloser interface {
	CloseWrite() error
}

// Pipe copies a to b and b to a. When one side finishes sending, the other
// is told so (half-close) and may still answer; both close once both
// directions are done.
func Pipe(a, b net.Conn) { PipeCounted(a, b, nil, nil) }

// PipeCounted is Pipe that adds the bytes it carries from a to b to aToB,
// and those from b to a to bToA (either may be nil), as each write of
// them succeeds: one atomic add per read, so that whoever reads the
// counters (a tunnel's status, /metrics) sees a long connection's bytes
// while it is open, and the copy takes no lock.
func PipeCounted(a, b net.Conn, aToB, bToA *atomic.Int64) {
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn, counter *atomic.Int64) {
		defer wg.Done()
		err := copyCounted(dst, src, counter)
		if hc, ok := dst.(halfCloser); ok && err == nil {
			hc.CloseWrite()
			return
		}
		// A broken side, or one that cannot half-close: end both.
		a.Close()
		b.Close()
	}
	go half(a, b, bToA)
	go half(b, a, aToB)
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
func CopyPooled(dst io.Writer, src io.Reader) error { return copyCounted(dst, src, nil) }

// copyCounted is CopyPooled adding each write's bytes to counter, unless
// it is nil.
func copyCounted(dst io.Writer, src io.Reader, counter *atomic.Int64) error {
	buf := buffers.Get().(*[BufferSize]byte)
	defer buffers.Put(buf)
	for {
		n, err := src.Read(buf[:])
		if n > 0 {
			w, werr := dst.Write(buf[:n])
			if counter != nil && w > 0 {
				counter.Add(int64(w))
			}
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
