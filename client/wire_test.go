package client_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/client"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/tunnel-service/tunnel"
)

// TestWireTypesAreTheServices: the client's tunnel bodies have the JSON
// fields of the service's own types, and marshal the same values
// identically: a field added to the service shows here.
func TestWireTypesAreTheServices(t *testing.T) {
	id, port, kt := int64(7), 2222, "ed25519"
	req := client.ConnectRequest{Name: "n", HostName: "h", SourceHostID: &id, EndpointHostID: &id,
		SourceIP: "10.0.0.1", SourceSSHPort: &port, SourceUsername: "u", SourcePassword: "p", SourceAuthMethod: "password",
		SourceSSHKey: "k", SourceKeyPassword: "kp", SourceKeyType: &kt, SourceHostKey: "SHA256:x",
		EndpointIP: "10.0.0.2", EndpointSSHPort: &port, EndpointUsername: "e", EndpointPassword: "ep", EndpointAuthMethod: "key",
		EndpointSSHKey: "ek", EndpointKeyPassword: "ekp", EndpointKeyType: &kt, EndpointHostKey: "SHA256:y",
		SourcePort: &port, EndpointPort: &port, MaxRetries: &port, RetryInterval: &port, AutoStart: true, IsPinned: true, Mode: "direct"}
	var theirs tunnel.ConnectRequest
	sameJSON(t, req, &theirs)
	sameJSON(t, client.ConnectRequest{}, &tunnel.ConnectRequest{})

	et := sshdeck.TunnelErrNetwork
	st := client.TunnelStatus{Name: "n", Status: sshdeck.TunnelWaiting, RetryCount: 1, MaxRetries: 3, NextRetryIn: 4, Reason: "r",
		ErrorType: &et, RetryExhausted: true, ManualDisconnect: true, HostName: "h", SourcePort: 1, EndpointPort: 2,
		AutoStart: true, IsPinned: true, Mode: sshdeck.TunnelDirect, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	since, bytesIn, bytesOut, active, lastError := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), int64(5<<40), int64(7), 16, "endpoint: the connection closed"
	counted := st
	counted.Status, counted.ConnectedSince, counted.Reconnects, counted.LastError = sshdeck.TunnelConnected, &since, 2, &lastError
	counted.BytesIn, counted.BytesOut, counted.ActiveConnections = &bytesIn, &bytesOut, &active
	sameJSON(t, counted, &tunnel.Status{})
	sameJSON(t, st, &tunnel.Status{})
	sameJSON(t, client.TunnelStatus{}, &tunnel.Status{})
	sameFields(t, reflect.TypeFor[client.ConnectRequest](), reflect.TypeFor[tunnel.ConnectRequest]())
	sameFields(t, reflect.TypeFor[client.TunnelStatus](), reflect.TypeFor[tunnel.Status]())
}

// sameJSON decodes ours into theirs and checks that theirs marshals back
// to ours' bytes.
func sameJSON(t *testing.T, ours any, theirs any) {
	t.Helper()
	a, err := json.Marshal(ours)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(a, theirs); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(theirs)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("%T marshals\n%s\nthe service's %T\n%s", ours, a, theirs, b)
	}
}

// sameFields checks that both types have the same JSON names.
func sameFields(t *testing.T, ours, theirs reflect.Type) {
	t.Helper()
	tags := func(rt reflect.Type) map[string]bool {
		m := map[string]bool{}
		for f := range rt.Fields() {
			if tag := f.Tag.Get("json"); f.IsExported() && tag != "-" {
				m[tag] = true
			}
		}
		return m
	}
	if a, b := tags(ours), tags(theirs); !reflect.DeepEqual(a, b) {
		t.Errorf("%v has JSON fields %v, the service's %v %v", ours, a, theirs, b)
	}
}
