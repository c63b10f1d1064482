package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// healthTimeout bounds the store check so a hung store still gets an answer.
const healthTimeout = 2 * time.Second

// Health is the body of /healthz.
type Health struct {
	Status string `json:"status"` // "ok" or "unavailable"
	Store  string `json:"store"`  // "ok" or why not
}

// ServeHealth answers /healthz: 200 when ping says the store answers, 503
// when it does not (within healthTimeout).
func ServeHealth(w http.ResponseWriter, r *http.Request, log *slog.Logger, ping func(context.Context) error) {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	if err := ping(ctx); err != nil {
		log.LogAttrs(r.Context(), slog.LevelWarn, "store does not answer",
			slog.String("request_id", RequestID(r.Context())), slog.String("error", err.Error()))
		WriteJSON(w, http.StatusServiceUnavailable, Health{Status: "unavailable", Store: "store does not answer"})
		return
	}
	WriteJSON(w, http.StatusOK, Health{Status: "ok", Store: "ok"})
}
