package tunnel

// What the engine's tests (package tunnel_test) look at inside it.

// Running reports whether the tunnel runs on this replica.
func (m *Manager) Running(owner, name string) bool { return m.running(tunnelKey{owner, name}) }

// Crash stops the Manager at once and writes nothing, as a replica that
// dies does.
func (m *Manager) Crash() { m.crash() }

// OpenTunnel opens a stored tunnel's sealed credentials.
var OpenTunnel = openTunnel
