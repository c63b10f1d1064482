// Package web is the HTTP toolkit every sshdeck service shares: the one map
// from error codes to statuses and the contract's error body (respond.go),
// JSON bodies (decode.go), the request middleware (request ids, one log line
// per request, panics; middleware.go), the http.Server settings (server.go),
// /healthz (health.go) and the answers for unknown paths and methods
// (fallback.go). It knows no route and no service: shared/api, the tunnel
// service's API and shared/lambdahttp import it, never the other way round.
package web
