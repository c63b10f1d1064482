package sshdeck

import (
	"strconv"
	"strings"
	"time"
)

// A host's tunnelConnections are live tunnels (API.md, "Hosts as OpenSSH
// users keep them"): item i of host id's list is the tunnel named
// HostTunnelName(id, i) of the host's owner, whose source is the host and
// whose endpoint is the item's endpointHost. The hosts service writes
// their records whenever the host is saved (shared/hosts, tunnels.go);
// the tunnel service runs them like any tunnel, reading the hosts at each
// attempt. Names holding ':' are theirs: a connect request may not give
// one with fields of its own.

// HostTunnelSep separates a host tunnel's host id from its index.
const HostTunnelSep = ":"

// HostTunnelName is the name of item i of host id's tunnelConnections:
// "12:0".
func HostTunnelName(id int64, i int) string {
	return strconv.FormatInt(id, 10) + HostTunnelSep + strconv.Itoa(i)
}

// ParseHostTunnelName returns the host id and index a host tunnel's name
// holds; ok is false for any other name.
func ParseHostTunnelName(name string) (id int64, i int, ok bool) {
	a, b, cut := strings.Cut(name, HostTunnelSep)
	if !cut || !digits(a) || !digits(b) {
		return 0, 0, false
	}
	id, err := strconv.ParseInt(a, 10, 64)
	if err != nil || id <= 0 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(b)
	if err != nil || strconv.Itoa(n) != b || strconv.FormatInt(id, 10) != a {
		return 0, 0, false // no leading zeros: one tunnel, one name
	}
	return id, n, true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// HostTunnelSpec is the spec of item i of h's tunnelConnections: it
// references the host and the endpoint, and copies nothing else of them
// but the host's name (HostName, for status), which SameHostTunnel
// ignores: renaming a host restarts none of its tunnels.
func HostTunnelSpec(h *Host, i int) TunnelSpec {
	c := h.TunnelConnections[i]
	return TunnelSpec{
		HostName:      h.Name,
		SourceHostID:  h.ID,
		EndpointHost:  c.EndpointHost,
		HostTunnel:    true,
		SourcePort:    c.SourcePort,
		EndpointPort:  c.EndpointPort,
		MaxRetries:    c.MaxRetries,
		RetryInterval: time.Duration(c.RetryInterval) * time.Second,
		AutoStart:     c.AutoStart,
	}
}

// References reports whether the spec names stored hosts, read at each
// attempt, rather than holding every hop itself.
func (s *TunnelSpec) References() bool {
	return s.SourceHostID != 0 || s.EndpointHostID != 0 || s.EndpointHost != ""
}

// SameHostTunnel reports whether two host tunnel specs run the same
// tunnel: whether a save of the host leaves the tunnel as it is.
func SameHostTunnel(a, b *TunnelSpec) bool {
	x, y := a, b
	return x.SourceHostID == y.SourceHostID && x.EndpointHostID == y.EndpointHostID &&
		x.EndpointHost == y.EndpointHost && x.HostTunnel == y.HostTunnel &&
		x.SourcePort == y.SourcePort && x.EndpointPort == y.EndpointPort &&
		x.MaxRetries == y.MaxRetries && x.RetryInterval == y.RetryInterval &&
		x.AutoStart == y.AutoStart && x.IsPinned == y.IsPinned &&
		len(x.Jumps) == 0 && len(y.Jumps) == 0 && x.Source == y.Source && x.Endpoint == y.Endpoint
}
