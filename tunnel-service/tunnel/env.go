package tunnel

import "github.com/sshdeck/sshdeck/shared/config"

// OptionsFrom takes the settings of the tunnel service from the
// configuration: the denied ranges (SSHDECK_TUNNEL_DENY_CIDRS, added to
// AlwaysDeny for the hops the service dials itself), this replica's name in leases (SSHDECK_REPLICA_ID) and the
// lease TTL (SSHDECK_TUNNEL_LEASE_TTL), whose third is how often leases are
// renewed and takeovers looked for, and the limits of tunnels and status
// streams per user, of jump hosts per chain and of forwarded connections
// per user (SSHDECK_LIMIT_TUNNELS, SSHDECK_LIMIT_STREAMS,
// SSHDECK_LIMIT_JUMP_HOSTS, SSHDECK_LIMIT_FORWARDS). Unset ones keep their
// defaults.
func OptionsFrom(cfg config.Config) Options {
	o := Options{Deny: cfg.TunnelDeny, Holder: cfg.ReplicaID, TunnelLimit: cfg.Limits.Tunnels, StreamLimit: cfg.Limits.Streams, JumpLimit: cfg.Limits.JumpHosts, ForwardLimit: cfg.Limits.Forwards}
	if ttl := cfg.TunnelLeaseTTL; ttl > 0 {
		o.LeaseTTL, o.Heartbeat, o.Reconcile = ttl, ttl/3, ttl/3
	}
	return o
}
