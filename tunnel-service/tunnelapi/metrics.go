package tunnelapi

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// PrometheusContentType is the content type of Prometheus's text
// exposition format, version 0.0.4: what GET /metrics answers.
const PrometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

// metrics serves GET /metrics: the replica's Manager.Metrics in
// Prometheus's text format, written here (no client library: the format
// is a few lines of text). The route needs the admin scope: it shows
// every user's tunnels on the replica.
func (s *server) metrics(w http.ResponseWriter, r *http.Request, _ string) error {
	var b bytes.Buffer
	writePrometheus(&b, s.Manager.Metrics())
	h := w.Header()
	h.Set("Content-Type", PrometheusContentType)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(b.Bytes())
	return nil
}

// runningStates are the states of a tunnel that a replica runs, each a
// sample of sshdeck_tunnels even at 0, so that a graph of one does not
// stop when the last such tunnel leaves it.
var runningStates = []sshdeck.TunnelState{
	sshdeck.TunnelConnecting, sshdeck.TunnelConnected, sshdeck.TunnelRetrying, sshdeck.TunnelWaiting,
}

// writePrometheus writes m as Prometheus text: each family's HELP and TYPE
// lines, then its samples. Tunnels are labelled with their owner's user id
// and their name, never an address.
func writePrometheus(b *bytes.Buffer, m tunnel.Metrics) {
	e := exposition{b}
	byState := map[sshdeck.TunnelState]int64{}
	for _, t := range m.Tunnels {
		byState[t.State]++
	}
	e.family("sshdeck_tunnels", "gauge", "Tunnels this replica runs, by the state each last reported.")
	for _, st := range runningStates {
		e.sample("sshdeck_tunnels", byState[st], "state", string(st))
	}

	e.family("sshdeck_tunnel_connected", "gauge", "Whether the tunnel is connected (1) or not (0), for each tunnel this replica runs.")
	for _, t := range m.Tunnels {
		connected := int64(0)
		if t.State == sshdeck.TunnelConnected {
			connected = 1
		}
		e.sample("sshdeck_tunnel_connected", connected, "owner", t.Owner, "tunnel", t.Name)
	}
	// A direct tunnel's bytes never pass through the service: it has no
	// samples of bytes or connections, rather than zeros that would read
	// as an idle tunnel.
	relays := slices.DeleteFunc(slices.Clone(m.Tunnels), func(t tunnel.TunnelMetrics) bool { return t.Mode == sshdeck.TunnelDirect })
	e.family("sshdeck_tunnel_bytes_total", "counter", "Bytes a relay tunnel carried since it was last started: in, from the endpoint's clients to the source; out, back.")
	for _, t := range relays {
		e.sample("sshdeck_tunnel_bytes_total", t.BytesIn, "owner", t.Owner, "tunnel", t.Name, "direction", "in")
		e.sample("sshdeck_tunnel_bytes_total", t.BytesOut, "owner", t.Owner, "tunnel", t.Name, "direction", "out")
	}
	e.family("sshdeck_tunnel_active_connections", "gauge", "Connections a relay tunnel carries now.")
	for _, t := range relays {
		e.sample("sshdeck_tunnel_active_connections", int64(t.ActiveConnections), "owner", t.Owner, "tunnel", t.Name)
	}
	e.family("sshdeck_tunnel_reconnects_total", "counter", "Times the tunnel came up again after a failure since it was last started.")
	for _, t := range m.Tunnels {
		e.sample("sshdeck_tunnel_reconnects_total", int64(t.Reconnects), "owner", t.Owner, "tunnel", t.Name)
	}

	e.family("sshdeck_relayed_bytes_total", "counter", "Bytes this replica's relay tunnels carried since it started: in, from the endpoints' clients to the sources; out, back.")
	e.sample("sshdeck_relayed_bytes_total", m.BytesIn, "direction", "in")
	e.sample("sshdeck_relayed_bytes_total", m.BytesOut, "direction", "out")
	e.family("sshdeck_reconnects_total", "counter", "Reconnects of the tunnels this replica ran, since it started.")
	e.sample("sshdeck_reconnects_total", m.Reconnects)
	e.family("sshdeck_tunnels_failed_total", "counter", "Tunnels this replica recorded as failed since it started (no retry allowed or left, or their replica gone).")
	e.sample("sshdeck_tunnels_failed_total", m.Failed)

	e.family("sshdeck_forward_connections", "gauge", "Connections of sshdeck forward open on this replica, by owner.")
	owners := make([]string, 0, len(m.Forwards))
	for owner := range m.Forwards {
		owners = append(owners, owner)
	}
	slices.Sort(owners)
	for _, owner := range owners {
		e.sample("sshdeck_forward_connections", int64(m.Forwards[owner]), "owner", owner)
	}
}

// exposition writes Prometheus's text format.
type exposition struct{ b *bytes.Buffer }

// family starts a metric family: its HELP (escaped) and TYPE lines.
func (e exposition) family(name, typ, help string) {
	e.b.WriteString("# HELP " + name + " " + helpEscaper.Replace(help) + "\n")
	e.b.WriteString("# TYPE " + name + " " + typ + "\n")
}

// sample writes one sample; labels are name, value pairs, the values
// escaped as the format says.
func (e exposition) sample(name string, value int64, labels ...string) {
	e.b.WriteString(name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			e.b.WriteByte('{')
		} else {
			e.b.WriteByte(',')
		}
		e.b.WriteString(labels[i] + `="` + labelEscaper.Replace(labels[i+1]) + `"`)
	}
	if len(labels) > 0 {
		e.b.WriteByte('}')
	}
	e.b.WriteString(" " + strconv.FormatInt(value, 10) + "\n")
}

// The format's escapes: in a label value a backslash, a double quote and
// a line feed; in HELP text a backslash and a line feed.
var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)
