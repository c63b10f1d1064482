package sshdeck

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// AuthType is how sshdeck logs in to a host.
type AuthType string

const (
	AuthPassword AuthType = "password"
	AuthKey      AuthType = "key"
	AuthNone     AuthType = "none"
)

// HostConfig is what a client sets on a host, its credentials aside.
type HostConfig struct {
	Name              string             `json:"name"`
	IP                string             `json:"ip"`
	Port              int                `json:"port"`
	Username          string             `json:"username"`
	Folder            string             `json:"folder"`
	Tags              []string           `json:"tags"`
	Pin               bool               `json:"pin"`
	AuthType          AuthType           `json:"authType"`
	KeyType           string             `json:"keyType"`
	EnableTerminal    bool               `json:"enableTerminal"`
	EnableTunnel      bool               `json:"enableTunnel"`
	EnableFileManager bool               `json:"enableFileManager"`
	DefaultPath       string             `json:"defaultPath"`
	TunnelConnections []TunnelConnection `json:"tunnelConnections"`
	// JumpHosts is the chain the service goes through to reach the host,
	// first hop first (from the service outwards), as OpenSSH's ProxyJump
	// lists it; each hop is another host of the same owner, reached through
	// its own JumpHosts in turn. Stores keep the ids as given: the rules
	// (the hop exists, no cycle, the chain's length) are shared/hosts'.
	JumpHosts []JumpHost `json:"jumpHosts"`
	// IdentityFile is the path of the host's private key on the user's
	// machine, as OpenSSH's IdentityFile names it (~ and all, unexpanded):
	// what an ssh_config import read and an export writes back. It is a
	// path, not a secret: the key itself is Credentials.Key.
	IdentityFile string `json:"identityFile"`
}

// JumpHost is one hop of a host's chain: another host of its owner, by id
// (Termix's field: jumpHosts: [{"hostId": N}, …]).
type JumpHost struct {
	HostID int64 `json:"hostId"`
}

// TunnelConnection is a tunnel a host offers to start from its configuration.
type TunnelConnection struct {
	SourcePort    int    `json:"sourcePort"`
	EndpointPort  int    `json:"endpointPort"`
	EndpointHost  string `json:"endpointHost"`
	MaxRetries    int    `json:"maxRetries"`
	RetryInterval int    `json:"retryInterval"` // seconds
	AutoStart     bool   `json:"autoStart"`
}

// Credentials are a host's secrets in plaintext. They exist in memory only:
// every store receives SealedCredentials.
type Credentials struct {
	Password    string `json:"password"`
	Key         string `json:"key"`
	KeyPassword string `json:"keyPassword"`
}

// SealedCredentials are Credentials encrypted field by field (see
// shared/secret). A nil field means the credential is empty.
type SealedCredentials struct {
	Password    []byte `json:"password,omitempty"`
	Key         []byte `json:"key,omitempty"`
	KeyPassword []byte `json:"keyPassword,omitempty"`
}

// Host is a host record as stored. Version starts at 1 and grows by one on
// every update; it is the host's ETag and the guard of conditional writes.
type Host struct {
	Owner   string `json:"owner"`
	ID      int64  `json:"id"`
	Version int64  `json:"version"`
	HostConfig
	Sealed    SealedCredentials `json:"sealed"`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`
}

// CheckNew reports why a HostStore must refuse to create h: it needs an
// owner, a positive id (from NextHostID) and version 1. Such a host is a
// programming error, never a client's.
func (h *Host) CheckNew() error {
	switch {
	case h.Owner == "":
		return errors.New("owner is required")
	case h.ID <= 0:
		return fmt.Errorf("id %d is not positive", h.ID)
	case h.Version != 1:
		return fmt.Errorf("version is %d, not 1", h.Version)
	}
	return nil
}

// HostStore persists host records. Host ids are positive, unique within their
// owner, allocated in increasing order and never reused. Every method is
// scoped to one owner: another owner's host is NotFound.
type HostStore interface {
	// NextHostID allocates the next host id of the owner.
	NextHostID(ctx context.Context, owner string) (int64, error)
	// NextHostIDs allocates n (1..MaxHostBatch) consecutive host ids of
	// the owner at once, and returns the first: an import's ids in one
	// step. Ids of a batch refused later are skipped, never reused.
	NextHostIDs(ctx context.Context, owner string, n int) (int64, error)
	// CreateHost stores h, whose Owner, ID (from NextHostID) and Version (1)
	// are set; Conflict when the id exists, LimitExceeded (HostsExceeded)
	// when the owner has max hosts already. The count and the write are
	// one atomic step: concurrent creates never take an owner past max.
	CreateHost(ctx context.Context, h *Host, max int) error
	// CreateHosts stores hosts, each as CreateHost would, all of one owner
	// with distinct ids, all or none: Conflict naming the first id that
	// exists, LimitExceeded (HostsExceeded) when the owner's hosts and
	// these would be more than max, and then nothing is stored. The count
	// and the writes are one atomic step, as CreateHost's. At most
	// MaxHostBatch hosts (a DynamoDB transaction's items); more is an
	// error, a programming one (the service caps an import before).
	CreateHosts(ctx context.Context, hosts []*Host, max int) error
	// Host returns the owner's host; NotFound when absent.
	Host(ctx context.Context, owner string, id int64) (*Host, error)
	// Hosts returns the owner's hosts with an id above after, ordered by
	// id: at most limit of them, all of them when limit is 0. A list walks
	// them a page at a time, each page starting after the last id of the
	// one before, so that no read holds more than a page.
	Hosts(ctx context.Context, owner string, after int64, limit int) ([]*Host, error)
	// UpdateHost replaces the stored host with h if the stored version is
	// h.Version-1; Conflict when it is not, NotFound when absent.
	UpdateHost(ctx context.Context, h *Host) error
	// DeleteHost removes the owner's host with everything that belongs to it:
	// its file-manager entries (FileStore).
	// With version > 0 the stored version must equal it (else Conflict).
	// NotFound when absent.
	DeleteHost(ctx context.Context, owner string, id int64, version int64) error
}

// MaxHostBatch is the most hosts one CreateHosts stores, so the most
// hosts of one import: what one DynamoDB transaction holds (100 items)
// beside the owner's count of hosts and the import's audit record, one
// item a host.
const MaxHostBatch = 98

// CheckBatch reports why a HostStore must refuse to create hosts in one
// batch: none, too many, one that CheckNew refuses, two owners or an id
// twice. Such a batch is a programming error, never a client's.
func CheckBatch(hosts []*Host) error {
	switch {
	case len(hosts) == 0:
		return errors.New("no hosts")
	case len(hosts) > MaxHostBatch:
		return fmt.Errorf("%d hosts, more than %d", len(hosts), MaxHostBatch)
	}
	ids := make(map[int64]bool, len(hosts))
	for i, h := range hosts {
		if err := h.CheckNew(); err != nil {
			return fmt.Errorf("hosts[%d]: %w", i, err)
		}
		if h.Owner != hosts[0].Owner {
			return fmt.Errorf("hosts[%d]: owner %q is not hosts[0]'s", i, h.Owner)
		}
		if ids[h.ID] {
			return fmt.Errorf("hosts[%d]: id %d twice", i, h.ID)
		}
		ids[h.ID] = true
	}
	return nil
}

// HostsExceeded is the error of a create that would take its owner past
// max hosts (config.Limits.Hosts), the same from every store.
func HostsExceeded(max int) *Error {
	return Errorf(LimitExceeded, "limit of hosts per user reached: you have %d, the most you may have (SSHDECK_LIMIT_HOSTS); delete one first", max)
}

// JumpHostsExceeded is the error of a host whose route, its jump hosts and
// theirs, would have more than max hops (config.Limits.JumpHosts).
func JumpHostsExceeded(max int) *Error {
	return Errorf(LimitExceeded, "limit of jump hosts per chain reached: the route to the host would pass more than %d hosts, counting the jump hosts' own (SSHDECK_LIMIT_JUMP_HOSTS); shorten the chain", max)
}

// Store is everything a deployment persists.
type Store interface {
	UserStore
	TokenStore
	LoginSecretStore
	FailureStore
	HostStore
	FileStore
	AlertStore
	CacheStore
	TunnelStore
	AuditStore
	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
	Close() error
}
