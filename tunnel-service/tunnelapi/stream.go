package tunnelapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/sshdeck/sshdeck/shared/web"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// streamPing is how often an idle stream sends a comment, so that proxies
// keep it open and a gone client is noticed.
const streamPing = 15 * time.Second

// stream serves GET /ssh/tunnel/status/stream: Server-Sent Events, one
// `status` event (data: a Status) per change of one of the caller's
// tunnels, starting with the current status of each. Changes made on this
// replica are sent at once; those of other replicas within the Manager's
// StreamPoll.
func (s *server) stream(w http.ResponseWriter, r *http.Request, owner string) error {
	m := s.Manager
	watch := m.Watch(owner)
	defer watch.Stop()
	current, err := m.Statuses(r.Context(), owner)
	if err != nil {
		return err // nothing sent yet: an error body is still possible
	}
	rc := http.NewResponseController(w)
	// The server's write timeout would end the stream.
	rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx would buffer the stream
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		// GET routes take HEAD too: its answer is the headers alone,
		// not a stream that no one reads until the connection closes.
		return nil
	}

	sent := map[string]tunnel.Status{}
	send := func(all map[string]tunnel.Status) error {
		names := make([]string, 0, len(all))
		for name := range all {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			st := all[name]
			if prev, ok := sent[name]; ok && sameState(prev, st) {
				continue
			}
			data, err := json.Marshal(st)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "event: status\ndata: %s\n\n", data); err != nil {
				return err
			}
			sent[name] = st
		}
		return rc.Flush()
	}
	if err := send(current); err != nil {
		return nil // the client left
	}
	poll := time.NewTicker(watch.Poll)
	defer poll.Stop()
	ping := time.NewTicker(streamPing)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
			continue
		case <-watch.Changed:
		case <-poll.C:
		}
		all, err := m.Statuses(r.Context(), owner)
		if err != nil {
			if r.Context().Err() == nil {
				s.log.Warn("status stream cannot read the store", "request_id", web.RequestID(r.Context()), "error", err.Error())
			}
			continue
		}
		if err := send(all); err != nil {
			return nil
		}
	}
}

// sameState reports whether two statuses of a tunnel say the same, the
// countdown to the next retry aside: it is not a change.
func sameState(a, b tunnel.Status) bool {
	if (a.ErrorType == nil) != (b.ErrorType == nil) || a.ErrorType != nil && *a.ErrorType != *b.ErrorType ||
		!a.UpdatedAt.Equal(b.UpdatedAt) {
		return false
	}
	a.NextRetryIn, a.ErrorType, a.UpdatedAt = 0, nil, time.Time{}
	b.NextRetryIn, b.ErrorType, b.UpdatedAt = 0, nil, time.Time{}
	return a == b
}
