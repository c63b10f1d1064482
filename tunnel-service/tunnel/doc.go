// Package tunnel is the tunnel service: SSH remote forwarding between two
// hosts, supervised, persisted and shared out among service replicas.
//
// A tunnel opens SSH to its source host, SSH to its endpoint host through the
// source (as ssh -J would), asks the endpoint to listen on
// 127.0.0.1:endpointPort, and carries every connection made there to the
// source's 127.0.0.1:sourcePort: the effect of `ssh -R` run on the source.
//
// The pieces, one file each:
//   - dial.go: the two SSH hops, their authentication, denied address ranges;
//   - hostkey.go: host key pins and the first key remembered per owner/address;
//   - forward.go: the remote forward and the copying of each connection;
//   - keepalive.go: dead-peer detection;
//   - runner.go: one tunnel's state machine, with its retries;
//   - manager.go: the tunnels of one replica, their leases and the takeover
//     of another replica's autoStart tunnels;
//   - server.go, stream.go: the HTTP API and its Server-Sent Events.
package tunnel
