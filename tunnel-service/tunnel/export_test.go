package tunnel

// What the engine's tests (package tunnel_test) look at inside it.

// Running reports whether the tunnel runs on this replica.
func (m *Manager) Running(owner, name string) bool { return m.running(tunnelKey{owner, name}) }

// Crash stops the Manager at once and writes nothing, as a replica that
// dies does.
func (m *Manager) Crash() { m.crash() }

// OpenTunnel opens a stored tunnel's sealed credentials.
var OpenTunnel = openTunnel

// Conns is the number of SSH connections in the Manager's pool.
func (m *Manager) Conns() int { return m.pool.size() }

// Dials is the number of SSH connections the Manager's pool has dialled.
func (m *Manager) Dials() int64 { return m.pool.dials.Load() }
