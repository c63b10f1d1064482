// Package tunnel is the tunnel service's engine: SSH remote forwarding
// between two hosts, supervised, persisted and shared out among service
// replicas. It serves no HTTP: its API is tunnel-service/tunnelapi, which
// calls the Manager's exported methods (Connect, Disconnect, Delete,
// Status, Statuses, Subscribe, Metrics, and for forwards to the users'
// machines Via, CheckTarget and Done) and nothing else.
//
// A tunnel opens SSH to its source host (through the source's jump hosts,
// when it has any, hop by hop), SSH to its endpoint host through the
// source (as ssh -J would), asks the endpoint to listen on
// 127.0.0.1:endpointPort, and carries every connection made there to the
// source's 127.0.0.1:sourcePort: the effect of `ssh -R` run on the source.
//
// A direct tunnel ("mode": "direct") instead runs OpenSSH's own client on
// the source, ssh -N -R, in an exec session of the source's connection,
// and only supervises it: its bytes never pass through the service.
//
// Tunnels share SSH connections, as OpenSSH's ControlMaster does: those of
// one owner that reach a host through the same hops with the same logins
// ride one connection to it, at every hop (pool.go, node.go). A tunnel's
// attempt takes its spec's hops and credentials (newPath), acquires their
// connections from the pool, asks the endpoint's for its forward, and
// waits; it lets go when it ends, and a connection closes with its last
// tunnel. A connection's end is the failure of every tunnel on it, each
// retried under its own rules.
//
// The pieces, one file each:
//   - request.go: a connect request checked into a tunnel's spec and
//     credentials (the SSH fields' limits are sshdeck's, shared with hosts);
//   - stored.go: a request's sides given as stored hosts, read and checked;
//   - refs.go: tunnels from stored hosts keep references, read again at
//     each attempt; a host's tunnelConnections ("<id>:<i>") started by
//     name, and forgotten when their host or item is gone;
//   - dial.go: the SSH hops, their authentication, denied address ranges,
//     and the dial of one hop, over TCP or through the hop before it;
//   - pool.go: the shared connections, by what makes two interchangeable
//     (owner, path, address, login, an HMAC of the credentials), their
//     references and single dials;
//   - node.go: one shared connection and the goroutine serving it: its
//     peer's requests, the forwarded connections by port, keepalives;
//   - chain.go: a connection's path (the ones it rides in) and which hop
//     of it broke;
//   - channel.go: the few parts of an ssh.Client a tunnel needs, without its
//     goroutines;
//   - hostkey.go: host key pins and the first key remembered per owner,
//     address and the path to it;
//   - forward.go: a tunnel's remote forward on the endpoint's (shared)
//     connection and the copying of each connection;
//   - link.go: what an attempt holds while its tunnel is up, whatever the
//     mode;
//   - direct.go: a direct tunnel's client on the source, its session, pty
//     and end, and the probe of the endpoint's host key through the source;
//   - directcmd.go: the client's command line, every argument quoted;
//   - agent.go: the agent a source connection forwards, holding one
//     tunnel's key while its client logs in;
//   - prompt.go: the client's output: the password prompt answered once,
//     the line that says the forward is up;
//   - directfail.go: a client's end classified from what it said;
//   - directcheck.go: the connect-time check that the source can run it;
//   - keepalive.go: dead-peer detection, per connection;
//   - failure.go: why an attempt failed, and whether a retry may mend it;
//   - runner.go: one tunnel's state machine, with its retries;
//   - loop.go: the goroutine of a running tunnel (run, attempt, serve),
//     written to keep an idle tunnel's stack at 4 KiB (TestIdleStack);
//   - seal.go: a tunnel's credentials sealed for the store;
//   - manager.go: the tunnels of one replica, their leases, the takeover of
//     another replica's autoStart tunnels, the limit of tunnels per owner,
//     Delete, and the sweep that forgets stopped tunnels after 24 h;
//   - feed.go: one reading of an owner's statuses per replica, shared by
//     all of the owner's status streams (Subscribe), and their limit;
//   - meter.go: what a run counts (bytes each way, connections open,
//     reconnects, the last failure), with atomics in the copy path;
//   - metrics.go: those counts written into the tunnel's status (with
//     each state, and by the heartbeat when they changed), and the
//     replica's Metrics, for /metrics and CloudWatch;
//   - via.go: a forward's connections to the user's machine, opened from a
//     stored via host (its route read again for each, its connection held
//     from the pool for the session), each target resolved here and
//     checked; the limits of forwards and forwarded connections per owner;
//   - status.go: a stored tunnel rendered as the API's status;
//   - env.go: the settings the environment may change.
package tunnel
