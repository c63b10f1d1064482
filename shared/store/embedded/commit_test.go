package embedded

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func openStore(t *testing.T) *Store {
	t.Helper()
	s, _ := openTemp(t)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestGroupCommitBatch: writes queued while another commits go in one
// batch, in order; a failed or panicking write leaves nothing behind and
// fails alone; the others commit, and each sees those before it.
func TestGroupCommitBatch(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	put := func(key string) func(*bolt.Tx) error {
		return func(tx *bolt.Tx) error { return tx.Bucket(bucketCache).Put([]byte(key), []byte("v")) }
	}
	boom := errors.New("boom")
	writes := []func(*bolt.Tx) error{
		put("k0"),
		func(tx *bolt.Tx) error { put("k1")(tx); return boom },
		func(tx *bolt.Tx) error { put("k2")(tx); var m map[string]int; m["x"] = 1; return nil },
		func(tx *bolt.Tx) error {
			if tx.Bucket(bucketCache).Get([]byte("k0")) == nil {
				return errors.New("k0 not seen")
			}
			return put("k3")(tx)
		},
		put("k4"),
	}
	// Hold the commit so that every write queues, then let them go.
	s.group.committing.Lock()
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, fn := range writes {
		wg.Go(func() { errs[i] = s.update(ctx, fmt.Sprint("write ", i), fn) })
		// Queuing is in process and immediate; a minute fails only a
		// write that never queues, however busy the machine.
		for deadline := time.Now().Add(time.Minute); ; {
			s.group.mu.Lock()
			n := len(s.group.pending)
			s.group.mu.Unlock()
			if n == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("write %d never queued", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	s.group.committing.Unlock()
	wg.Wait()
	if errs[0] != nil || !errors.Is(errs[1], boom) || errs[2] == nil || !strings.Contains(errs[2].Error(), "panic") || errs[3] != nil || errs[4] != nil {
		t.Fatalf("results %v", errs)
	}
	s.db.View(func(tx *bolt.Tx) error {
		for key, want := range map[string]bool{"k0": true, "k1": false, "k2": false, "k3": true, "k4": true} {
			if got := tx.Bucket(bucketCache).Get([]byte(key)) != nil; got != want {
				t.Errorf("%s stored %t, want %t", key, got, want)
			}
		}
		return nil
	})
}

// TestGroupCommitConcurrent: many goroutines creating hosts, a third of
// them on ids others create too: each id is created once, every other
// attempt is a conflict, every acknowledged host is there.
func TestGroupCommitConcurrent(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := int64(i + 1)
			if i%3 == 2 {
				id = int64(i) // the id of the goroutine before
			}
			errs[i] = s.CreateHost(ctx, &sshdeck.Host{Owner: "alice", ID: id, Version: 1, HostConfig: sshdeck.HostConfig{IP: "h", Username: "u"}}, 1000)
		})
	}
	wg.Wait()
	created := map[int64]bool{}
	for i, err := range errs {
		id := int64(i + 1)
		if i%3 == 2 {
			id = int64(i)
		}
		switch {
		case err == nil:
			if created[id] {
				t.Fatalf("host %d created twice", id)
			}
			created[id] = true
		case sshdeck.ErrorCode(err) != sshdeck.Conflict:
			t.Fatalf("create %d: %v", id, err)
		}
	}
	hosts, err := s.Hosts(ctx, "alice", 0, 0)
	if err != nil || len(hosts) != len(created) {
		t.Fatalf("%d hosts stored, %d created (%v)", len(hosts), len(created), err)
	}
	for _, h := range hosts {
		if !created[h.ID] {
			t.Fatalf("host %d stored but not acknowledged", h.ID)
		}
	}
}
