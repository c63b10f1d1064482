package hosts

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// countingStore is a real store that counts the host methods an update
// calls.
type countingStore struct {
	*embedded.Store
	calls map[string]int
}

func (s *countingStore) Host(ctx context.Context, owner string, id int64) (*sshdeck.Host, error) {
	s.calls["Host"]++
	return s.Store.Host(ctx, owner, id)
}

func (s *countingStore) UpdateHost(ctx context.Context, h *sshdeck.Host) error {
	s.calls["UpdateHost"]++
	return s.Store.UpdateHost(ctx, h)
}

// newCountingService returns a service over a fresh store that counts its
// calls, with a fixed clock and its own key.
func newCountingService(t *testing.T) (*Service, *countingStore) {
	t.Helper()
	store, sealer := openStore(t)
	cs := &countingStore{Store: store, calls: map[string]int{}}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return NewService(cs, nil, sealer, func() time.Time { return now }), cs
}

// input is a host body as JSON, with the required fields.
func input(t *testing.T, fields string) *Input {
	t.Helper()
	in := &Input{}
	if err := json.Unmarshal([]byte(fields), in); err != nil {
		t.Fatalf("%s: %v", fields, err)
	}
	in.IP, in.Username = "10.0.0.5", "deploy"
	return in
}

// TestUpdateIfMatch: an update reads the host, checks If-Match against the
// version read and writes conditioned on it: two calls, one when the host
// is absent or If-Match cannot match.
func TestUpdateIfMatch(t *testing.T) {
	ctx := context.Background()
	svc, store := newCountingService(t)
	if _, err := svc.Create(ctx, "usr_a", input(t, `{"authType":"password","password":"pw"}`)); err != nil {
		t.Fatal(err)
	}
	body := `{"authType":"password","password":"new"}`
	read, readWrite := map[string]int{"Host": 1}, map[string]int{"Host": 1, "UpdateHost": 1}
	for _, tt := range []struct {
		name    string
		id      int64
		ifMatch *Precondition
		code    sshdeck.Code // "" for success
		version int64
		calls   map[string]int
	}{
		{"stale", 1, &Precondition{Versions: []int64{7}}, sshdeck.PreconditionFailed, 0, read},
		{"current", 1, &Precondition{Versions: []int64{1}}, "", 2, readWrite},
		{"any", 1, &Precondition{Any: true}, "", 3, readWrite},
		{"one of several", 1, &Precondition{Versions: []int64{9, 3}}, "", 4, readWrite},
		{"none can match", 1, &Precondition{}, sshdeck.PreconditionFailed, 0, read},
		{"absent host", 2, &Precondition{Versions: []int64{1}}, sshdeck.NotFound, 0, read},
		{"absent host, any", 2, &Precondition{Any: true}, sshdeck.NotFound, 0, read},
		{"no If-Match", 1, nil, "", 5, readWrite},
	} {
		clear(store.calls)
		r, err := svc.Update(ctx, "usr_a", tt.id, input(t, body), tt.ifMatch)
		switch {
		case sshdeck.ErrorCode(err) != tt.code && (tt.code != "" || err != nil):
			t.Errorf("%s: Update = %v, want code %q", tt.name, err, tt.code)
		case err == nil && (r.Version != tt.version || r.Password != "new"):
			t.Errorf("%s: Update = version %d, password %q; want version %d, new", tt.name, r.Version, r.Password, tt.version)
		}
		if !maps.Equal(store.calls, tt.calls) {
			t.Errorf("%s: calls %v, want %v", tt.name, store.calls, tt.calls)
		}
	}
}

// TestUpdateOtherOwner: another owner's host is NotFound, and stays as it
// was.
func TestUpdateOtherOwner(t *testing.T) {
	ctx := context.Background()
	svc, _ := newCountingService(t)
	if _, err := svc.Create(ctx, "usr_a", input(t, `{"authType":"password","password":"pw"}`)); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Update(ctx, "usr_b", 1, input(t, `{"authType":"password","password":"stolen"}`), nil)
	if sshdeck.ErrorCode(err) != sshdeck.NotFound {
		t.Fatalf("Update of another owner's host = %v", err)
	}
	if r, err := svc.Get(ctx, "usr_a", 1); err != nil || r.Password != "pw" || r.Version != 1 {
		t.Fatalf("host after another owner's update: %+v, %v", r, err)
	}
}
