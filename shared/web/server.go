package web

import (
	"log/slog"
	"net/http"
	"time"
)

// NewHTTPServer returns the http.Server every sshdeck listener uses: bounded
// reads, writes and idle connections, header size, and its own errors
// logged as warnings. A streaming handler lifts its write deadline itself
// (http.ResponseController).
func NewHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
