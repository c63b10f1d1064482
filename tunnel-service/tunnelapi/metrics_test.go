package tunnelapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// TestAPIMetrics: GET /metrics needs an admin token; it answers
// Prometheus text that parses, with the counts of a real relay tunnel that
// carried bytes, a waiting tunnel whose name needs escaping, and the
// replica's totals. The statuses of both tunnels show their counts, as
// openapi.yaml says (e.do checks every answer against it), and the status
// stream sends them.
func TestAPIMetrics(t *testing.T) {
	w := tunneltest.NewWorld(t)
	e := newAPIEnv(t, apiSetup{world: w})
	e.secret(w.Key)
	ops := e.adminToken("ops")

	r := e.get("/metrics", "")
	r.wantError(t, http.StatusUnauthorized, sshdeck.Unauthorized)
	if r.header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	e.get("/metrics", e.alice).wantError(t, http.StatusForbidden, sshdeck.Forbidden, "admin")

	stream, closeStream := e.openStream(e.alice)
	defer closeStream()
	port := sshdtest.FreePort(t)
	e.connect(e.alice, worldTunnelBody(w, "web", port))
	// Bob's tunnel finds no SSH server and waits an hour to retry: it runs
	// here, not connected, its name a test of the labels' escapes.
	odd := `we"b\1`
	e.connect(e.bob, withFields(e.tunnelBody(odd), "maxRetries", 1000, "retryInterval", 3_600_000))
	e.waitStatus(e.alice, "web", "connected", func(st tunnel.Status) bool { return st.Status == sshdeck.TunnelConnected })
	const n = 256 << 10
	if err := sshdtest.RoundTrip(port, n); err != nil {
		t.Fatal(err)
	}
	web := e.waitStatus(e.alice, "web", "its bytes counted", func(st tunnel.Status) bool {
		return st.BytesIn != nil && *st.BytesIn == n && st.BytesOut != nil && *st.BytesOut == n
	})
	// The stream sends the counts as they reach the store.
	for {
		if st := stream.next(t); st.Name == "web" && st.BytesIn != nil && *st.BytesIn == n {
			break
		}
	}
	if web.ConnectedSince == nil || web.ActiveConnections == nil || *web.ActiveConnections != 0 || web.Reconnects != 0 || web.LastError != nil {
		t.Errorf("web's status: connectedSince %v, activeConnections %v, reconnects %d, lastError %v; want set, 0, 0, null",
			web.ConnectedSince, web.ActiveConnections, web.Reconnects, web.LastError)
	}
	waiting := e.waitStatus(e.bob, odd, "waiting", func(st tunnel.Status) bool { return st.Status == sshdeck.TunnelWaiting })
	if waiting.LastError == nil || *waiting.LastError != waiting.Reason || waiting.ConnectedSince != nil ||
		waiting.BytesIn == nil || *waiting.BytesIn != 0 {
		t.Errorf("the waiting tunnel's status: lastError %v (reason %q), connectedSince %v, bytesIn %v; want the reason, null, 0",
			waiting.LastError, waiting.Reason, waiting.ConnectedSince, waiting.BytesIn)
	}

	r = e.get("/metrics", ops)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != PrometheusContentType {
		t.Fatalf("GET /metrics: %d %q\n%s", r.status, r.header.Get("Content-Type"), r.body)
	}
	got := parsePrometheus(t, string(r.body))
	for _, want := range []struct {
		series string
		value  float64
	}{
		{series("sshdeck_tunnels", "state", "connected"), 1},
		{series("sshdeck_tunnels", "state", "waiting"), 1},
		{series("sshdeck_tunnels", "state", "retrying"), 0},
		{series("sshdeck_tunnel_connected", "owner", e.aliceID, "tunnel", "web"), 1},
		{series("sshdeck_tunnel_connected", "owner", e.bobID, "tunnel", odd), 0},
		{series("sshdeck_tunnel_bytes_total", "owner", e.aliceID, "tunnel", "web", "direction", "in"), n},
		{series("sshdeck_tunnel_bytes_total", "owner", e.aliceID, "tunnel", "web", "direction", "out"), n},
		{series("sshdeck_tunnel_bytes_total", "owner", e.bobID, "tunnel", odd, "direction", "in"), 0},
		{series("sshdeck_tunnel_active_connections", "owner", e.aliceID, "tunnel", "web"), 0},
		{series("sshdeck_tunnel_reconnects_total", "owner", e.aliceID, "tunnel", "web"), 0},
		{series("sshdeck_relayed_bytes_total", "direction", "in"), n},
		{series("sshdeck_relayed_bytes_total", "direction", "out"), n},
		{series("sshdeck_reconnects_total"), 0},
		{series("sshdeck_tunnels_failed_total"), 0},
	} {
		if v, ok := got[want.series]; !ok || v != want.value {
			t.Errorf("%s = %v (present %t), want %v", want.series, v, ok, want.value)
		}
	}
	if len(got) != 18 {
		t.Errorf("%d samples, want the 18 of two tunnels and the totals:\n%s", len(got), r.body)
	}
}

// adminToken makes an admin user of the name and returns a token of theirs.
func (e *apiEnv) adminToken(name string) string {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.admin.AddUser(ctx, name, true); err != nil {
		e.t.Fatal(err)
	}
	token, _, err := e.admin.CreateToken(ctx, name, "metrics", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return token
}

// series is a sample's name and labels (name, value pairs) as
// parsePrometheus keys it: the labels sorted by name.
func series(name string, labels ...string) string {
	var pairs []string
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+"="+strconv.Quote(labels[i+1]))
	}
	slices.Sort(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// parsePrometheus reads Prometheus's text format (0.0.4) strictly enough to
// fail on what a scraper would refuse: every sample's family has one HELP
// and one TYPE line before its samples, label values are quoted with the
// format's escapes, values are numbers, and no series appears twice. It
// returns each sample's value by series.
func parsePrometheus(t *testing.T, text string) map[string]float64 {
	t.Helper()
	if !strings.HasSuffix(text, "\n") {
		t.Error("the exposition does not end with a line feed")
	}
	helped, typed := map[string]bool{}, map[string]string{}
	samples := map[string]float64{}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(format string, args ...any) {
			t.Errorf("line %d %q: %s", i+1, line, fmt.Sprintf(format, args...))
		}
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			kind, rest, _ := strings.Cut(rest, " ")
			name, value, _ := strings.Cut(rest, " ")
			switch {
			case kind == "HELP" && helped[name], kind == "TYPE" && typed[name] != "":
				fail("a second %s line", kind)
			case kind == "HELP":
				helped[name] = true
			case kind == "TYPE" && !slices.Contains([]string{"counter", "gauge", "histogram", "summary", "untyped"}, value):
				fail("unknown type %q", value)
			case kind == "TYPE":
				typed[name] = value
			}
			continue
		}
		name, labels, value, err := splitSample(line)
		switch {
		case err != nil:
			fail("%v", err)
			continue
		case typed[name] == "" || !helped[name]:
			fail("a sample of %s before its HELP and TYPE lines", name)
		case typed[name] == "counter" && !strings.HasSuffix(name, "_total"):
			fail("a counter not named *_total")
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			fail("value %q: %v", value, err)
		}
		key := series(name, labels...)
		if _, dup := samples[key]; dup {
			fail("series %s a second time", key)
		}
		samples[key] = v
	}
	return samples
}

// splitSample splits `name{a="x",b="y"} value` into its parts, the label
// values unescaped.
func splitSample(line string) (name string, labels []string, value string, err error) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", nil, "", fmt.Errorf("no metric name")
	}
	name, rest := line[:i], line[i:]
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for !strings.HasPrefix(rest, "}") {
			label, after, ok := strings.Cut(rest, `="`)
			if !ok || label == "" {
				return "", nil, "", fmt.Errorf("a label without a quoted value")
			}
			var v strings.Builder
			j := 0
			for ; j < len(after) && after[j] != '"'; j++ {
				if after[j] != '\\' {
					v.WriteByte(after[j])
					continue
				}
				j++
				switch {
				case j == len(after):
					return "", nil, "", fmt.Errorf("label %s ends in a backslash", label)
				case after[j] == 'n':
					v.WriteByte('\n')
				case after[j] == '\\' || after[j] == '"':
					v.WriteByte(after[j])
				default:
					return "", nil, "", fmt.Errorf("label %s: unknown escape \\%c", label, after[j])
				}
			}
			if j == len(after) {
				return "", nil, "", fmt.Errorf("label %s is not closed", label)
			}
			labels = append(labels, label, v.String())
			rest = strings.TrimPrefix(after[j+1:], ",")
		}
		rest = rest[1:]
	}
	value, ok := strings.CutPrefix(rest, " ")
	if !ok || value == "" || strings.Contains(value, " ") {
		return "", nil, "", fmt.Errorf("no single value after the series")
	}
	return name, labels, value, nil
}

// TestAPIMetricsOfForwards: a connection of `sshdeck forward` open through
// the replica shows as its owner's in sshdeck_forward_connections, and
// goes once closed.
func TestAPIMetricsOfForwards(t *testing.T) {
	e, w := forwardEnv(t, apiSetup{})
	ops := e.adminToken("ops")
	forwards := func() (float64, bool) {
		r := e.get("/metrics", ops)
		if r.status != http.StatusOK {
			t.Fatalf("GET /metrics: %d %s", r.status, r.body)
		}
		v, ok := parsePrometheus(t, string(r.body))[series("sshdeck_forward_connections", "owner", e.aliceID)]
		return v, ok
	}
	s, err := e.dialForward(e.alice, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := s.Open(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(w.EchoPort)))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := forwards(); !ok || v != 1 {
		t.Errorf("alice's forwarded connections: %v (present %t), want 1", v, ok)
	}
	conn.Close()
	sshdtest.WaitUntil(t, "alice's forwarded connection gone from /metrics", func() bool {
		_, ok := forwards()
		return !ok
	})
}
