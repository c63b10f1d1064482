package tunnelapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// streamPing is how often an idle stream sends a comment, so that proxies
// keep it open and a gone client is noticed.
const streamPing = 15 * time.Second

// DefaultStreamRecheck is how often a status stream checks its token
// again, against the store (API.md: at least every 30 s), and
// DefaultStreamMaxAge how long a stream lives at most (1 h): clients
// reconnect, as SSE clients do.
const (
	DefaultStreamRecheck = 30 * time.Second
	DefaultStreamMaxAge  = time.Hour
)

// Verifier checks a token against the store itself, past any cache: a
// stream's Authenticator that has it (auth.Authenticator does) is rechecked
// with it, so that a revocation made through another process ends the
// stream within StreamRecheck rather than that plus the cache's life.
type Verifier interface {
	Verify(ctx context.Context, header string) (sshdeck.Principal, error)
}

// Deleted is the data of a `deleted` event: a tunnel the stream showed is
// gone (deleted, or forgotten 24 h after it stopped).
type Deleted struct {
	Name string `json:"name"`
}

// stream serves GET /ssh/tunnel/status/stream: Server-Sent Events, one
// `status` event (data: a Status) per change of one of the caller's
// tunnels, starting with the current status of each, and a `deleted` event
// when one the stream showed is gone. The statuses come from the owner's
// feed on this replica (Manager.Subscribe), which every stream of the owner
// shares: changes made on this replica come at once, those of other
// replicas within the Manager's StreamPoll. The stream checks its token
// again every StreamRecheck and ends when it no longer authenticates
// (revoked, expired, its user gone), and ends after StreamMaxAge.
func (s *server) stream(w http.ResponseWriter, r *http.Request, owner string) error {
	sub, err := s.Manager.Subscribe(owner)
	if err != nil {
		return err // RateLimited: the owner's streams are all open
	}
	defer sub.Close()
	var first *tunnel.Reading
	select {
	case first = <-sub.Readings:
	case <-r.Context().Done():
		return nil
	}
	if first.Err != nil {
		return first.Err // nothing sent yet: an error body is still possible
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
		for _, name := range slices.Sorted(maps.Keys(sent)) {
			if _, ok := all[name]; ok {
				continue
			}
			data, err := json.Marshal(Deleted{Name: name})
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "event: deleted\ndata: %s\n\n", data); err != nil {
				return err
			}
			delete(sent, name)
		}
		return rc.Flush()
	}
	if err := send(first.Statuses); err != nil {
		return nil // the client left
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go s.recheck(ctx, cancel, r.Header.Get("Authorization"), owner, "status stream")
	maxAge := time.NewTimer(s.streamMaxAge)
	defer maxAge.Stop()
	ping := time.NewTicker(streamPing)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-maxAge.C:
			s.log.Info("status stream ends: its hour is up; the client reconnects", "request_id", web.RequestID(r.Context()))
			return nil
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		case reading := <-sub.Readings:
			if reading.Err != nil {
				continue // the feed logged it, once for all streams
			}
			if err := send(reading.Statuses); err != nil {
				return nil
			}
		}
	}
}

// recheck checks a long-lived request's token every StreamRecheck and
// cancels it once the token no longer authenticates (revoked, expired, its
// user disabled or gone). A store that does not answer is logged, and the
// request goes on until the next check.
func (s *server) recheck(ctx context.Context, cancel context.CancelFunc, header, owner, what string) {
	t := time.NewTicker(s.streamRecheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		caller, err := s.verify(ctx, header)
		if sshdeck.ErrorCode(err) == sshdeck.Unauthorized || err == nil && caller.UserID != owner {
			s.log.Info(what+" ends: its token no longer authenticates", "request_id", web.RequestID(ctx))
			cancel()
			return
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn(what+" cannot check its token; it goes on until the next check", "request_id", web.RequestID(ctx), "error", err.Error())
		}
	}
}

// verify checks a stream's token again, past the authenticator's cache
// when it can.
func (s *server) verify(ctx context.Context, header string) (sshdeck.Principal, error) {
	if v, ok := s.Authenticator.(Verifier); ok {
		return v.Verify(ctx, header)
	}
	return s.Authenticator.Authenticate(ctx, header)
}

// sameState reports whether two statuses of a tunnel say the same, the
// countdown to the next retry aside: it is not a change. A change of the
// counts is one (its replica writes them at most once a heartbeat).
func sameState(a, b tunnel.Status) bool {
	if !samePointee(a.ErrorType, b.ErrorType) || !a.UpdatedAt.Equal(b.UpdatedAt) ||
		!samePointee(a.BytesIn, b.BytesIn) || !samePointee(a.BytesOut, b.BytesOut) ||
		!samePointee(a.ActiveConnections, b.ActiveConnections) || !samePointee(a.LastError, b.LastError) ||
		(a.ConnectedSince == nil) != (b.ConnectedSince == nil) ||
		a.ConnectedSince != nil && !a.ConnectedSince.Equal(*b.ConnectedSince) {
		return false
	}
	for _, s := range []*tunnel.Status{&a, &b} {
		s.NextRetryIn, s.ErrorType, s.UpdatedAt = 0, nil, time.Time{}
		s.BytesIn, s.BytesOut, s.ActiveConnections, s.LastError, s.ConnectedSince = nil, nil, nil, nil, nil
	}
	return a == b
}

// samePointee reports whether a and b are both nil or point to equal
// values.
func samePointee[T comparable](a, b *T) bool {
	return a == b || a != nil && b != nil && *a == *b
}
