package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// NextHostID allocates the next host id of the owner from the sequence of the
// owner's bucket, which only grows and is stored with the bucket.
func (s *Store) NextHostID(ctx context.Context, owner string) (int64, error) {
	if owner == "" {
		return 0, fmt.Errorf("embedded: next host id: owner is required")
	}
	var id uint64
	err := s.update(ctx, "next host id", func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketHosts).CreateBucketIfNotExists([]byte(owner))
		if err != nil {
			return err
		}
		id, err = b.NextSequence()
		return err
	})
	if err != nil {
		return 0, err
	}
	return int64(id), nil
}

// NextHostIDs allocates n consecutive ids from the owner's sequence.
func (s *Store) NextHostIDs(ctx context.Context, owner string, n int) (int64, error) {
	if owner == "" {
		return 0, fmt.Errorf("embedded: next host ids: owner is required")
	}
	if n < 1 || n > sshdeck.MaxHostBatch {
		return 0, fmt.Errorf("embedded: next host ids: %d ids, not 1 to %d", n, sshdeck.MaxHostBatch)
	}
	var first uint64
	err := s.update(ctx, "next host ids", func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketHosts).CreateBucketIfNotExists([]byte(owner))
		if err != nil {
			return err
		}
		first = b.Sequence() + 1
		return b.SetSequence(b.Sequence() + uint64(n))
	})
	if err != nil {
		return 0, err
	}
	return int64(first), nil
}

// CreateHost stores h, a new host of version 1; Conflict when its id
// exists, LimitExceeded when the owner has max hosts. The count is made in
// the transaction of the write (hostCount), so concurrent creates, which
// bbolt serializes, never pass max.
func (s *Store) CreateHost(ctx context.Context, h *sshdeck.Host, max int) error {
	if err := h.CheckNew(); err != nil {
		return fmt.Errorf("embedded: create host: %w", err)
	}
	if max < 1 {
		return fmt.Errorf("embedded: create host: limit %d is not positive", max)
	}
	return s.update(ctx, "create host", func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketHosts).CreateBucketIfNotExists([]byte(h.Owner))
		if err != nil {
			return err
		}
		key := hostKey(h.ID)
		if b.Get(key) != nil {
			return sshdeck.Errorf(sshdeck.Conflict, "host %d exists", h.ID)
		}
		if hostCount(b, max) >= max {
			return sshdeck.HostsExceeded(max)
		}
		// An id that did not come from NextHostID must not be handed out later.
		if uint64(h.ID) > b.Sequence() {
			if err := b.SetSequence(uint64(h.ID)); err != nil {
				return err
			}
		}
		return putHost(b, h)
	})
}

// CreateHosts stores hosts, all of one owner, in one transaction: each id
// must be free (Conflict naming the first that is not) and the owner's
// hosts and these at most max (LimitExceeded), or nothing is stored.
func (s *Store) CreateHosts(ctx context.Context, hosts []*sshdeck.Host, limit int) error {
	if err := sshdeck.CheckBatch(hosts); err != nil {
		return fmt.Errorf("embedded: create hosts: %w", err)
	}
	if limit < 1 {
		return fmt.Errorf("embedded: create hosts: limit %d is not positive", limit)
	}
	return s.update(ctx, "create hosts", func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketHosts).CreateBucketIfNotExists([]byte(hosts[0].Owner))
		if err != nil {
			return err
		}
		top := uint64(0)
		for _, h := range hosts {
			if b.Get(hostKey(h.ID)) != nil {
				return sshdeck.Errorf(sshdeck.Conflict, "host %d exists", h.ID)
			}
			top = max(top, uint64(h.ID))
		}
		// The sequence counts the batch's own ids, handed out but not
		// stored: it bounds the count only when it leaves room anyway.
		if room := limit - len(hosts); b.Sequence() > uint64(max(room, 0)) && countHostKeys(b, limit) > room {
			return sshdeck.HostsExceeded(limit)
		}
		if top > b.Sequence() {
			if err := b.SetSequence(top); err != nil {
				return err
			}
		}
		// An error returned rolls the whole transaction back: no host of
		// the batch is stored without the others.
		for _, h := range hosts {
			if err := putHost(b, h); err != nil {
				return err
			}
		}
		return nil
	})
}

// Host returns the owner's host; NotFound when absent.
func (s *Store) Host(ctx context.Context, owner string, id int64) (*sshdeck.Host, error) {
	var h *sshdeck.Host
	err := s.view(ctx, "host", func(tx *bolt.Tx) error {
		var err error
		h, err = loadHost(ownerBucket(tx, owner), id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Hosts returns the owner's hosts with an id above after, ordered by id
// (the order of their keys), at most limit of them (0: all).
func (s *Store) Hosts(ctx context.Context, owner string, after int64, limit int) ([]*sshdeck.Host, error) {
	hosts := []*sshdeck.Host{}
	err := s.view(ctx, "hosts", func(tx *bolt.Tx) error {
		b := ownerBucket(tx, owner)
		if b == nil {
			return nil
		}
		// A page's hosts in one allocation, when its size is known.
		var slab []sshdeck.Host
		if limit > 0 {
			slab = make([]sshdeck.Host, 0, limit)
		}
		c := b.Cursor()
		for k, v := c.Seek(hostKey(max(after, 0) + 1)); k != nil && (limit <= 0 || len(hosts) < limit); k, v = c.Next() {
			var h *sshdeck.Host
			if limit > 0 {
				slab = slab[:len(slab)+1]
				h = &slab[len(slab)-1]
			} else {
				h = new(sshdeck.Host)
			}
			if err := decodeHost(k, v, h); err != nil {
				return err
			}
			hosts = append(hosts, h)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return hosts, nil
}

// UpdateHost replaces the stored host with h if the stored version is
// h.Version-1; Conflict when it is not, NotFound when absent.
func (s *Store) UpdateHost(ctx context.Context, h *sshdeck.Host) error {
	return s.update(ctx, "update host", func(tx *bolt.Tx) error {
		b := ownerBucket(tx, h.Owner)
		stored, err := loadHost(b, h.ID)
		if err != nil {
			return err
		}
		if stored.Version != h.Version-1 {
			return sshdeck.Errorf(sshdeck.Conflict, "host %d changed since version %d", h.ID, h.Version-1)
		}
		return putHost(b, h)
	})
}

// DeleteHost removes the owner's host and its file-manager entries, in one
// transaction; with version > 0 only at that version.
func (s *Store) DeleteHost(ctx context.Context, owner string, id int64, version int64) error {
	return s.update(ctx, "delete host", func(tx *bolt.Tx) error {
		b := ownerBucket(tx, owner)
		stored, err := loadHost(b, id)
		if err != nil {
			return err
		}
		if version > 0 && stored.Version != version {
			return sshdeck.Errorf(sshdeck.Conflict, "host %d changed since version %d", id, version)
		}
		if err := deleteFiles(tx, owner, id); err != nil {
			return err
		}
		return b.Delete(hostKey(id))
	})
}

// hostCount counts the hosts of an owner's bucket, up to max. Each host has
// its own id, none past the bucket's sequence (CreateHost raises it), so an
// owner whose sequence is below max has fewer than max hosts: no count is
// needed, which is the case of most owners and of every create before the
// max-th. Past it, a cursor counts the keys (no value is decoded; a host
// key is 8 bytes, as no other key of the bucket is).
func hostCount(b *bolt.Bucket, max int) int {
	if b.Sequence() < uint64(max) {
		return int(b.Sequence())
	}
	return countHostKeys(b, max)
}

// countHostKeys counts the hosts of an owner's bucket with a cursor, up to max.
func countHostKeys(b *bolt.Bucket, max int) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil && n < max; k, _ = c.Next() {
		n++
	}
	return n
}

// ownerBucket returns nil for an owner who never had a host id.
func ownerBucket(tx *bolt.Tx, owner string) *bolt.Bucket {
	if owner == "" {
		return nil
	}
	return tx.Bucket(bucketHosts).Bucket([]byte(owner))
}

func loadHost(b *bolt.Bucket, id int64) (*sshdeck.Host, error) {
	if b != nil && id > 0 {
		key := hostKey(id)
		if v := b.Get(key); v != nil {
			h := new(sshdeck.Host)
			if err := decodeHost(key, v, h); err != nil {
				return nil, err
			}
			return h, nil
		}
	}
	return nil, sshdeck.Errorf(sshdeck.NotFound, "host %d not found", id)
}

func putHost(b *bolt.Bucket, h *sshdeck.Host) error {
	return b.Put(hostKey(h.ID), hostRecordOf(h).appendTo(nil))
}

// decodeHost decodes the value v at key k of an owner's bucket into h.
func decodeHost(k, v []byte, h *sshdeck.Host) error {
	var r hostRecord
	if err := r.decode(v); err != nil {
		return fmt.Errorf("host record at key %x: %w", k, err)
	}
	if len(k) != 8 || binary.BigEndian.Uint64(k) != uint64(r.id) {
		return fmt.Errorf("host record at key %x holds another host's id", k)
	}
	r.toHost(h)
	return nil
}

func hostKey(id int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(id))
}

// hostFormat is the format byte that starts every host record written:
// the fields of hostRecord in the order of appendTo. A change of the
// fields needs a new format byte, which decode must go on reading or a
// migration (see prepare in store.go) must rewrite.
//
// Format 1 (schemas 4 and 5) lacked jumpHosts; decode reads it as a host
// without jump hosts, and its next write makes it format 3. Format 2
// (schema 6) lacked identityFile (a string after jumpHosts); decode reads
// it as a host without one. No migration rewrites them: each differs from
// the next by a field that the older format has empty.
const (
	hostFormat1 = 1
	hostFormat2 = 2
	hostFormat  = 3
)

// hostRecord is a host as stored: the store's own fields, whatever
// sshdeck.Host and the API call theirs. The owner and the id are also the
// record's bucket and key; the record holds them too so that it stands on
// its own, and a decode checks the id against the key.
type hostRecord struct {
	owner                              string
	id, version                        int64
	name, ip                           string
	port                               int
	username, folder                   string
	tags                               []string
	pin, terminal, tunnel, fileManager bool
	authType, keyType, defaultPath     string
	tunnels                            []hostTunnelRecord
	jumpHosts                          []int64 // host ids, first hop first
	identityFile                       string
	password, key, keyPassword         []byte // sealed, nil when empty
	createdAt, updatedAt               time.Time
}

// hostTunnelRecord is a tunnel a host offers (sshdeck.TunnelConnection).
type hostTunnelRecord struct {
	sourcePort, endpointPort int
	endpointHost             string
	maxRetries               int
	retryInterval            int // seconds
	autoStart                bool
}

// The bits of the flags byte; the others are zero.
const (
	hostPin = 1 << iota
	hostTerminal
	hostTunnel
	hostFileManager
)

func hostRecordOf(h *sshdeck.Host) *hostRecord {
	r := &hostRecord{
		owner:        h.Owner,
		id:           h.ID,
		version:      h.Version,
		name:         h.Name,
		ip:           h.IP,
		port:         h.Port,
		username:     h.Username,
		folder:       h.Folder,
		tags:         h.Tags,
		pin:          h.Pin,
		terminal:     h.EnableTerminal,
		tunnel:       h.EnableTunnel,
		fileManager:  h.EnableFileManager,
		authType:     string(h.AuthType),
		keyType:      h.KeyType,
		defaultPath:  h.DefaultPath,
		identityFile: h.IdentityFile,
		password:     h.Sealed.Password,
		key:          h.Sealed.Key,
		keyPassword:  h.Sealed.KeyPassword,
		createdAt:    h.CreatedAt,
		updatedAt:    h.UpdatedAt,
	}
	for _, j := range h.JumpHosts {
		r.jumpHosts = append(r.jumpHosts, j.HostID)
	}
	for _, t := range h.TunnelConnections {
		r.tunnels = append(r.tunnels, hostTunnelRecord{
			sourcePort:    t.SourcePort,
			endpointPort:  t.EndpointPort,
			endpointHost:  t.EndpointHost,
			maxRetries:    t.MaxRetries,
			retryInterval: t.RetryInterval,
			autoStart:     t.AutoStart,
		})
	}
	return r
}

// toHost sets h to the domain host of r. It takes over r's slices: r is
// not used after it.
func (r *hostRecord) toHost(h *sshdeck.Host) {
	*h = sshdeck.Host{
		Owner:   r.owner,
		ID:      r.id,
		Version: r.version,
		HostConfig: sshdeck.HostConfig{
			Name:              r.name,
			IP:                r.ip,
			Port:              r.port,
			Username:          r.username,
			Folder:            r.folder,
			Tags:              r.tags,
			Pin:               r.pin,
			AuthType:          sshdeck.AuthType(r.authType),
			KeyType:           r.keyType,
			EnableTerminal:    r.terminal,
			EnableTunnel:      r.tunnel,
			EnableFileManager: r.fileManager,
			DefaultPath:       r.defaultPath,
			IdentityFile:      r.identityFile,
		},
		Sealed:    sshdeck.SealedCredentials{Password: r.password, Key: r.key, KeyPassword: r.keyPassword},
		CreatedAt: r.createdAt,
		UpdatedAt: r.updatedAt,
	}
	if len(r.tunnels) > 0 {
		h.TunnelConnections = make([]sshdeck.TunnelConnection, len(r.tunnels))
		for i, t := range r.tunnels {
			h.TunnelConnections[i] = sshdeck.TunnelConnection{
				SourcePort:    t.sourcePort,
				EndpointPort:  t.endpointPort,
				EndpointHost:  t.endpointHost,
				MaxRetries:    t.maxRetries,
				RetryInterval: t.retryInterval,
				AutoStart:     t.autoStart,
			}
		}
	}
	if len(r.jumpHosts) > 0 {
		h.JumpHosts = make([]sshdeck.JumpHost, len(r.jumpHosts))
		for i, id := range r.jumpHosts {
			h.JumpHosts[i] = sshdeck.JumpHost{HostID: id}
		}
	}
}

// appendTo appends the record in format hostFormat to b:
//
//	format byte            hostFormat
//	owner                  string
//	id, version            int
//	name, ip               string
//	port                   int
//	username, folder       string
//	tags                   count, then each a string
//	flags                  byte: hostPin | hostTerminal | hostTunnel | hostFileManager
//	authType, keyType,
//	defaultPath            string
//	tunnels                count, then each: sourcePort, endpointPort (int),
//	                       endpointHost (string), maxRetries,
//	                       retryInterval (int), autoStart (bool)
//	jumpHosts              count, then each a host id (int); absent from
//	                       format 1, which decode reads as none
//	identityFile           string; absent from formats 1 and 2, which
//	                       decode reads as none
//	password, key,
//	keyPassword            bytes
//	createdAt, updatedAt   time
func (r *hostRecord) appendTo(b []byte) []byte {
	b = append(b, hostFormat)
	b = appendString(b, r.owner)
	b = appendInt(b, r.id)
	b = appendInt(b, r.version)
	b = appendString(b, r.name)
	b = appendString(b, r.ip)
	b = appendInt(b, int64(r.port))
	b = appendString(b, r.username)
	b = appendString(b, r.folder)
	b = appendCount(b, len(r.tags))
	for _, t := range r.tags {
		b = appendString(b, t)
	}
	b = append(b, bitIf(r.pin, hostPin)|bitIf(r.terminal, hostTerminal)|bitIf(r.tunnel, hostTunnel)|bitIf(r.fileManager, hostFileManager))
	b = appendString(b, r.authType)
	b = appendString(b, r.keyType)
	b = appendString(b, r.defaultPath)
	b = appendCount(b, len(r.tunnels))
	for _, t := range r.tunnels {
		b = appendInt(b, int64(t.sourcePort))
		b = appendInt(b, int64(t.endpointPort))
		b = appendString(b, t.endpointHost)
		b = appendInt(b, int64(t.maxRetries))
		b = appendInt(b, int64(t.retryInterval))
		b = appendBool(b, t.autoStart)
	}
	b = appendCount(b, len(r.jumpHosts))
	for _, id := range r.jumpHosts {
		b = appendInt(b, id)
	}
	b = appendString(b, r.identityFile)
	b = appendBytes(b, r.password)
	b = appendBytes(b, r.key)
	b = appendBytes(b, r.keyPassword)
	b = appendTime(b, r.createdAt)
	return appendTime(b, r.updatedAt)
}

func bitIf(set bool, bit byte) byte {
	if set {
		return bit
	}
	return 0
}

// decode reads a record that appendTo wrote, in format 3, 2 or 1; an
// error for anything else. Empty lists come back nil.
func (r *hostRecord) decode(data []byte) error {
	d := newDecoder(data)
	format := d.byte()
	if d.err == nil && format != hostFormat && format != hostFormat2 && format != hostFormat1 {
		return fmt.Errorf("unknown host format %d", format)
	}
	r.owner = d.string()
	r.id = d.int64()
	r.version = d.int64()
	r.name = d.string()
	r.ip = d.string()
	r.port = d.int()
	r.username = d.string()
	r.folder = d.string()
	if n := d.count(1); n > 0 {
		r.tags = make([]string, n)
		for i := range r.tags {
			r.tags[i] = d.string()
		}
	}
	flags := d.byte()
	if flags&^(hostPin|hostTerminal|hostTunnel|hostFileManager) != 0 {
		d.fail("unknown flags")
	}
	r.pin, r.terminal, r.tunnel, r.fileManager = flags&hostPin != 0, flags&hostTerminal != 0, flags&hostTunnel != 0, flags&hostFileManager != 0
	r.authType = d.string()
	r.keyType = d.string()
	r.defaultPath = d.string()
	// A tunnel takes 6 bytes at least: 5 varints or counts and a bool.
	if n := d.count(6); n > 0 {
		r.tunnels = make([]hostTunnelRecord, n)
		for i := range r.tunnels {
			t := &r.tunnels[i]
			t.sourcePort = d.int()
			t.endpointPort = d.int()
			t.endpointHost = d.string()
			t.maxRetries = d.int()
			t.retryInterval = d.int()
			t.autoStart = d.bool()
		}
	}
	if format != hostFormat1 {
		// A host id takes a byte at least.
		if n := d.count(1); n > 0 {
			r.jumpHosts = make([]int64, n)
			for i := range r.jumpHosts {
				r.jumpHosts[i] = d.int64()
			}
		}
	}
	if format == hostFormat {
		r.identityFile = d.string()
	}
	r.password = d.bytes()
	r.key = d.bytes()
	r.keyPassword = d.bytes()
	r.createdAt = d.time()
	r.updatedAt = d.time()
	return d.end()
}
