package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
)

// The kinds of TunnelEvent: the events of the status stream.
const (
	// EventStatus: a tunnel's status changed (or is the stream's first
	// view of it).
	EventStatus = "status"
	// EventDeleted: a tunnel the stream showed is gone.
	EventDeleted = "deleted"
)

// TunnelEvent is one event of GET /ssh/tunnel/status/stream.
type TunnelEvent struct {
	// Kind is EventStatus or EventDeleted.
	Kind string
	// Name is the tunnel's, for both kinds.
	Name string
	// Status is the new status of an EventStatus.
	Status *TunnelStatus
}

// maxEventSize bounds one event's data: a status is a few hundred bytes.
const maxEventSize = 1 << 20

// WatchTunnels follows GET /ssh/tunnel/status/stream (Server-Sent Events):
// a status event for each of the caller's tunnels first, then one per
// change, and a deleted event for a tunnel that is gone. The sequence ends
// when the server ends the stream (after an hour, or when the token no
// longer authenticates), with no error: the caller reconnects, as SSE
// clients do, and the new stream starts with every tunnel's status again.
// It ends with an error when the call fails (the open streams per user are
// spent: 429), and when ctx ends. Events of a kind it does not know are
// skipped, so that the service may add some.
func (c *Client) WatchTunnels(ctx context.Context) iter.Seq2[TunnelEvent, error] {
	return func(yield func(TunnelEvent, error) bool) {
		if c.TunnelURL == "" {
			yield(TunnelEvent{}, ErrNoTunnelURL)
			return
		}
		resp, err := c.send(ctx, call{base: c.TunnelURL, method: "GET", path: "/ssh/tunnel/status/stream"})
		if err != nil {
			yield(TunnelEvent{}, err)
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 4096), maxEventSize)
		var kind string
		var data strings.Builder
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if data.Len() > 0 || kind != "" {
					ev, known, err := parseEvent(kind, data.String())
					if err != nil {
						yield(TunnelEvent{}, err)
						return
					}
					if known && !yield(ev, nil) {
						return
					}
				}
				kind = ""
				data.Reset()
			case strings.HasPrefix(line, ":"):
				// A comment: the service's keep-alive ping.
			default:
				field, value, _ := strings.Cut(line, ":")
				value = strings.TrimPrefix(value, " ")
				switch field {
				case "event":
					kind = value
				case "data":
					if data.Len() > 0 {
						data.WriteByte('\n')
					}
					data.WriteString(value)
				}
			}
		}
		if err := sc.Err(); err != nil && ctx.Err() == nil {
			yield(TunnelEvent{}, fmt.Errorf("the tunnel status stream broke: %w", err))
			return
		}
		if ctx.Err() != nil {
			yield(TunnelEvent{}, ctx.Err())
		}
	}
}

// parseEvent decodes one event; known is false for a kind this client
// does not know.
func parseEvent(kind, data string) (ev TunnelEvent, known bool, err error) {
	switch kind {
	case EventStatus:
		var st TunnelStatus
		if err := json.Unmarshal([]byte(data), &st); err != nil {
			return ev, false, fmt.Errorf("a status event of the stream does not decode: %w", err)
		}
		return TunnelEvent{Kind: kind, Name: st.Name, Status: &st}, true, nil
	case EventDeleted:
		var d struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			return ev, false, fmt.Errorf("a deleted event of the stream does not decode: %w", err)
		}
		return TunnelEvent{Kind: kind, Name: d.Name}, true, nil
	}
	return ev, false, nil
}
