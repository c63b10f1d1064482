package tunnelapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/sshdeck/sshdeck/internal/sshdtest"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/internal/tunneltest"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// TestAPITunnelFromStoredHosts: over HTTP, a tunnel between two of the
// caller's stored hosts named by id alone (no credential in the body, nor
// in any answer, log line or the store's file: checkNoSecrets) connects
// and carries bytes; a side given both ways, and a host of another user's
// or of nobody's, are 400 with the same words for both.
func TestAPITunnelFromStoredHosts(t *testing.T) {
	w := tunneltest.NewWorld(t)
	e := newAPIEnv(t, apiSetup{world: w, options: func(o *tunnel.Options) { o.Hosts = w.Hosts() }})
	e.secret(w.Key)
	svc := hosts.NewService(w.Store, w.Store, w.Sealer, nil)
	save := func(owner, name string, port int) int64 {
		r, err := svc.Create(context.Background(), owner, &hosts.Input{Name: name, IP: "127.0.0.1", Port: &port, Username: "root", Key: &w.Key})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	// Host ids are per owner: alice has 1 to 4, bob 1 to 5 but 4. Bob's
	// 5 is no host of alice's, alice's 4 none of bob's.
	source, endpoint := save(e.aliceID, "source", w.Source.Port), save(e.aliceID, "endpoint", w.Endpoint.Port)
	save(e.aliceID, "more", 22)
	alices := save(e.aliceID, "more", 22)
	var bobs int64
	for range 5 {
		bobs = save(e.bobID, "bob's", w.Source.Port)
	}
	if err := svc.Delete(context.Background(), e.bobID, alices, nil); err != nil {
		t.Fatal(err)
	}

	port := sshdtest.FreePort(t)
	body := map[string]any{
		"name": "stored", "sourceHostId": source, "endpointHostId": endpoint,
		"sourcePort": w.EchoPort, "endpointPort": port, "maxRetries": 3, "retryInterval": 100,
	}
	e.connect(e.alice, body)
	e.waitStatus(e.alice, "stored", "connected", func(st tunnel.Status) bool { return st.Status == sshdeck.TunnelConnected })
	if err := sshdtest.RoundTrip(port, 64<<10); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		token string
		body  map[string]any
		want  string
	}{
		{"sourceIP too", e.alice, withFields(body, "name", "x", "sourceIP", "127.0.0.1", "sourceUsername", "root"),
			"sourceIP and sourceUsername cannot be given with sourceHostId: the stored host gives the address and credentials"},
		{"an endpoint key too", e.alice, withFields(body, "name", "x", "endpointSSHKey", w.Key),
			"endpointSSHKey cannot be given with endpointHostId: the stored host gives the address and credentials"},
		{"bob's host", e.alice, withFields(body, "name", "x", "sourceHostId", bobs), fmt.Sprintf("sourceHostId: host %d not found", bobs)},
		{"nobody's host", e.bob, withFields(body, "name", "x", "sourceHostId", bobs, "endpointHostId", 99), "endpointHostId: host 99 not found"},
		{"alice's host for bob", e.bob, withFields(body, "name", "x", "sourceHostId", alices, "endpointHostId", bobs), fmt.Sprintf("sourceHostId: host %d not found", alices)},
		{"an id of 0", e.alice, withFields(body, "name", "x", "sourceHostId", 0), "sourceHostId must be a positive integer (a host's id)"},
		{"no source at all", e.alice, withFields(body, "name", "x", "sourceHostId", nil), "sourceIP"},
	} {
		r := e.send("POST", "/ssh/tunnel/connect", tc.token, tc.body)
		r.wantError(t, http.StatusBadRequest, sshdeck.Invalid)
		if got := r.errorBody(t).Error; got != tc.want && !(tc.name == "no source at all" && len(got) > 0) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// Not a number: the body does not decode.
	r := e.send("POST", "/ssh/tunnel/connect", e.alice, withFields(body, "name", "x", "sourceHostId", fmt.Sprint(source)))
	r.wantError(t, http.StatusBadRequest, sshdeck.Invalid, "sourceHostId")
}
