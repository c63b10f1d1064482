package embedded

import (
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// TestUpdateHostEmpties: an update empties a host's lists and every
// credential at once, which the conformance cases leave out (the DynamoDB
// store's engine in tests cannot).
func TestUpdateHostEmpties(t *testing.T) {
	ctx := t.Context()
	s, _ := openTemp(t)
	defer s.Close()
	h := &sshdeck.Host{Owner: "alice", ID: 1, Version: 1, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	h.Tags = []string{"a"}
	h.TunnelConnections = []sshdeck.TunnelConnection{{SourcePort: 1, EndpointPort: 2, EndpointHost: "h"}}
	h.Sealed = sshdeck.SealedCredentials{Password: []byte{1}, Key: []byte{2}, KeyPassword: []byte{3}}
	if err := s.CreateHost(ctx, h); err != nil {
		t.Fatal(err)
	}
	emptied := &sshdeck.Host{Owner: "alice", ID: 1, Version: 2, CreatedAt: h.CreatedAt, UpdatedAt: time.Now()}
	if err := s.UpdateHost(ctx, emptied); err != nil {
		t.Fatal(err)
	}
	h, err := s.Host(ctx, "alice", 1)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != 2 || len(h.Tags) != 0 || len(h.TunnelConnections) != 0 || h.Sealed.Password != nil || h.Sealed.Key != nil || h.Sealed.KeyPassword != nil {
		t.Fatalf("host after an update emptying it: %+v", h)
	}
}
