package hosts

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// pausingStore is a real store whose Tunnels call, once armed, waits
// until released: it holds one save's tunnel sync between its item
// writes and its deletions while another save runs whole.
type pausingStore struct {
	*embedded.Store
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	release chan struct{}
}

func (s *pausingStore) Tunnels(ctx context.Context, owner string) ([]*sshdeck.Tunnel, error) {
	s.mu.Lock()
	armed := s.armed
	s.armed = false
	s.mu.Unlock()
	if armed {
		close(s.reached)
		<-s.release
	}
	return s.Store.Tunnels(ctx, owner)
}

// TestConcurrentSavesKeepTunnels: two saves of one host at once, the
// first dropping two of its three tunnelConnections and the second
// keeping all three, the second committed last. Whatever order their
// tunnel writes run in, the host's tunnels are its stored items at the
// end: the first save's sync, running after the second's, does not delete
// the tunnels that the host, as stored, has again.
func TestConcurrentSavesKeepTunnels(t *testing.T) {
	ctx := context.Background()
	db, sealer := openStore(t)
	store := &pausingStore{Store: db, reached: make(chan struct{}), release: make(chan struct{})}
	svc := NewService(store, store, sealer, func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) })
	body := func(items int) *Input {
		in := &Input{}
		tcs := `[{"sourcePort":3000,"endpointPort":8000,"endpointHost":"web"},{"sourcePort":3001,"endpointPort":8001,"endpointHost":"web"},{"sourcePort":3002,"endpointPort":8002,"endpointHost":"web"}]`
		var list []TunnelInput
		if err := json.Unmarshal([]byte(tcs), &list); err != nil {
			t.Fatal(err)
		}
		in.TunnelConnections = list[:items]
		in.Name, in.IP, in.Username = "web", "10.0.0.5", "deploy"
		return in
	}
	rec, err := svc.Create(ctx, "usr_a", body(3))
	if err != nil {
		t.Fatal(err)
	}
	id := rec.ID
	names := func() []string {
		ts, err := db.Tunnels(ctx, "usr_a")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range ts {
			out = append(out, x.Name)
		}
		return out
	}
	want := []string{sshdeck.HostTunnelName(id, 0), sshdeck.HostTunnelName(id, 1), sshdeck.HostTunnelName(id, 2)}
	if got := names(); !slices.Equal(got, want) {
		t.Fatalf("after the create: tunnels %q, want %q", got, want)
	}

	// Save 1 (one item) commits and stops before its deletions.
	store.mu.Lock()
	store.armed = true
	store.mu.Unlock()
	first := make(chan error, 1)
	go func() {
		_, err := svc.Update(ctx, "usr_a", id, body(1), nil)
		first <- err
	}()
	<-store.reached
	// Save 2 (three items) commits after it and writes its tunnels.
	if _, err := svc.Update(ctx, "usr_a", id, body(3), nil); err != nil {
		t.Fatal(err)
	}
	close(store.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	h, err := db.Host(ctx, "usr_a", id)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.TunnelConnections) != 3 {
		t.Fatalf("the host, saved last with 3 items, has %d", len(h.TunnelConnections))
	}
	if got := names(); !slices.Equal(got, want) {
		t.Fatalf("the host has 3 tunnelConnections but its tunnels are %q, want %q", got, want)
	}
}

// pausingReads is a real store whose Tunnel call, once armed, waits until
// released: it holds a save's tunnel sync just before it writes an item,
// after the host's commit.
type pausingReads struct {
	*embedded.Store
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	release chan struct{}
}

func (s *pausingReads) Tunnel(ctx context.Context, owner, name string) (*sshdeck.Tunnel, error) {
	s.mu.Lock()
	armed := s.armed
	s.armed = false
	s.mu.Unlock()
	if armed {
		close(s.reached)
		<-s.release
	}
	return s.Store.Tunnel(ctx, owner, name)
}

// TestSaveRacingDeleteLeavesNoTunnels: a save of a host commits, and its
// item's tunnel is written only after a delete of the host has committed
// and deleted the host's tunnels. The save's sync reads the host again
// after its writes (settle), finds it gone, and deletes what it wrote:
// no tunnel of the deleted host is left, autoStart or not.
func TestSaveRacingDeleteLeavesNoTunnels(t *testing.T) {
	ctx := context.Background()
	db, sealer := openStore(t)
	store := &pausingReads{Store: db, reached: make(chan struct{}), release: make(chan struct{})}
	svc := NewService(store, store, sealer, nil)
	body := func(port int) *Input {
		return &Input{Name: "web", IP: "10.0.0.5", Username: "deploy",
			TunnelConnections: []TunnelInput{{SourcePort: 3000, EndpointPort: port, EndpointHost: "web"}}}
	}
	rec, err := svc.Create(ctx, "usr_a", body(8000))
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.armed = true
	store.mu.Unlock()
	saved := make(chan error, 1)
	go func() {
		_, err := svc.Update(ctx, "usr_a", rec.ID, body(8001), nil)
		saved <- err
	}()
	<-store.reached
	if err := svc.Delete(ctx, "usr_a", rec.ID, nil); err != nil {
		t.Fatal(err)
	}
	close(store.release)
	if err := <-saved; err != nil {
		t.Fatal(err)
	}
	ts, err := db.Tunnels(ctx, "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		t.Errorf("tunnel %q (port %d) left after its host was deleted", x.Name, x.Spec.EndpointPort)
	}
}
