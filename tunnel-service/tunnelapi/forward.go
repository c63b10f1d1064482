package tunnelapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/forwarding"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// maxViaRef bounds the via query parameter: a host's id, or its name.
const maxViaRef = sshdeck.MaxHostName

// forward serves GET /ssh/forward?via=HOST[&target=HOST:PORT]: the
// WebSocket of one forward to the caller's machine (`sshdeck forward`),
// over which the client opens a stream per connection that the via host
// connects to its target (shared/forwarding, Manager.Via). Before the
// upgrade, while an error body can still be written: the via host must be
// the caller's (404), a forward to one target (-L) has its target checked
// (400, 400 forbidden), the request must be a WebSocket's (400), and the
// caller's forwards must be under the limit (409).
//
// The session lasts until the client leaves, the service shuts down, or
// the token no longer authenticates (checked every StreamRecheck, as a
// status stream's is); its connections end with it.
func (s *server) forward(w http.ResponseWriter, r *http.Request, owner string) error {
	q := r.URL.Query()
	ref := q.Get("via")
	if err := check.Text("via", ref, 1, maxViaRef, false); err != nil {
		return err
	}
	target := q.Get("target")
	sshdeck.SetAuditTarget(r.Context(), forwardTarget(ref, target))
	if target != "" {
		if err := s.Manager.CheckTarget(r.Context(), target); err != nil {
			return err
		}
	}
	via, err := s.Manager.Via(r.Context(), owner, ref)
	if err != nil {
		return err
	}
	defer via.Close()
	if !isWebSocket(r) {
		return check.Invalid("%s takes a WebSocket (Upgrade: websocket, subprotocol %s), as sshdeck forward opens it", forwarding.Path, forwarding.Subprotocol)
	}

	// The server's timeouts would end the session: after the upgrade the
	// connection is the session's.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.Manager.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := forwarding.Accept(ctx, w, r)
	// The forward's record now, not when it ends, hours later; a failed
	// upgrade, which Accept answered itself, as the failure it is.
	if note := sshdeck.AuditOf(r.Context()); note != nil {
		var failed error
		if err != nil {
			failed = sshdeck.Errorf(sshdeck.Invalid, "the WebSocket upgrade failed")
		}
		s.Audit.Finish(r.Context(), note, failed)
	}
	if err != nil {
		s.log.Info("forward: the WebSocket upgrade failed", "request_id", web.RequestID(r.Context()), "error", err.Error())
		return nil // Accept answered
	}
	go s.recheck(ctx, cancel, r.Header.Get("Authorization"), owner, "forward")
	if err := forwarding.Serve(ctx, conn, via.Dial, s.log); err != nil {
		s.log.Info("forward session ended", "request_id", web.RequestID(r.Context()), "error", err.Error())
	}
	return nil
}

// isWebSocket reports whether r asks to be upgraded to a WebSocket (RFC
// 6455 4.2.1): checked here so that a request that is none gets the
// contract's error body, not the plain text of a failed Accept.
func isWebSocket(r *http.Request) bool {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || r.Header.Get("Sec-WebSocket-Key") == "" ||
		r.Header.Get("Sec-WebSocket-Version") != "13" {
		return false
	}
	for _, v := range r.Header.Values("Connection") {
		for _, token := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(token), "upgrade") {
				return true
			}
		}
	}
	return false
}

// forwardTarget names a forward in audit records: its via host, and its
// one target for -L.
func forwardTarget(via, target string) string {
	if target == "" {
		return fmt.Sprintf("forward via %q", via)
	}
	return fmt.Sprintf("forward via %q to %q", via, target)
}
