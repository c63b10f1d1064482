package sshdeck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
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

// HostPatch is an update of a host that needs nothing stored to be written:
// its configuration replaces the stored one, its credentials replace the
// stored ones or leave them as they are, the version grows by one and
// UpdatedAt is set. Owner, ID, CreatedAt and the credentials it keeps stay
// as stored. It applies only if the stored host meets its conditions.
type HostPatch struct {
	Owner string
	ID    int64
	HostConfig
	// Sealed, when not nil, replaces the stored credentials (a nil field
	// leaves that credential empty); nil keeps them as stored.
	Sealed    *SealedCredentials
	UpdatedAt time.Time

	// IfVersion, when positive, is the version the host must be at.
	IfVersion int64
	// IfKeyType, when not empty, is the keyType the host must have.
	IfKeyType string
	// IfNoPassword, IfNoKey and IfNoKeyPassword require that credential to
	// be empty as stored: with Sealed nil, what the patch would otherwise
	// have to clear.
	IfNoPassword, IfNoKey, IfNoKeyPassword bool
}

// Apply returns the host that p makes of stored, a new one sharing nothing
// with either, or Conflict when stored fails a condition of p. It is
// PatchHost for a store that reads and writes in one transaction.
func (p *HostPatch) Apply(stored *Host) (*Host, error) {
	var failed string
	switch {
	case p.IfVersion > 0 && stored.Version != p.IfVersion:
		failed = fmt.Sprintf("is not at version %d", p.IfVersion)
	case p.IfKeyType != "" && stored.KeyType != p.IfKeyType:
		failed = fmt.Sprintf("does not have keyType %q", p.IfKeyType)
	case p.IfNoPassword && len(stored.Sealed.Password) > 0,
		p.IfNoKey && len(stored.Sealed.Key) > 0,
		p.IfNoKeyPassword && len(stored.Sealed.KeyPassword) > 0:
		failed = "has a credential that the patch requires empty"
	}
	if failed != "" {
		return nil, Errorf(Conflict, "host %d %s", stored.ID, failed)
	}
	h := *stored
	h.HostConfig = p.HostConfig
	h.Tags = slices.Clone(p.Tags)
	h.TunnelConnections = slices.Clone(p.TunnelConnections)
	sealed := stored.Sealed
	if p.Sealed != nil {
		sealed = *p.Sealed
	}
	h.Sealed = SealedCredentials{
		Password:    bytes.Clone(sealed.Password),
		Key:         bytes.Clone(sealed.Key),
		KeyPassword: bytes.Clone(sealed.KeyPassword),
	}
	h.Version = stored.Version + 1
	h.UpdatedAt = p.UpdatedAt
	return &h, nil
}

// HostStore persists host records. Host ids are positive, unique within their
// owner, allocated in increasing order and never reused. Every method is
// scoped to one owner: another owner's host is NotFound.
type HostStore interface {
	// NextHostID allocates the next host id of the owner.
	NextHostID(ctx context.Context, owner string) (int64, error)
	// CreateHost stores h, whose Owner, ID (from NextHostID) and Version (1)
	// are set; Conflict when the id exists.
	CreateHost(ctx context.Context, h *Host) error
	// Host returns the owner's host; NotFound when absent.
	Host(ctx context.Context, owner string, id int64) (*Host, error)
	// Hosts returns the owner's hosts ordered by id.
	Hosts(ctx context.Context, owner string) ([]*Host, error)
	// UpdateHost replaces the stored host with h if the stored version is
	// h.Version-1; Conflict when it is not, NotFound when absent.
	UpdateHost(ctx context.Context, h *Host) error
	// PatchHost applies p to the owner's host in one write, without the
	// caller reading it first, and returns the host after it: NotFound
	// when absent, Conflict when the host fails a condition of p (and is
	// then left as it was).
	PatchHost(ctx context.Context, p *HostPatch) (*Host, error)
	// DeleteHost removes the owner's host with everything that belongs to it:
	// its file-manager entries (FileStore).
	// With version > 0 the stored version must equal it (else Conflict).
	// NotFound when absent.
	DeleteHost(ctx context.Context, owner string, id int64, version int64) error
}

// Store is everything a deployment persists.
type Store interface {
	UserStore
	TokenStore
	HostStore
	FileStore
	AlertStore
	CacheStore
	TunnelStore
	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
	Close() error
}
