package tunnel

import (
	"fmt"
	"os"
	"time"
)

// OptionsFromEnv reads the settings of the tunnel service that the
// environment may change (the same names in every binary):
//   - SSHDECK_TUNNEL_DENY_CIDRS: comma-separated ranges that replace the
//     default denied ones;
//   - SSHDECK_REPLICA_ID: this replica's name in leases (default: host name
//     and a random suffix);
//   - SSHDECK_TUNNEL_LEASE_TTL: how long a dead replica's autoStart tunnels
//     wait before another replica takes them over (a Go duration, default
//     30s; heartbeats and takeover checks run every third of it).
func OptionsFromEnv() (Options, error) {
	var o Options
	if list := os.Getenv("SSHDECK_TUNNEL_DENY_CIDRS"); list != "" {
		deny, err := ParseDeny(list)
		if err != nil {
			return o, err
		}
		o.Deny = deny
	}
	o.Holder = os.Getenv("SSHDECK_REPLICA_ID")
	if v := os.Getenv("SSHDECK_TUNNEL_LEASE_TTL"); v != "" {
		ttl, err := time.ParseDuration(v)
		if err != nil || ttl < 300*time.Millisecond {
			return o, fmt.Errorf("SSHDECK_TUNNEL_LEASE_TTL: %q is not a duration of at least 300ms, such as 30s", v)
		}
		o.LeaseTTL, o.Heartbeat, o.Reconcile = ttl, ttl/3, ttl/3
	}
	return o, nil
}
