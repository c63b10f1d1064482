package tunnel

import (
	"context"
	"math"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Status is a tunnel's status as the API shows it (API.md, tunnel
// companions), read from the store so that any replica answers for any
// tunnel.
type Status struct {
	Name       string              `json:"name"`
	Status     sshdeck.TunnelState `json:"status"`
	RetryCount int                 `json:"retryCount"`
	MaxRetries int                 `json:"maxRetries"`
	// NextRetryIn is the number of seconds until the next attempt, rounded
	// up; 0 unless the tunnel is waiting.
	NextRetryIn      int                  `json:"nextRetryIn"`
	Reason           string               `json:"reason"`
	ErrorType        *sshdeck.TunnelError `json:"errorType"`
	RetryExhausted   bool                 `json:"retryExhausted"`
	ManualDisconnect bool                 `json:"manualDisconnect"`
	HostName         string               `json:"hostName"`
	SourcePort       int                  `json:"sourcePort"`
	EndpointPort     int                  `json:"endpointPort"`
	AutoStart        bool                 `json:"autoStart"`
	IsPinned         bool                 `json:"isPinned"`
	// Mode is relay or direct; never empty.
	Mode sshdeck.TunnelMode `json:"mode"`
	// UpdatedAt is when the status was last written: a change of state,
	// or of its counts (at most once a heartbeat).
	UpdatedAt time.Time `json:"updatedAt"`

	// The counts since the tunnel was last started by a connect request
	// (or restarted by a change of its host), as its replica last wrote
	// them: with every change of state, and at most once a heartbeat
	// (10 s) in between when they changed.

	// ConnectedSince is when the current connection came up; nil unless
	// connected.
	ConnectedSince *time.Time `json:"connectedSince"`
	// BytesIn are the bytes carried from the endpoint's clients to the
	// source's port, BytesOut those carried back, and ActiveConnections
	// the forwarded connections open: nil for a direct tunnel, whose
	// bytes never pass through the service.
	BytesIn           *int64 `json:"bytesIn"`
	BytesOut          *int64 `json:"bytesOut"`
	ActiveConnections *int   `json:"activeConnections"`
	// Reconnects counts the times the tunnel came up again after a
	// failure; the first connection is none.
	Reconnects int `json:"reconnects"`
	// LastError is the reason of the latest failure, kept once the tunnel
	// is up again; nil when none.
	LastError *string `json:"lastError"`
}

// newStatus renders a stored tunnel at now. A running tunnel whose lease
// expired has lost its replica: it shows as waiting for a takeover (or for
// the replicas to end it), not as the last state that replica wrote.
func newStatus(t *sshdeck.Tunnel, now time.Time) Status {
	st := t.Status
	v := Status{
		Name:             t.Name,
		Status:           st.State,
		RetryCount:       st.RetryCount,
		MaxRetries:       t.Spec.MaxRetries,
		Reason:           st.Reason,
		RetryExhausted:   st.RetryExhausted,
		ManualDisconnect: st.ManualDisconnect,
		HostName:         t.Spec.HostName,
		SourcePort:       t.Spec.SourcePort,
		EndpointPort:     t.Spec.EndpointPort,
		AutoStart:        t.Spec.AutoStart,
		IsPinned:         t.Spec.IsPinned,
		Mode:             t.Spec.ModeOrRelay(),
		UpdatedAt:        st.UpdatedAt,
	}
	if st.Error != "" {
		v.ErrorType = &st.Error
	}
	if st.LastError != "" {
		v.LastError = &st.LastError
	}
	v.Reconnects = st.Reconnects
	if st.State == sshdeck.TunnelWaiting && st.NextRetryAt.After(now) {
		v.NextRetryIn = int(math.Ceil(st.NextRetryAt.Sub(now).Seconds()))
	}
	orphaned := t.Run && st.State.Active() && st.State != sshdeck.TunnelWaiting &&
		t.Lease.Holder != "" && !now.Before(t.Lease.Until)
	if orphaned {
		v.Status, v.NextRetryIn = sshdeck.TunnelWaiting, 0
		v.Reason = "the service replica running it stopped renewing its lease; waiting for another replica"
	}
	// Connections are open only while the tunnel is connected: whatever
	// a replica last wrote, an orphaned tunnel has none.
	connected := v.Status == sshdeck.TunnelConnected
	if connected && !st.ConnectedAt.IsZero() {
		v.ConnectedSince = &st.ConnectedAt
	}
	if !t.Spec.Direct() {
		active := 0
		if connected {
			active = st.ActiveConnections
		}
		v.BytesIn, v.BytesOut, v.ActiveConnections = &st.BytesIn, &st.BytesOut, &active
	}
	return v
}

// Statuses returns the status of each of the owner's tunnels, by name.
func (m *Manager) Statuses(ctx context.Context, owner string) (map[string]Status, error) {
	ts, err := m.store.Tunnels(ctx, owner)
	if err != nil {
		return nil, err
	}
	now := m.now()
	out := make(map[string]Status, len(ts))
	for _, t := range ts {
		out[t.Name] = newStatus(t, now)
	}
	return out, nil
}

// Status returns the status of the owner's tunnel; NotFound when absent.
func (m *Manager) Status(ctx context.Context, owner, name string) (Status, error) {
	t, err := m.store.Tunnel(ctx, owner, name)
	if sshdeck.ErrorCode(err) == sshdeck.NotFound {
		return Status{}, sshdeck.Errorf(sshdeck.NotFound, "no tunnel named %q", name)
	}
	if err != nil {
		return Status{}, err
	}
	return newStatus(t, m.now()), nil
}
