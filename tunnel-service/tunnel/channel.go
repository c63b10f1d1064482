package tunnel

import (
	"errors"
	"net"
	"time"

	"golang.org/x/crypto/ssh"
)

// sshConn is an SSH connection as ssh.NewClientConn returns it, without
// an ssh.Client on top. A Client runs three goroutines per connection
// (global requests, channel opens, and the wait that closes its forward
// list), two more for its first remote forward, and two per channel it
// opens (DiscardRequests, and a drain of stderr holding an 8 KiB buffer);
// for an idle tunnel that was most of its memory. Instead the tunnel's
// loop serves chans and reqs itself (runner.attempt), and the few things
// of a Client the tunnel needs are here and in forward.go.
type sshConn struct {
	ssh.Conn
	chans <-chan ssh.NewChannel
	reqs  <-chan *ssh.Request
	what  string // "source host:port", for messages
}

// ended is why the connection is gone, once its chans or reqs closed.
func (c *sshConn) ended() *failure {
	return asFailure(c.Wait(), c.what)
}

// refuseRequest answers a global request the way ssh.Client does, and
// OpenSSH's client: no (keepalives from the server are answered so).
func refuseRequest(r *ssh.Request) {
	r.Reply(false, nil)
}

// refuseChannel rejects a channel the peer opened that the tunnel did not
// ask for, as ssh.Client does.
func refuseChannel(nc ssh.NewChannel) {
	nc.Reject(ssh.UnknownChannelType, "unknown channel type: "+nc.ChannelType())
}

// directTCPIP is the payload of a direct-tcpip channel open (RFC 4254
// 7.2): connect to host:port. The originator is left zero, as ssh.Client
// does.
type directTCPIP struct {
	Host       string
	Port       uint32
	OriginAddr string
	OriginPort uint32
}

// openDirect asks c's host to connect to host:port, like ssh.Client.Dial
// without the two goroutines it starts per channel. The channel's requests
// are the caller's to serve: peers send none on these channels, but
// unserved ones would stall c's connection once 16 queue up.
func openDirect(c ssh.Conn, host string, port int) (*chanConn, <-chan *ssh.Request, error) {
	ch, reqs, err := c.OpenChannel("direct-tcpip", ssh.Marshal(&directTCPIP{Host: host, Port: uint32(port), OriginAddr: "0.0.0.0"}))
	if err != nil {
		return nil, nil, err
	}
	return &chanConn{ch}, reqs, nil
}

// chanConn is an SSH channel as a net.Conn, for ssh.NewClientConn (the
// endpoint's connection rides in a channel of the source's) and for pipe.
// Its stderr (extended data) is never read: no peer sends any on a TCP
// channel.
type chanConn struct {
	ssh.Channel
}

var zeroAddr = &net.TCPAddr{IP: net.IPv4zero}

var errNoDeadline = errors.New("an SSH channel has no deadlines")

func (c *chanConn) LocalAddr() net.Addr                { return zeroAddr }
func (c *chanConn) RemoteAddr() net.Addr               { return zeroAddr }
func (c *chanConn) SetDeadline(t time.Time) error      { return errNoDeadline }
func (c *chanConn) SetReadDeadline(t time.Time) error  { return errNoDeadline }
func (c *chanConn) SetWriteDeadline(t time.Time) error { return errNoDeadline }
