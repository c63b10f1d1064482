package client

// The SOCKS5 server of `sshdeck forward -D` (RFC 1928): no authentication
// (it listens on the user's loopback, like ssh -D), CONNECT only, and
// names passed to the service unresolved, so that a name resolves where
// the connection is opened (curl --socks5-hostname, browsers' "proxy DNS").

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/sshdeck/sshdeck/shared/forwarding"
)

const socksVersion = 5

// Methods (§3), commands and address types (§4).
const (
	socksNoAuth         = 0x00
	socksNoAcceptable   = 0xFF
	socksConnect        = 0x01
	socksAddrIPv4       = 0x01
	socksAddrDomainName = 0x03
	socksAddrIPv6       = 0x04
)

// Replies (§6).
const (
	socksSucceeded           = 0x00
	socksGeneralFailure      = 0x01
	socksNotAllowed          = 0x02
	socksNetworkUnreachable  = 0x03
	socksHostUnreachable     = 0x04
	socksConnectionRefused   = 0x05
	socksCommandNotSupported = 0x07
	socksAddrNotSupported    = 0x08
)

// socksHandshakeTimeout bounds the greeting and the request: a client
// that connects and says nothing holds its socket this long at most.
const socksHandshakeTimeout = 10 * time.Second

// socksHandshake reads a client's greeting and CONNECT request and
// returns the target as host:port. On a request it will not serve it has
// answered the client already (no acceptable method, command or address
// type not supported) and returns why; the caller closes the connection.
func socksHandshake(conn net.Conn) (target string, err error) {
	conn.SetDeadline(time.Now().Add(socksHandshakeTimeout))
	defer conn.SetDeadline(time.Time{})

	// Greeting: VER NMETHODS METHODS...
	var head [2]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		return "", err
	}
	if head[0] != socksVersion {
		return "", fmt.Errorf("not a SOCKS5 client (version %d)", head[0])
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(conn, methods); err != nil {
		return "", err
	}
	method := byte(socksNoAcceptable)
	for _, m := range methods {
		if m == socksNoAuth {
			method = socksNoAuth
		}
	}
	if _, err := conn.Write([]byte{socksVersion, method}); err != nil {
		return "", err
	}
	if method == socksNoAcceptable {
		return "", errors.New("the SOCKS client does not offer \"no authentication\", the only method served")
	}

	// Request: VER CMD RSV ATYP DST.ADDR DST.PORT, read whole before any
	// answer, so that closing after a refusal leaves nothing unread (which
	// would reset the connection and lose the answer).
	var req [4]byte
	if _, err := io.ReadFull(conn, req[:]); err != nil {
		return "", err
	}
	if req[0] != socksVersion {
		return "", fmt.Errorf("a SOCKS request of version %d", req[0])
	}
	var host string
	switch req[3] {
	case socksAddrIPv4, socksAddrIPv6:
		ip := make(net.IP, net.IPv4len)
		if req[3] == socksAddrIPv6 {
			ip = make(net.IP, net.IPv6len)
		}
		if _, err := io.ReadFull(conn, ip); err != nil {
			return "", err
		}
		host = ip.String()
	case socksAddrDomainName:
		var n [1]byte
		if _, err := io.ReadFull(conn, n[:]); err != nil {
			return "", err
		}
		name := make([]byte, n[0])
		if _, err := io.ReadFull(conn, name); err != nil {
			return "", err
		}
		host = string(name)
	default:
		socksReply(conn, socksAddrNotSupported)
		return "", fmt.Errorf("SOCKS address type %#x is not supported", req[3])
	}
	var port [2]byte
	if _, err := io.ReadFull(conn, port[:]); err != nil {
		return "", err
	}
	target = net.JoinHostPort(host, strconv.Itoa(int(port[0])<<8|int(port[1])))
	if req[1] != socksConnect {
		socksReply(conn, socksCommandNotSupported)
		return "", fmt.Errorf("%s: SOCKS command %#x is not supported, only CONNECT", target, req[1])
	}
	return target, nil
}

// socksReply answers the request. The bound address is 0.0.0.0:0: the
// connection's far end is on the via host, and clients do not use it for
// CONNECT.
func socksReply(w io.Writer, rep byte) error {
	_, err := w.Write([]byte{socksVersion, rep, 0, socksAddrIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

// socksReplyFor is the reply to a connection that did not open.
func socksReplyFor(err error) byte {
	var refused *forwarding.RefusedError
	if !errors.As(err, &refused) {
		return socksGeneralFailure // no session, or it ended
	}
	switch refused.Code {
	case forwarding.CodeDenied:
		return socksNotAllowed
	case forwarding.CodeUnresolvable, forwarding.CodeTimeout:
		return socksHostUnreachable
	case forwarding.CodeUnreachable:
		return socksNetworkUnreachable
	case forwarding.CodeRefused:
		return socksConnectionRefused
	}
	return socksGeneralFailure // limit_exceeded, invalid, internal
}
