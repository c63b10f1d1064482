package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// benchHost is a host as the API stores one: every setting filled in, a
// tunnel connection, and a sealed password of the size the sealer makes of
// a short one (its header, nonce, ciphertext and tag).
func benchHost(owner string, id int64) *sshdeck.Host {
	at := time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC).Add(time.Duration(id) * time.Minute)
	sealed := make([]byte, 60)
	for i := range sealed {
		sealed[i] = byte(id + int64(i)*7)
	}
	return &sshdeck.Host{
		Owner:   owner,
		ID:      id,
		Version: 1,
		HostConfig: sshdeck.HostConfig{
			Name:              fmt.Sprintf("web-%04d", id),
			IP:                fmt.Sprintf("10.0.%d.%d", id/256, id%256),
			Port:              22,
			Username:          "deploy",
			Folder:            "prod/eu-west-1",
			Tags:              []string{"prod", "web", fmt.Sprintf("rack-%d", id%16)},
			AuthType:          sshdeck.AuthPassword,
			KeyType:           "auto",
			EnableTerminal:    true,
			EnableTunnel:      true,
			EnableFileManager: true,
			DefaultPath:       "/srv/app",
			TunnelConnections: []sshdeck.TunnelConnection{
				{SourcePort: 15432, EndpointPort: 5432, EndpointHost: "127.0.0.1", MaxRetries: 3, RetryInterval: 5, AutoStart: true},
			},
		},
		Sealed:    sshdeck.SealedCredentials{Password: sealed},
		CreatedAt: at,
		UpdatedAt: at.Add(90 * time.Second),
	}
}

// BenchmarkHosts reads an owner's 1000 hosts: all at once, as GET
// /ssh/db/host does, and one at a time. It measures the decoding of the
// stored hosts, which was most of the list's CPU while they were JSON.
func BenchmarkHosts(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	s, err := Open(filepath.Join(b.TempDir(), "sshdeck.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	// Concurrent creates share commits: filling the store takes a few
	// dozen fsyncs rather than a thousand.
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 50 {
		wg.Go(func() {
			for id := int64(w + 1); id <= n; id += 50 {
				if err := s.CreateHost(ctx, benchHost("alice", id), 1000); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	b.Run("Hosts", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hs, err := s.Hosts(ctx, "alice", 0, 0)
			if err != nil || len(hs) != n {
				b.Fatalf("Hosts: %d hosts, %v", len(hs), err)
			}
		}
	})
	b.Run("Host", func(b *testing.B) {
		b.ReportAllocs()
		id := int64(0)
		for b.Loop() {
			id = id%n + 1
			if _, err := s.Host(ctx, "alice", id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkConcurrentWrites is what pays for the group commit (commit.go):
// small writes, each in a write of its own, through Store.commit, through
// bbolt's db.Update (one commit and fsync per write) and through db.Batch
// (which gathers writes for up to MaxBatchDelay, 10 ms by default); by 64
// goroutines at once, and by one alone, which a batch makes wait. ns/op is
// per write, all writers together.
func BenchmarkConcurrentWrites(b *testing.B) {
	commits := []struct {
		name   string
		commit func(s *Store, fn func(*bolt.Tx) error) error
	}{
		{"group", (*Store).commit},
		{"update", func(s *Store, fn func(*bolt.Tx) error) error { return s.db.Update(fn) }},
		{"batch", func(s *Store, fn func(*bolt.Tx) error) error { return s.db.Batch(fn) }},
	}
	for _, writers := range []int{64, 1} {
		for _, c := range commits {
			b.Run(fmt.Sprintf("writers=%d/%s", writers, c.name), func(b *testing.B) {
				s, err := Open(filepath.Join(b.TempDir(), "sshdeck.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				bucket := []byte("bench")
				if err := s.db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
					b.Fatal(err)
				}
				value := bytes.Repeat([]byte{'v'}, 100)
				var next atomic.Uint64
				write := func() error {
					key := binary.BigEndian.AppendUint64(nil, next.Add(1))
					return c.commit(s, func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key, value) })
				}
				b.ReportAllocs()
				if writers == 1 {
					for b.Loop() {
						if err := write(); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.SetParallelism(max(1, writers/runtime.GOMAXPROCS(0)))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := write(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
