package web

import (
	"log/slog"
	"net/http"
	"slices"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Fallback answers what no pattern of mux serves: 405 with Allow when the
// path is served with another of the methods, else 404, both in the
// contract's error body. Register it on mux as "/".
func Fallback(mux *http.ServeMux, methods []string, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, method := range methods {
			probe := r.Clone(r.Context())
			probe.Method = method
			if _, pattern := mux.Handler(probe); pattern != "/" && !slices.Contains(allow, method) {
				allow = append(allow, method)
			}
		}
		if len(allow) == 0 {
			WriteError(w, r, log, sshdeck.Errorf(sshdeck.NotFound, "no route for %s %s", r.Method, r.URL.Path))
			return
		}
		for _, m := range allow {
			w.Header().Add("Allow", m)
		}
		WriteError(w, r, log, sshdeck.Errorf(sshdeck.MethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
	})
}
