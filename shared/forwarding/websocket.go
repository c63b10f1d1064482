package forwarding

import (
	"context"
	"net"
	"net/http"

	"github.com/coder/websocket"
)

// maxMessage bounds a WebSocket message: a multiplexer frame is at most
// its stream window (256 KiB) of body, and the header goes as a message of
// its own. coder/websocket's default (32 KiB) would end the session on the
// first full window.
const maxMessage = 1 << 20

// Accept upgrades the service's request to the forward's WebSocket and
// returns it as a net.Conn for Serve. ctx bounds the connection's life.
// Before Accept, the handler may still answer an error body.
func Accept(ctx context.Context, w http.ResponseWriter, r *http.Request) (net.Conn, error) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}})
	if err != nil {
		return nil, err // Accept answered the request itself
	}
	c.SetReadLimit(maxMessage)
	return websocket.NetConn(ctx, c, websocket.MessageBinary), nil
}

// Dial opens the client's end of a forward: the WebSocket to url (the
// tunnel service's Path, with its query) with header (the bearer token)
// through hc (nil: http.DefaultClient; its Timeout bounds the handshake
// alone), and the session over it. A refused upgrade returns the service's
// answer, whose body (the contract's error body) says why.
func Dial(ctx context.Context, hc *http.Client, url string, header http.Header) (*Session, *http.Response, error) {
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: header, Subprotocols: []string{Subprotocol}})
	if err != nil {
		return nil, resp, err
	}
	c.SetReadLimit(maxMessage)
	// The connection outlives ctx, which bounds the dial alone.
	s, err := NewSession(websocket.NetConn(context.Background(), c, websocket.MessageBinary))
	return s, resp, err
}
