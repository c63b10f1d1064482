// Package tunnelapi is the tunnel service's HTTP API ({tunnel_url},
// API.md's tunnel operations) over the engine of tunnel-service/tunnel,
// built on shared/web like the rest of sshdeck's API:
//   - api.go: New, the route table (each route's name is its operationId
//     in openapi.yaml), bearer authentication, and the handlers of connect,
//     status, disconnect, cancel and delete, which decode a body, call the
//     Manager, and write its answer or its error;
//   - stream.go: GET /ssh/tunnel/status/stream, the Server-Sent Events of
//     the caller's statuses, fed by the owner's one reading
//     (Manager.Subscribe), its token checked again every 30 s, its life
//     one hour;
//   - forward.go: GET /ssh/forward, the WebSocket of a forward to the
//     caller's machine (shared/forwarding), its via host and target checked
//     before the upgrade, served over Manager.Via, its token checked again
//     every 30 s (stream.go's recheck, as the status stream's is);
//   - metrics.go: GET /metrics, for an admin token: the tunnels the
//     replica runs (Manager.Metrics) in Prometheus's text format.
//
// Every audited route's request leaves one audit record (authenticated,
// shared/audit): connect, disconnect, cancel, delete and forward.
//
// It holds no tunnel state of its own: what a tunnel is, how a request is
// checked and what its status says are the engine's.
package tunnelapi
