package tunnel

// link is what a tunnel's attempt holds while the tunnel is up, whichever
// its mode: a relay tunnel's remote forward on the endpoint's connection
// (forward.go), or a direct tunnel's OpenSSH client on the source
// (direct.go). The loop (loop.go) waits on down, asks cause why it ended,
// and stops it.
type link interface {
	// down closes once the link ended by itself.
	down() <-chan struct{}
	// cause is why the link ended, once down closed.
	cause() *failure
	// stop tears the link down and lets go of its connections in p.
	stop(p *pool)
}

// A relay tunnel is up while the endpoint's connection is: its goroutine
// (node.serve) serves the forwarded connections of every tunnel on it.

func (f *forward) down() <-chan struct{} { return f.node.done }

func (f *forward) cause() *failure { return f.node.cause() }

func (f *forward) stop(p *pool) {
	f.close()
	p.release(f.node)
}
