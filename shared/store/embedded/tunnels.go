package embedded

import (
	"context"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// PutTunnel stores t over the tunnel at the generation before t's (none for
// generation 1), with the stored lease rather than t's: the lease is the
// replicas' to write. Conflict otherwise.
func (s *Store) PutTunnel(ctx context.Context, t *sshdeck.Tunnel) error {
	return s.putTunnel(ctx, "put tunnel", t, 0)
}

// CreateTunnel stores t, of generation 1, when the owner has no tunnel of
// its name and fewer than limit tunnels: the count and the put are one
// transaction, which bbolt runs one at a time, so that concurrent creates
// cannot pass the limit.
func (s *Store) CreateTunnel(ctx context.Context, t *sshdeck.Tunnel, limit int) error {
	if t.Generation != 1 {
		return errors.New("embedded: create tunnel: generation must be 1")
	}
	return s.putTunnel(ctx, "create tunnel", t, limit)
}

func (s *Store) putTunnel(ctx context.Context, op string, t *sshdeck.Tunnel, limit int) error {
	if t.Owner == "" || t.Name == "" {
		return errors.New("embedded: " + op + ": owner and name are required")
	}
	return s.update(ctx, op, func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketTunnels).CreateBucketIfNotExists([]byte(t.Owner))
		if err != nil {
			return err
		}
		var stored tunnelRecord // generation 0 when absent
		if _, err := getJSON(b, []byte(t.Name), &stored); err != nil {
			return err
		}
		if stored.Generation != t.Generation-1 {
			return tunnelConflict(t.Name, t.Generation)
		}
		if t.Generation == 1 && limit > 0 && countKeys(b) >= limit {
			return sshdeck.TunnelLimit(limit)
		}
		put := tunnelRecordOf(t)
		put.Lease = stored.Lease
		return putJSON(b, []byte(t.Name), put)
	})
}

// Tunnel returns the owner's tunnel; NotFound when absent.
func (s *Store) Tunnel(ctx context.Context, owner, name string) (*sshdeck.Tunnel, error) {
	var t *sshdeck.Tunnel
	err := s.view(ctx, "tunnel", func(tx *bolt.Tx) error {
		var err error
		t, err = loadTunnel(tunnelBucket(tx, owner), name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Tunnels returns the owner's tunnels ordered by name (the order of their
// keys).
func (s *Store) Tunnels(ctx context.Context, owner string) ([]*sshdeck.Tunnel, error) {
	tunnels := []*sshdeck.Tunnel{}
	err := s.view(ctx, "tunnels", func(tx *bolt.Tx) error {
		b := tunnelBucket(tx, owner)
		if b == nil {
			return nil
		}
		return forEachJSON(b, func(r *tunnelRecord) error {
			tunnels = append(tunnels, r.tunnel())
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return tunnels, nil
}

// RunnableTunnels returns every owner's tunnels whose Run is set, ordered by
// owner then name: the owners' buckets in key order, and each one's keys.
// It reads every tunnel, which a local store holds few of.
func (s *Store) RunnableTunnels(ctx context.Context) ([]*sshdeck.Tunnel, error) {
	tunnels := []*sshdeck.Tunnel{}
	err := s.view(ctx, "runnable tunnels", func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketTunnels)
		return all.ForEach(func(owner, v []byte) error {
			if v != nil {
				return nil // not an owner's bucket
			}
			return forEachJSON(all.Bucket(owner), func(r *tunnelRecord) error {
				if r.Run {
					tunnels = append(tunnels, r.tunnel())
				}
				return nil
			})
		})
	})
	if err != nil {
		return nil, err
	}
	return tunnels, nil
}

// DeleteTunnel deletes the owner's tunnel (lease and sealed credentials
// are in its record) at generation gen, or at any when gen is 0.
func (s *Store) DeleteTunnel(ctx context.Context, owner, name string, gen int64) error {
	return s.update(ctx, "delete tunnel", func(tx *bolt.Tx) error {
		b := tunnelBucket(tx, owner)
		t, err := loadTunnel(b, name)
		if err != nil {
			return err
		}
		if gen != 0 && t.Generation != gen {
			return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q is not at generation %d", name, gen)
		}
		return b.Delete([]byte(name))
	})
}

// StoppedTunnels returns every owner's tunnels that are neither to run nor
// autoStart and were last written before `before`, walking every tunnel as
// RunnableTunnels does.
func (s *Store) StoppedTunnels(ctx context.Context, before time.Time) ([]*sshdeck.Tunnel, error) {
	tunnels := []*sshdeck.Tunnel{}
	err := s.view(ctx, "stopped tunnels", func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketTunnels)
		return all.ForEach(func(owner, v []byte) error {
			if v != nil {
				return nil // not an owner's bucket
			}
			return forEachJSON(all.Bucket(owner), func(r *tunnelRecord) error {
				if !r.Run && !r.Spec.AutoStart && r.UpdatedAt.Before(before) {
					tunnels = append(tunnels, r.tunnel())
				}
				return nil
			})
		})
	})
	if err != nil {
		return nil, err
	}
	return tunnels, nil
}

// countKeys counts a bucket's keys, walking them: an owner's tunnels are
// at most the limit.
func countKeys(b *bolt.Bucket) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// SetTunnelStatus replaces the status of the tunnel at generation gen whose
// lease holder holds, expired or not; Conflict otherwise, NotFound when
// absent.
func (s *Store) SetTunnelStatus(ctx context.Context, owner, name string, gen int64, holder string, st *sshdeck.TunnelStatus) error {
	return s.update(ctx, "set tunnel status", func(tx *bolt.Tx) error {
		b := tunnelBucket(tx, owner)
		t, err := loadTunnel(b, name)
		if err != nil {
			return err
		}
		if t.Generation != gen || !holds(t, holder) {
			return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q is not at generation %d under the lease of %q", name, gen, holder)
		}
		t.Status = *st
		return putJSON(b, []byte(name), tunnelRecordOf(t))
	})
}

// AcquireTunnelLease makes holder the tunnel's lease holder until `until`
// if the lease is free, holder's, or expired at now, and returns the tunnel
// after it.
func (s *Store) AcquireTunnelLease(ctx context.Context, owner, name, holder string, now, until time.Time) (*sshdeck.Tunnel, error) {
	if holder == "" {
		return nil, errors.New("embedded: acquire tunnel lease: holder is required")
	}
	var t *sshdeck.Tunnel
	err := s.update(ctx, "acquire tunnel lease", func(tx *bolt.Tx) error {
		b := tunnelBucket(tx, owner)
		var err error
		if t, err = loadTunnel(b, name); err != nil {
			return err
		}
		if l := t.Lease; l.Holder != "" && l.Holder != holder && now.Before(l.Until) {
			return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q is leased to another holder", name)
		}
		t.Lease = sshdeck.TunnelLease{Holder: holder, Until: until}
		return putJSON(b, []byte(name), tunnelRecordOf(t))
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// ReleaseTunnelLease frees the tunnel's lease if holder holds it, and does
// nothing otherwise.
func (s *Store) ReleaseTunnelLease(ctx context.Context, owner, name, holder string) error {
	return s.update(ctx, "release tunnel lease", func(tx *bolt.Tx) error {
		b := tunnelBucket(tx, owner)
		t, err := loadTunnel(b, name)
		if sshdeck.ErrorCode(err) == sshdeck.NotFound || (err == nil && !holds(t, holder)) {
			return nil
		}
		if err != nil {
			return err
		}
		t.Lease = sshdeck.TunnelLease{}
		return putJSON(b, []byte(name), tunnelRecordOf(t))
	})
}

// KnownHost returns the key the owner's tunnels saw first at addr;
// NotFound when none.
func (s *Store) KnownHost(ctx context.Context, owner, addr string) (*sshdeck.KnownHost, error) {
	var r knownHostRecord
	found := false
	err := s.view(ctx, "known host", func(tx *bolt.Tx) error {
		b := ownerKnownHosts(tx, owner)
		if b == nil || addr == "" {
			return nil
		}
		var err error
		found, err = getJSON(b, []byte(addr), &r)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "no known host key at %s", addr)
	}
	return r.knownHost(), nil
}

// AddKnownHost stores k; Conflict when the owner knows its address: the
// first key stays.
func (s *Store) AddKnownHost(ctx context.Context, k *sshdeck.KnownHost) error {
	if k.Owner == "" || k.Addr == "" {
		return errors.New("embedded: add known host: owner and address are required")
	}
	return s.update(ctx, "add known host", func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketKnownHosts).CreateBucketIfNotExists([]byte(k.Owner))
		if err != nil {
			return err
		}
		if b.Get([]byte(k.Addr)) != nil {
			return sshdeck.Errorf(sshdeck.Conflict, "a host key at %s is known already", k.Addr)
		}
		return putJSON(b, []byte(k.Addr), knownHostRecordOf(k))
	})
}

// holds reports whether holder holds t's lease; no holder holds none.
func holds(t *sshdeck.Tunnel, holder string) bool {
	return holder != "" && t.Lease.Holder == holder
}

// tunnelBucket returns nil for an owner who never had a tunnel.
func tunnelBucket(tx *bolt.Tx, owner string) *bolt.Bucket {
	if owner == "" {
		return nil
	}
	return tx.Bucket(bucketTunnels).Bucket([]byte(owner))
}

// ownerKnownHosts returns nil for an owner who never had a known host.
func ownerKnownHosts(tx *bolt.Tx, owner string) *bolt.Bucket {
	if owner == "" {
		return nil
	}
	return tx.Bucket(bucketKnownHosts).Bucket([]byte(owner))
}

func loadTunnel(b *bolt.Bucket, name string) (*sshdeck.Tunnel, error) {
	var r tunnelRecord
	found := false
	if b != nil && name != "" {
		var err error
		if found, err = getJSON(b, []byte(name), &r); err != nil {
			return nil, err
		}
	}
	if !found {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "tunnel %q not found", name)
	}
	return r.tunnel(), nil
}

func tunnelConflict(name string, gen int64) error {
	if gen == 1 {
		return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q exists", name)
	}
	return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q is not at generation %d", name, gen-1)
}

// tunnelRecord is a tunnel as stored, lease included: JSON under the names
// of schema 3.
type tunnelRecord struct {
	Owner      string             `json:"owner"`
	Name       string             `json:"name"`
	Generation int64              `json:"generation"`
	Spec       tunnelSpecRecord   `json:"spec"`
	Sealed     tunnelSealedRecord `json:"sealed"`
	Run        bool               `json:"run"`
	Status     tunnelStatusRecord `json:"status"`
	Lease      tunnelLeaseRecord  `json:"lease"`
	CreatedAt  time.Time          `json:"createdAt"`
	UpdatedAt  time.Time          `json:"updatedAt"`
}

type tunnelSpecRecord struct {
	HostName string `json:"hostName"`
	// Jumps was added within schema 6, left out when empty: a record
	// without it (every one written before it) is a tunnel whose source is
	// dialled directly, which is what its absence means.
	Jumps        []tunnelHopRecord `json:"jumps,omitempty"`
	Source       tunnelHopRecord   `json:"source"`
	Endpoint     tunnelHopRecord   `json:"endpoint"`
	SourcePort   int               `json:"sourcePort"`
	EndpointPort int               `json:"endpointPort"`
	MaxRetries   int               `json:"maxRetries"`
	// RetryInterval is in nanoseconds, as encoding/json wrote the
	// time.Duration.
	RetryInterval int64 `json:"retryInterval"`
	AutoStart     bool  `json:"autoStart"`
	IsPinned      bool  `json:"isPinned"`
	// The references to stored hosts were added within schema 6, left out
	// when unset: a record without them holds every hop itself, which is
	// what every record before them did.
	SourceHostID   int64  `json:"sourceHostId,omitempty"`
	EndpointHostID int64  `json:"endpointHostId,omitempty"`
	EndpointHost   string `json:"endpointHost,omitempty"`
	HostTunnel     bool   `json:"hostTunnel,omitempty"`
	// Mode was added within schema 6, left out when empty: a record
	// without it is a relay tunnel's, which every record before it was.
	Mode string `json:"mode,omitempty"`
}

type tunnelHopRecord struct {
	IP       string `json:"ip"`
	SSHPort  int    `json:"sshPort"`
	Username string `json:"username"`
	Auth     string `json:"authMethod"`
	KeyType  string `json:"keyType"`
	HostKey  string `json:"hostKey,omitempty"`
	// HostID was added within schema 6, left out when 0: a hop without
	// it was given inline, which is what every hop before it was.
	HostID int64 `json:"hostId,omitempty"`
}

type tunnelSealedRecord struct {
	Jumps    []sealedRecord `json:"jumps,omitempty"` // as Spec.Jumps
	Source   sealedRecord   `json:"source"`
	Endpoint sealedRecord   `json:"endpoint"`
}

// sealedRecord is a hop's sealed credentials, in base64; an empty one is
// left out.
type sealedRecord struct {
	Password    []byte `json:"password,omitempty"`
	Key         []byte `json:"key,omitempty"`
	KeyPassword []byte `json:"keyPassword,omitempty"`
}

type tunnelStatusRecord struct {
	State            string    `json:"state"`
	RetryCount       int       `json:"retryCount"`
	NextRetryAt      time.Time `json:"nextRetryAt,omitzero"`
	Reason           string    `json:"reason"`
	Error            string    `json:"errorType,omitempty"`
	RetryExhausted   bool      `json:"retryExhausted"`
	ManualDisconnect bool      `json:"manualDisconnect"`
	UpdatedAt        time.Time `json:"updatedAt"`
	// The counters were added within schema 6, each left out when zero: a
	// record without them (every one written before them) has counted
	// nothing, which is what their absence means.
	ConnectedAt       time.Time `json:"connectedAt,omitzero"`
	BytesIn           int64     `json:"bytesIn,omitempty"`
	BytesOut          int64     `json:"bytesOut,omitempty"`
	ActiveConnections int       `json:"activeConnections,omitempty"`
	Reconnects        int       `json:"reconnects,omitempty"`
	LastError         string    `json:"lastError,omitempty"`
}

// tunnelLeaseRecord is the lease; a free one is {}.
type tunnelLeaseRecord struct {
	Holder string    `json:"holder,omitempty"`
	Until  time.Time `json:"until,omitzero"`
}

func (*tunnelRecord) jsonRecord() {}

func tunnelRecordOf(t *sshdeck.Tunnel) *tunnelRecord {
	return &tunnelRecord{
		Owner:      t.Owner,
		Name:       t.Name,
		Generation: t.Generation,
		Spec: tunnelSpecRecord{
			HostName:       t.Spec.HostName,
			Jumps:          mapSlice(t.Spec.Jumps, tunnelHopRecordOf),
			Source:         tunnelHopRecordOf(t.Spec.Source),
			Endpoint:       tunnelHopRecordOf(t.Spec.Endpoint),
			SourcePort:     t.Spec.SourcePort,
			EndpointPort:   t.Spec.EndpointPort,
			MaxRetries:     t.Spec.MaxRetries,
			RetryInterval:  int64(t.Spec.RetryInterval),
			AutoStart:      t.Spec.AutoStart,
			IsPinned:       t.Spec.IsPinned,
			SourceHostID:   t.Spec.SourceHostID,
			EndpointHostID: t.Spec.EndpointHostID,
			EndpointHost:   t.Spec.EndpointHost,
			HostTunnel:     t.Spec.HostTunnel,
			Mode:           string(t.Spec.Mode),
		},
		Sealed: tunnelSealedRecord{
			Jumps:    mapSlice(t.Sealed.Jumps, sealedRecordOf),
			Source:   sealedRecordOf(t.Sealed.Source),
			Endpoint: sealedRecordOf(t.Sealed.Endpoint),
		},
		Run:       t.Run,
		Status:    tunnelStatusRecordOf(&t.Status),
		Lease:     tunnelLeaseRecord{Holder: t.Lease.Holder, Until: t.Lease.Until},
		CreatedAt: t.CreatedAt,
		UpdatedAt: t.UpdatedAt,
	}
}

func (r *tunnelRecord) tunnel() *sshdeck.Tunnel {
	return &sshdeck.Tunnel{
		Owner:      r.Owner,
		Name:       r.Name,
		Generation: r.Generation,
		Spec: sshdeck.TunnelSpec{
			HostName:       r.Spec.HostName,
			Jumps:          mapSlice(r.Spec.Jumps, tunnelHopRecord.hop),
			Source:         r.Spec.Source.hop(),
			Endpoint:       r.Spec.Endpoint.hop(),
			SourcePort:     r.Spec.SourcePort,
			EndpointPort:   r.Spec.EndpointPort,
			MaxRetries:     r.Spec.MaxRetries,
			RetryInterval:  time.Duration(r.Spec.RetryInterval),
			AutoStart:      r.Spec.AutoStart,
			IsPinned:       r.Spec.IsPinned,
			SourceHostID:   r.Spec.SourceHostID,
			EndpointHostID: r.Spec.EndpointHostID,
			EndpointHost:   r.Spec.EndpointHost,
			HostTunnel:     r.Spec.HostTunnel,
			Mode:           sshdeck.TunnelMode(r.Spec.Mode),
		},
		Sealed: sshdeck.SealedTunnelCredentials{
			Jumps:    mapSlice(r.Sealed.Jumps, sealedRecord.credentials),
			Source:   r.Sealed.Source.credentials(),
			Endpoint: r.Sealed.Endpoint.credentials(),
		},
		Run:       r.Run,
		Status:    r.Status.status(),
		Lease:     sshdeck.TunnelLease{Holder: r.Lease.Holder, Until: r.Lease.Until},
		CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt,
	}
}

func tunnelStatusRecordOf(st *sshdeck.TunnelStatus) tunnelStatusRecord {
	return tunnelStatusRecord{
		State:             string(st.State),
		RetryCount:        st.RetryCount,
		NextRetryAt:       st.NextRetryAt,
		Reason:            st.Reason,
		Error:             string(st.Error),
		RetryExhausted:    st.RetryExhausted,
		ManualDisconnect:  st.ManualDisconnect,
		UpdatedAt:         st.UpdatedAt,
		ConnectedAt:       st.ConnectedAt,
		BytesIn:           st.BytesIn,
		BytesOut:          st.BytesOut,
		ActiveConnections: st.ActiveConnections,
		Reconnects:        st.Reconnects,
		LastError:         st.LastError,
	}
}

func (r tunnelStatusRecord) status() sshdeck.TunnelStatus {
	return sshdeck.TunnelStatus{
		State:             sshdeck.TunnelState(r.State),
		RetryCount:        r.RetryCount,
		NextRetryAt:       r.NextRetryAt,
		Reason:            r.Reason,
		Error:             sshdeck.TunnelError(r.Error),
		RetryExhausted:    r.RetryExhausted,
		ManualDisconnect:  r.ManualDisconnect,
		UpdatedAt:         r.UpdatedAt,
		ConnectedAt:       r.ConnectedAt,
		BytesIn:           r.BytesIn,
		BytesOut:          r.BytesOut,
		ActiveConnections: r.ActiveConnections,
		Reconnects:        r.Reconnects,
		LastError:         r.LastError,
	}
}

// mapSlice maps each element of in; nil when there is none.
func mapSlice[E, T any](in []E, f func(E) T) []T {
	if len(in) == 0 {
		return nil
	}
	out := make([]T, len(in))
	for i, e := range in {
		out[i] = f(e)
	}
	return out
}

func tunnelHopRecordOf(h sshdeck.TunnelHop) tunnelHopRecord {
	return tunnelHopRecord{IP: h.IP, SSHPort: h.SSHPort, Username: h.Username, Auth: string(h.Auth), KeyType: h.KeyType, HostKey: h.HostKey, HostID: h.HostID}
}

func (r tunnelHopRecord) hop() sshdeck.TunnelHop {
	return sshdeck.TunnelHop{IP: r.IP, SSHPort: r.SSHPort, Username: r.Username, Auth: sshdeck.AuthType(r.Auth), KeyType: r.KeyType, HostKey: r.HostKey, HostID: r.HostID}
}

func sealedRecordOf(c sshdeck.SealedCredentials) sealedRecord {
	return sealedRecord{Password: c.Password, Key: c.Key, KeyPassword: c.KeyPassword}
}

func (r sealedRecord) credentials() sshdeck.SealedCredentials {
	return sshdeck.SealedCredentials{Password: r.Password, Key: r.Key, KeyPassword: r.KeyPassword}
}

// knownHostRecord is a known host key as stored, JSON under the names of
// schema 3.
type knownHostRecord struct {
	Owner     string    `json:"owner"`
	Addr      string    `json:"addr"`
	Key       string    `json:"key"`
	CreatedAt time.Time `json:"createdAt"`
}

func (*knownHostRecord) jsonRecord() {}

func knownHostRecordOf(k *sshdeck.KnownHost) *knownHostRecord {
	return &knownHostRecord{Owner: k.Owner, Addr: k.Addr, Key: k.Key, CreatedAt: k.CreatedAt}
}

func (r *knownHostRecord) knownHost() *sshdeck.KnownHost {
	return &sshdeck.KnownHost{Owner: r.Owner, Addr: r.Addr, Key: r.Key, CreatedAt: r.CreatedAt}
}
