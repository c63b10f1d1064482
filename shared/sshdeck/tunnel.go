package sshdeck

import (
	"context"
	"time"
)

// TunnelState is where a tunnel is in its life.
type TunnelState string

const (
	TunnelConnecting   TunnelState = "connecting"
	TunnelConnected    TunnelState = "connected"
	TunnelRetrying     TunnelState = "retrying" // redialling after a failure
	TunnelWaiting      TunnelState = "waiting"  // between a failure and the next retry
	TunnelFailed       TunnelState = "failed"
	TunnelDisconnected TunnelState = "disconnected"
)

// Active reports whether a replica is running a tunnel in this state.
func (s TunnelState) Active() bool {
	switch s {
	case TunnelConnecting, TunnelConnected, TunnelRetrying, TunnelWaiting:
		return true
	}
	return false
}

// TunnelError classifies why a tunnel failed or is retrying.
type TunnelError string

const (
	TunnelErrAuthentication TunnelError = "authentication"
	TunnelErrHostKey        TunnelError = "host_key"
	TunnelErrNetwork        TunnelError = "network"
	TunnelErrTimeout        TunnelError = "timeout"
	TunnelErrPortConflict   TunnelError = "port_conflict"
	TunnelErrForbidden      TunnelError = "forbidden"
	TunnelErrUnknown        TunnelError = "unknown"
)

// TunnelHop is one SSH host of a tunnel (a jump host, the source or the
// endpoint), its credentials aside.
type TunnelHop struct {
	IP       string   `json:"ip"`
	SSHPort  int      `json:"sshPort"`
	Username string   `json:"username"`
	Auth     AuthType `json:"authMethod"` // AuthPassword or AuthKey
	KeyType  string   `json:"keyType"`
	// HostKey pins the host's key (a SHA256: fingerprint or an
	// authorized_keys line); empty trusts the first key seen (KnownHost).
	HostKey string `json:"hostKey,omitempty"`
	// HostID is the owner's stored host this hop was read from (a
	// request's sourceHostId or endpointHostId, or a hop of the source's
	// route); 0 when the request gave the hop's fields itself. A stored
	// tunnel that references hosts (TunnelSpec.SourceHostID…) keeps no
	// copy of them: its hops are read at each attempt, and HostID is set
	// in that attempt's hops. Records written before references held
	// copies with HostID set; they run from their copies as before.
	HostID int64 `json:"hostId,omitempty"`
}

// TunnelSpec is what a connect request asks for, its credentials aside:
// connections to the endpoint's 127.0.0.1:EndpointPort are carried to the
// source's 127.0.0.1:SourcePort.
type TunnelSpec struct {
	HostName string `json:"hostName"`
	// Jumps is the chain the service goes through to reach the source,
	// first hop first (from the service outwards), as ssh -J lists it: the
	// first is dialled by the service, each later one and then the source
	// by the hop before it. Empty: the source is dialled directly. No
	// client sends it: the service fills it from the route of a stored
	// host (tunnel.ConnectRequest.Jumps).
	Jumps    []TunnelHop `json:"jumps,omitempty"`
	Source   TunnelHop   `json:"source"`
	Endpoint TunnelHop   `json:"endpoint"`
	// SourceHostID, EndpointHostID and EndpointHost reference the owner's
	// stored hosts instead of copying them (hosttunnel.go): a referenced
	// side's hop holds only its pin (HostKey), the record holds no
	// credential of it, and each attempt reads the host, and the source's
	// route of jump hosts, from the store. So a changed password is used
	// at the next attempt, and a host saved later than its tunnel is found.
	//
	// SourceHostID is the source (a request's sourceHostId, or the host
	// whose tunnelConnections hold the tunnel), reached through its route;
	// Jumps is then empty. EndpointHostID is a request's endpointHostId.
	// EndpointHost is a tunnelConnection's endpointHost as the host gives
	// it: the id or the name of one of the owner's hosts.
	SourceHostID   int64  `json:"sourceHostId,omitempty"`
	EndpointHostID int64  `json:"endpointHostId,omitempty"`
	EndpointHost   string `json:"endpointHost,omitempty"`
	// HostTunnel marks a host's tunnelConnection: item i of host
	// SourceHostID's list, named HostTunnelName(SourceHostID, i), written
	// by the hosts service whenever the host is saved.
	HostTunnel   bool `json:"hostTunnel,omitempty"`
	SourcePort   int  `json:"sourcePort"`
	EndpointPort int  `json:"endpointPort"`
	// MaxRetries is how many consecutive failures are retried (0: none).
	MaxRetries int `json:"maxRetries"`
	// RetryInterval is the pause before a retry.
	RetryInterval time.Duration `json:"retryInterval"`
	// AutoStart tunnels are started again whenever the service starts, and
	// taken over by another replica when theirs dies.
	AutoStart bool `json:"autoStart"`
	IsPinned  bool `json:"isPinned"`
	// Mode is who carries the bytes: the service (relay, the default) or
	// OpenSSH's client run on the source (direct). Empty is relay: every
	// record written before modes existed is one.
	Mode TunnelMode `json:"mode,omitempty"`
}

// TunnelMode is how a tunnel carries its connections.
type TunnelMode string

const (
	// TunnelRelay: the service holds SSH to the source and, through it, to
	// the endpoint, and copies every connection between them.
	TunnelRelay TunnelMode = "relay"
	// TunnelDirect: the service runs `ssh -N -R` on the source over its
	// SSH connection there, and only supervises it; the bytes go source →
	// endpoint on one hop.
	TunnelDirect TunnelMode = "direct"
)

// Direct reports whether the spec is a direct tunnel's.
func (s *TunnelSpec) Direct() bool { return s.Mode == TunnelDirect }

// ModeOrRelay is the spec's mode, with the default (empty) spelled out.
func (s *TunnelSpec) ModeOrRelay() TunnelMode {
	if s.Mode == "" {
		return TunnelRelay
	}
	return s.Mode
}

// TunnelCredentials are a tunnel's secrets in plaintext, in memory only:
// every store receives SealedTunnelCredentials.
type TunnelCredentials struct {
	Jumps    []Credentials // one per TunnelSpec.Jumps, in its order
	Source   Credentials
	Endpoint Credentials
}

// SealedTunnelCredentials are TunnelCredentials sealed field by field.
type SealedTunnelCredentials struct {
	Jumps    []SealedCredentials `json:"jumps,omitempty"` // one per TunnelSpec.Jumps
	Source   SealedCredentials   `json:"source"`
	Endpoint SealedCredentials   `json:"endpoint"`
}

// TunnelStatus is what a tunnel's runner last reported.
type TunnelStatus struct {
	State TunnelState `json:"state"`
	// RetryCount is the number of consecutive failures so far.
	RetryCount int `json:"retryCount"`
	// NextRetryAt is when the next attempt starts (state waiting).
	NextRetryAt time.Time `json:"nextRetryAt,omitzero"`
	// Reason says what happened last, for people; it never holds a
	// credential.
	Reason         string      `json:"reason"`
	Error          TunnelError `json:"errorType,omitempty"`
	RetryExhausted bool        `json:"retryExhausted"`
	// ManualDisconnect is set when a user disconnected or cancelled it.
	ManualDisconnect bool      `json:"manualDisconnect"`
	UpdatedAt        time.Time `json:"updatedAt"`

	// The counters below belong to the tunnel's generation: a connect
	// request, or a change that restarts the tunnel, starts them at zero;
	// a retry, a takeover by another replica or the service's next start
	// keeps counting. The replica that runs the tunnel writes them with
	// every state it reports, and between states at most once a heartbeat,
	// when they changed.

	// ConnectedAt is when the latest connection came up, kept after it
	// ended (zero until the first): the API shows it as connectedSince
	// while the tunnel is connected, and it tells a later connection that
	// it is a reconnect.
	ConnectedAt time.Time `json:"connectedAt,omitzero"`
	// BytesIn are the bytes carried from the endpoint's clients to the
	// source's port, BytesOut those carried back; a direct tunnel's bytes
	// never pass through the service, and its counts stay 0.
	BytesIn  int64 `json:"bytesIn,omitempty"`
	BytesOut int64 `json:"bytesOut,omitempty"`
	// ActiveConnections are the forwarded connections open when the status
	// was written.
	ActiveConnections int `json:"activeConnections,omitempty"`
	// Reconnects counts the connections after the first.
	Reconnects int `json:"reconnects,omitempty"`
	// LastError is the reason of the latest failure, kept once the tunnel
	// is up again; it never holds a credential.
	LastError string `json:"lastError,omitempty"`
}

// TunnelLease says which service replica runs a tunnel, until when. A
// replica renews its leases by heartbeat; an expired lease may be taken.
type TunnelLease struct {
	Holder string    `json:"holder,omitempty"`
	Until  time.Time `json:"until,omitzero"`
}

// Tunnel is a tunnel record as stored. Generation starts at 1 and grows by
// one on every write of the spec or of Run (connect, disconnect, cancel);
// it guards those writes as Host.Version does, and tells a running replica
// that the tunnel changed under it.
type Tunnel struct {
	Owner      string                  `json:"owner"`
	Name       string                  `json:"name"`
	Generation int64                   `json:"generation"`
	Spec       TunnelSpec              `json:"spec"`
	Sealed     SealedTunnelCredentials `json:"sealed"`
	// Run is the wanted state: a replica should run the tunnel. Disconnect
	// and cancel clear it.
	Run       bool         `json:"run"`
	Status    TunnelStatus `json:"status"`
	Lease     TunnelLease  `json:"lease"`
	CreatedAt time.Time    `json:"createdAt"`
	UpdatedAt time.Time    `json:"updatedAt"`
}

// KnownHost is the host key first seen at an address by one owner's
// tunnels; every later connection there must present the same key.
type KnownHost struct {
	Owner string `json:"owner"`
	// Addr is the host and SSH port as the tunnel names them ("10.0.0.5:22").
	Addr string `json:"addr"`
	// Key is the public key in authorized_keys format.
	Key       string    `json:"key"`
	CreatedAt time.Time `json:"createdAt"`
}

// TunnelStore persists tunnels, their leases and the owners' known hosts.
// Tunnels are scoped to their owner and named uniquely within it.
type TunnelStore interface {
	// PutTunnel stores t (spec, credentials, Run, status, timestamps) if
	// the stored tunnel's generation is t.Generation-1, where 0 means the
	// tunnel must be absent; Conflict otherwise. The stored lease is kept
	// whatever t.Lease says. At generation 1 it is CreateTunnel without a
	// limit.
	PutTunnel(ctx context.Context, t *Tunnel) error
	// CreateTunnel stores t, of generation 1, if the owner has no tunnel
	// of its name (Conflict otherwise) and fewer than limit tunnels
	// (LimitExceeded otherwise; a limit of 0 or less is none). Concurrent
	// creates never take an owner past the limit.
	CreateTunnel(ctx context.Context, t *Tunnel, limit int) error
	// DeleteTunnel forgets the owner's tunnel, its lease and sealed
	// credentials with it, if its generation is gen (whatever it is when
	// gen is 0): NotFound when absent, Conflict at another generation.
	// The owner's known hosts stay.
	DeleteTunnel(ctx context.Context, owner, name string, gen int64) error
	// StoppedTunnels returns every owner's tunnels whose Run is clear,
	// that are not AutoStart, and whose UpdatedAt is before `before`,
	// ordered by owner then name: the tunnels to forget.
	StoppedTunnels(ctx context.Context, before time.Time) ([]*Tunnel, error)
	// Tunnel returns the owner's tunnel; NotFound when absent.
	Tunnel(ctx context.Context, owner, name string) (*Tunnel, error)
	// Tunnels returns the owner's tunnels ordered by name.
	Tunnels(ctx context.Context, owner string) ([]*Tunnel, error)
	// RunnableTunnels returns every owner's tunnels whose Run is set,
	// ordered by owner then name: the work replicas share out.
	RunnableTunnels(ctx context.Context) ([]*Tunnel, error)
	// SetTunnelStatus replaces the tunnel's status if its generation is gen
	// and holder holds its lease (expired or not); Conflict otherwise, so
	// that a replica that lost the tunnel cannot overwrite the status of
	// the one that runs it. NotFound when absent.
	SetTunnelStatus(ctx context.Context, owner, name string, gen int64, holder string, st *TunnelStatus) error
	// AcquireTunnelLease makes holder the lease holder until `until` if the
	// lease is free, already holder's, or expired at now, and returns the
	// tunnel as stored after it. Renewing is acquiring again. Conflict when
	// another holder's lease is in force; NotFound when absent.
	AcquireTunnelLease(ctx context.Context, owner, name, holder string, now, until time.Time) (*Tunnel, error)
	// ReleaseTunnelLease frees the lease if holder holds it, and does
	// nothing otherwise (absent tunnel included).
	ReleaseTunnelLease(ctx context.Context, owner, name, holder string) error
	// KnownHost returns the key the owner's tunnels saw first at addr;
	// NotFound when none.
	KnownHost(ctx context.Context, owner, addr string) (*KnownHost, error)
	// AddKnownHost stores k; Conflict when the owner knows addr already
	// (the first key wins, so concurrent first connections agree).
	AddKnownHost(ctx context.Context, k *KnownHost) error
}

// TunnelLimit is the error of a connect that would give its owner more
// than limit tunnels (config.Limits.Tunnels): LimitExceeded, naming it.
func TunnelLimit(limit int) error {
	return Errorf(LimitExceeded, "tunnel limit reached: at most %d tunnels per user, in any state (SSHDECK_LIMIT_TUNNELS); delete one to make room", limit)
}
