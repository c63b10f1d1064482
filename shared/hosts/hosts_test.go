package hosts

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/embedded"
)

// racingStore is a real store where another writer changes the host between
// every read and write of an update, as a busy client would.
type racingStore struct {
	*embedded.Store
	races int
}

func (s *racingStore) Host(ctx context.Context, owner string, id int64) (*sshdeck.Host, error) {
	h, err := s.Store.Host(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	other := *h
	other.Version++
	s.races++
	if err := s.Store.UpdateHost(ctx, &other); err != nil {
		return nil, err
	}
	return h, nil
}

func newService(t *testing.T) (*Service, *embedded.Store) {
	t.Helper()
	store, sealer := openStore(t)
	return NewService(store, store, sealer, nil), store
}

// openStore opens a fresh embedded store, closed when the test ends, and
// a sealer of a key of its own.
func openStore(t *testing.T) (*embedded.Store, *secret.Sealer) {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	keyring, err := secret.NewLocalKeyring(make([]byte, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return store, secret.NewSealer(keyring)
}

func TestUpdateGivesUpAfterLosingEveryRace(t *testing.T) {
	svc, store := newService(t)
	ctx := context.Background()
	pw := "pw"
	if _, err := svc.Create(ctx, "usr_a", &Input{IP: "h", Username: "u", Password: &pw}); err != nil {
		t.Fatal(err)
	}
	racing := &racingStore{Store: store}
	svc.store = racing
	_, err := svc.Update(ctx, "usr_a", 1, &Input{IP: "h2", Username: "u"}, nil)
	if sshdeck.ErrorCode(err) != sshdeck.Conflict || racing.races != maxUpdateAttempts {
		t.Fatalf("Update = %v after %d races, want conflict after %d", err, racing.races, maxUpdateAttempts)
	}
	_, err = svc.Update(ctx, "usr_a", 1, &Input{IP: "h2", Username: "u"}, &Precondition{Any: true})
	if sshdeck.ErrorCode(err) != sshdeck.PreconditionFailed {
		t.Fatalf("conditional Update that lost a race = %v, want precondition_failed", err)
	}
	svc.store = store
	if r, err := svc.Get(ctx, "usr_a", 1); err != nil || r.IP != "h" || r.Password != "pw" {
		t.Fatalf("host after lost races: %+v, %v", r, err)
	}
}

func TestUpdateRetriesOnTheNewerRecord(t *testing.T) {
	svc, store := newService(t)
	ctx := context.Background()
	pw := "pw"
	svc.Create(ctx, "usr_a", &Input{IP: "h", Username: "u", Password: &pw})
	racing := &racingStore{Store: store}
	// Lose once, then win: the retry must start from the record the other
	// writer left, not from the stale copy.
	svc.store = &onceRacing{racingStore: racing}
	r, err := svc.Update(ctx, "usr_a", 1, &Input{IP: "h2", Username: "u"}, nil)
	if err != nil || r.Version != 3 || r.Password != "pw" {
		t.Fatalf("Update = %+v, %v; want version 3 with the password kept", r, err)
	}
}

type onceRacing struct {
	*racingStore
	done bool
}

func (s *onceRacing) Host(ctx context.Context, owner string, id int64) (*sshdeck.Host, error) {
	if s.done {
		return s.Store.Host(ctx, owner, id)
	}
	s.done = true
	return s.racingStore.Host(ctx, owner, id)
}

// TestRecordShowsNilListsAsEmpty: a store may return empty lists as nil (the
// DynamoDB store does); the record, and so the API, shows [] all the same.
func TestRecordShowsNilListsAsEmpty(t *testing.T) {
	svc, store := newService(t)
	ctx := context.Background()
	if err := store.CreateHost(ctx, &sshdeck.Host{Owner: "usr_a", ID: 1, Version: 1, HostConfig: sshdeck.HostConfig{IP: "h", Username: "u"}}, 1000); err != nil {
		t.Fatal(err)
	}
	for _, get := range []func() (*Record, error){
		func() (*Record, error) { return svc.Get(ctx, "usr_a", 1) },
		func() (*Record, error) { l, err := svc.Page(ctx, "usr_a", 0, 0); return l[0], err },
	} {
		r, err := get()
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(r); !strings.Contains(string(b), `"tags":[]`) || !strings.Contains(string(b), `"tunnelConnections":[]`) {
			t.Fatalf("record %s", b)
		}
	}
}
