// Package routes is the route table of the base_url API as plain data: the
// single source the local router, the Lambda functions, the CDK app and the
// tests all read. It imports the standard library and the domain's types
// (shared/sshdeck, itself stdlib only), so that the CDK module can read it
// without compiling a handler.
package routes

import "github.com/sshdeck/sshdeck/shared/sshdeck"

// Access is what a route may touch in the store.
type Access int

const (
	// Read routes read records.
	Read Access = iota + 1
	// Write routes create, change or delete the caller's records.
	Write
)

func (a Access) String() string {
	switch a {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "unknown"
}

// Route is one operation of the base_url API.
type Route struct {
	// Name names the route's handler, its Lambda function (functions/<Name>)
	// and its sample event (events/<Name>.json).
	Name   string
	Method string
	// Path uses {param} segments, as net/http patterns and API Gateway do.
	Path string
	// Public routes need no token (no authorizer in AWS); every other
	// route needs a valid one.
	Public bool
	// Scope is what the caller's token must carry, or 403: "" on a route
	// any valid token may call. The route wrapper of each service checks
	// it, and only it (sshdeck.Principal.Can).
	Scope  sshdeck.Scope
	Access Access
	// Credentials: the route seals or opens credential fields, so it needs
	// the data key (kms:Decrypt, kms:GenerateDataKey in AWS).
	Credentials bool
	// Argon2: the route hashes a password (argon2id: 19 MiB and some 20-40
	// ms of a full core), so its function gets PasswordMemoryMB rather
	// than DefaultMemoryMB, for the CPU that memory buys (MemoryMB).
	Argon2 bool
	// Unaudited: the route writes no one's change, so its requests leave
	// no audit record; every other Write route's request leaves one
	// (Audited).
	Unaudited bool
	// Stream: in AWS the route's answer is streamed (API Gateway's
	// responseTransferMode STREAM, InvokeWithResponseStream): it may pass
	// Lambda's 6 MB limit on a buffered response (up to Lambda's 200 MB),
	// and its function holds a page of it, not all of it.
	Stream bool
}

// Scopes, shortened for the table below.
const (
	hostsRead  = sshdeck.ScopeHostsRead
	hostsWrite = sshdeck.ScopeHostsWrite
	filesRead  = sshdeck.ScopeFilesRead
	filesWrite = sshdeck.ScopeFilesWrite
	alertsRead = sshdeck.ScopeAlertsRead
	tokens     = sshdeck.ScopeTokens
	admin      = sshdeck.ScopeAdmin
	anyScope   = sshdeck.Scope("")
)

// All is every base_url route.
var All = []Route{
	{Name: "healthz", Method: "GET", Path: "/healthz", Public: true, Access: Read},
	// The unpaged list of 1000 hosts with 64 KiB keys is about 67 MB.
	{Name: "list-hosts", Method: "GET", Path: "/ssh/db/host", Scope: hostsRead, Access: Read, Credentials: true, Stream: true},
	{Name: "create-host", Method: "POST", Path: "/ssh/db/host", Scope: hostsWrite, Access: Write, Credentials: true},
	{Name: "get-host", Method: "GET", Path: "/ssh/db/host/{id}", Scope: hostsRead, Access: Read, Credentials: true},
	{Name: "update-host", Method: "PUT", Path: "/ssh/db/host/{id}", Scope: hostsWrite, Access: Write, Credentials: true},
	{Name: "delete-host", Method: "DELETE", Path: "/ssh/db/host/{id}", Scope: hostsWrite, Access: Write},
	// Import creates hosts as create-host does, and reads the caller's
	// hosts for the names an ssh_config's ProxyJump may use. Export reads
	// them all, credentials opened when asked for (the data key), and is
	// as large as the unpaged list. Both paths are static, which API
	// Gateway and net/http prefer to {id}.
	{Name: "import-hosts", Method: "POST", Path: "/ssh/db/host/import", Scope: hostsWrite, Access: Write, Credentials: true},
	{Name: "export-hosts", Method: "GET", Path: "/ssh/db/host/export", Scope: hostsRead, Access: Read, Credentials: true, Stream: true},

	{Name: "list-recent-files", Method: "GET", Path: "/ssh/file_manager/recent", Scope: filesRead, Access: Read},
	{Name: "add-recent-file", Method: "POST", Path: "/ssh/file_manager/recent", Scope: filesWrite, Access: Write},
	{Name: "delete-recent-file", Method: "DELETE", Path: "/ssh/file_manager/recent", Scope: filesWrite, Access: Write},
	{Name: "list-shortcuts", Method: "GET", Path: "/ssh/file_manager/shortcuts", Scope: filesRead, Access: Read},
	{Name: "add-shortcut", Method: "POST", Path: "/ssh/file_manager/shortcuts", Scope: filesWrite, Access: Write},
	{Name: "delete-shortcut", Method: "DELETE", Path: "/ssh/file_manager/shortcuts", Scope: filesWrite, Access: Write},

	{Name: "list-alerts", Method: "GET", Path: "/alerts", Scope: alertsRead, Access: Read},
	// Dismissing changes what the caller is shown, nothing else: reading
	// alerts is all it needs.
	{Name: "dismiss-alert", Method: "POST", Path: "/alerts/dismiss", Scope: alertsRead, Access: Write},
	{Name: "publish-alert", Method: "POST", Path: "/alerts", Scope: admin, Access: Write},
	{Name: "delete-alert", Method: "DELETE", Path: "/alerts/{id}", Scope: admin, Access: Write},

	// The feed reads nothing of a user's, so any token may read it, but it
	// writes the cache every function instance shares: Write.
	{Name: "releases-feed", Method: "GET", Path: "/releases/rss", Scope: anyScope, Access: Write, Unaudited: true},

	// Login reads the user and their credentials (the TOTP secret is
	// sealed), counts failures and writes the token it issues.
	{Name: "login", Method: "POST", Path: "/auth/login", Public: true, Access: Write, Credentials: true, Argon2: true},
	{Name: "get-me", Method: "GET", Path: "/users/me", Scope: anyScope, Access: Read},
	{Name: "change-password", Method: "POST", Path: "/users/me/password", Scope: tokens, Access: Write, Argon2: true},
	{Name: "create-totp", Method: "POST", Path: "/users/me/totp", Scope: tokens, Access: Write, Credentials: true},
	{Name: "enable-totp", Method: "POST", Path: "/users/me/totp/enable", Scope: tokens, Access: Write, Credentials: true},
	{Name: "disable-totp", Method: "DELETE", Path: "/users/me/totp", Scope: tokens, Access: Write, Credentials: true},
	{Name: "list-users", Method: "GET", Path: "/users", Scope: admin, Access: Read},
	{Name: "create-user", Method: "POST", Path: "/users", Scope: admin, Access: Write, Argon2: true},
	{Name: "update-user", Method: "PATCH", Path: "/users/{id}", Scope: admin, Access: Write},
	{Name: "list-tokens", Method: "GET", Path: "/tokens", Scope: tokens, Access: Read},
	{Name: "create-token", Method: "POST", Path: "/tokens", Scope: tokens, Access: Write},
	{Name: "delete-token", Method: "DELETE", Path: "/tokens/{id}", Scope: tokens, Access: Write},

	// The audit trail, an account's security log: the caller's own with
	// the tokens scope, everyone's with admin as well. The export is the
	// whole trail kept, streamed a page at a time.
	{Name: "list-audit", Method: "GET", Path: "/audit", Scope: tokens, Access: Read},
	{Name: "export-audit", Method: "GET", Path: "/audit/export", Scope: tokens, Access: Read, Stream: true},
}

// Tunnel is every route of the tunnel service (tunnel_url): not Lambda
// functions, but their scopes come from here as the base_url routes' do.
var Tunnel = []Route{
	{Name: "tunnel-healthz", Method: "GET", Path: "/healthz", Public: true, Access: Read},
	{Name: "tunnel-connect", Method: "POST", Path: "/ssh/tunnel/connect", Scope: sshdeck.ScopeTunnelsWrite, Access: Write, Credentials: true},
	{Name: "tunnel-disconnect", Method: "POST", Path: "/ssh/tunnel/disconnect", Scope: sshdeck.ScopeTunnelsWrite, Access: Write},
	{Name: "tunnel-cancel", Method: "POST", Path: "/ssh/tunnel/cancel", Scope: sshdeck.ScopeTunnelsWrite, Access: Write},
	{Name: "tunnel-delete", Method: "DELETE", Path: "/ssh/tunnel/{name...}", Scope: sshdeck.ScopeTunnelsWrite, Access: Write},
	{Name: "tunnel-status", Method: "GET", Path: "/ssh/tunnel/status", Scope: sshdeck.ScopeTunnelsRead, Access: Read},
	{Name: "tunnel-status-one", Method: "GET", Path: "/ssh/tunnel/status/{name...}", Scope: sshdeck.ScopeTunnelsRead, Access: Read},
	{Name: "tunnel-status-stream", Method: "GET", Path: "/ssh/tunnel/status/stream", Scope: sshdeck.ScopeTunnelsRead, Access: Read},
	// A forward to the user's machine (a WebSocket) reads its via host's
	// credentials and remembers host keys, as a tunnel's attempt does.
	{Name: "tunnel-forward", Method: "GET", Path: "/ssh/forward", Scope: sshdeck.ScopeTunnelsWrite, Access: Write, Credentials: true},
	// Prometheus text of the tunnels the replica runs, every user's: an
	// operator's, read from the replica's memory.
	{Name: "tunnel-metrics", Method: "GET", Path: "/metrics", Scope: admin, Access: Read},
}

// The memory of a route's Lambda function, in MB. Lambda gives CPU in
// proportion to memory (a full vCPU at 1769 MB): 256 MB buys twice the
// CPU of 128 MB, which halves a cold start's TLS and JSON work; a route
// that hashes passwords gets 1024 MB, because the first login of a fresh
// container costs 35-42 ms of a full core here (the hash, and the process
// faulting in its 19 MiB), 250-290 ms at 256 MB's share, past the 250 ms
// a login may take, and arm64 runs argon2's generic Go code. The
// cold-start bench (bench/lambdabench) reports it at both.
const (
	DefaultMemoryMB  = 256
	PasswordMemoryMB = 1024
)

// MemoryMB is the memory of the route's function.
func (r Route) MemoryMB() int {
	if r.Argon2 {
		return PasswordMemoryMB
	}
	return DefaultMemoryMB
}

// Audited reports whether each request of the route leaves one audit
// record (API.md, "Audit and events"): the Write routes, whose requests
// change what users and admins made, but those that say otherwise.
func (r Route) Audited() bool { return r.Access == Write && !r.Unaudited }

// ByName returns the route with the name.
func ByName(name string) (Route, bool) {
	for _, r := range All {
		if r.Name == name {
			return r, true
		}
	}
	return Route{}, false
}
