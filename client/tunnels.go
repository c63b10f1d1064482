package client

// The tunnel service's calls ({tunnel_url}). Their bodies are small wire
// types of this package rather than tunnel-service/tunnel's own: that
// package is the tunnel manager (SSH dialling, leases, replicas), which a
// client has no use for. wire_test.go proves that each marshals as the
// service's type does.

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// ConnectRequest is the body of POST /ssh/tunnel/connect (API.md, core
// operation 1), field for field tunnel.ConnectRequest. Pointers are the
// fields whose absence means the default. SourceHostID and EndpointHostID
// name stored hosts instead of that side's address and credentials.
type ConnectRequest struct {
	Name     string `json:"name"`
	HostName string `json:"hostName"`

	SourceHostID   *int64 `json:"sourceHostId"`
	EndpointHostID *int64 `json:"endpointHostId"`

	SourceIP          string  `json:"sourceIP"`
	SourceSSHPort     *int    `json:"sourceSSHPort"`
	SourceUsername    string  `json:"sourceUsername"`
	SourcePassword    string  `json:"sourcePassword"`
	SourceAuthMethod  string  `json:"sourceAuthMethod"`
	SourceSSHKey      string  `json:"sourceSSHKey"`
	SourceKeyPassword string  `json:"sourceKeyPassword"`
	SourceKeyType     *string `json:"sourceKeyType"`
	SourceHostKey     string  `json:"sourceHostKey"`

	EndpointIP          string  `json:"endpointIP"`
	EndpointSSHPort     *int    `json:"endpointSSHPort"`
	EndpointUsername    string  `json:"endpointUsername"`
	EndpointPassword    string  `json:"endpointPassword"`
	EndpointAuthMethod  string  `json:"endpointAuthMethod"`
	EndpointSSHKey      string  `json:"endpointSSHKey"`
	EndpointKeyPassword string  `json:"endpointKeyPassword"`
	EndpointKeyType     *string `json:"endpointKeyType"`
	EndpointHostKey     string  `json:"endpointHostKey"`

	SourcePort    *int `json:"sourcePort"`
	EndpointPort  *int `json:"endpointPort"`
	MaxRetries    *int `json:"maxRetries"`
	RetryInterval *int `json:"retryInterval"` // milliseconds
	AutoStart     bool `json:"autoStart"`
	IsPinned      bool `json:"isPinned"`
	// Mode is "relay" (empty: the default) or "direct".
	Mode string `json:"mode"`
}

// TunnelStatus is a tunnel's status as the service shows it, field for
// field tunnel.Status.
type TunnelStatus struct {
	Name       string              `json:"name"`
	Status     sshdeck.TunnelState `json:"status"`
	RetryCount int                 `json:"retryCount"`
	MaxRetries int                 `json:"maxRetries"`
	// NextRetryIn is the seconds until the next attempt; 0 unless waiting.
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
	Mode             sshdeck.TunnelMode   `json:"mode"`
	// UpdatedAt is when the status was last written: a change of state,
	// or of its counts.
	UpdatedAt time.Time `json:"updatedAt"`
	// ConnectedSince is when the current connection came up; nil unless
	// connected.
	ConnectedSince *time.Time `json:"connectedSince"`
	// BytesIn (from the endpoint's clients to the source), BytesOut (back)
	// and ActiveConnections count since the tunnel was last started; nil
	// for a direct tunnel, whose bytes never pass through the service.
	BytesIn           *int64 `json:"bytesIn"`
	BytesOut          *int64 `json:"bytesOut"`
	ActiveConnections *int   `json:"activeConnections"`
	// Reconnects counts the times it came up again after a failure.
	Reconnects int `json:"reconnects"`
	// LastError is the reason of the latest failure, kept once it is up
	// again; nil when none.
	LastError *string `json:"lastError"`
}

// nameRequest is the body of disconnect and cancel (tunnelapi.NameRequest).
type nameRequest struct {
	TunnelName string `json:"tunnelName"`
}

// tunnelCall is a call to the tunnel service, or ErrNoTunnelURL.
func (c *Client) tunnelCall(ctx context.Context, k call) error {
	if c.TunnelURL == "" {
		return ErrNoTunnelURL
	}
	k.base = c.TunnelURL
	_, err := c.do(ctx, k)
	return err
}

// Connect is POST /ssh/tunnel/connect: the service connects in the
// background (watch the status). A request of a host tunnel's name alone
// ("12:0") starts that tunnel; connecting a name that exists restarts it.
func (c *Client) Connect(ctx context.Context, req *ConnectRequest) error {
	return c.tunnelCall(ctx, call{method: "POST", path: "/ssh/tunnel/connect", in: req, out: &Message{}})
}

// Disconnect is POST /ssh/tunnel/disconnect: the tunnel stops and is kept.
func (c *Client) Disconnect(ctx context.Context, name string) error {
	return c.tunnelCall(ctx, call{method: "POST", path: "/ssh/tunnel/disconnect", in: nameRequest{name}, out: &Message{}})
}

// Cancel is POST /ssh/tunnel/cancel: the tunnel stops retrying.
func (c *Client) Cancel(ctx context.Context, name string) error {
	return c.tunnelCall(ctx, call{method: "POST", path: "/ssh/tunnel/cancel", in: nameRequest{name}, out: &Message{}})
}

// DeleteTunnel is DELETE /ssh/tunnel/{name}: the tunnel stops and is
// forgotten.
func (c *Client) DeleteTunnel(ctx context.Context, name string) error {
	return c.tunnelCall(ctx, call{method: "DELETE", path: "/ssh/tunnel/" + tunnelPath(name), out: &Message{}})
}

// TunnelStatuses is GET /ssh/tunnel/status: the caller's tunnels by name.
func (c *Client) TunnelStatuses(ctx context.Context) (map[string]TunnelStatus, error) {
	all := map[string]TunnelStatus{}
	err := c.tunnelCall(ctx, call{method: "GET", path: "/ssh/tunnel/status", out: &all})
	return all, err
}

// TunnelStatus is GET /ssh/tunnel/status/{name}.
func (c *Client) TunnelStatus(ctx context.Context, name string) (*TunnelStatus, error) {
	var st TunnelStatus
	if err := c.tunnelCall(ctx, call{method: "GET", path: "/ssh/tunnel/status/" + tunnelPath(name), out: &st}); err != nil {
		return nil, err
	}
	return &st, nil
}

// TunnelMetrics is GET {tunnel_url}/metrics (an admin token): the
// Prometheus text of the tunnels the answering replica runs, as it is.
func (c *Client) TunnelMetrics(ctx context.Context) (string, error) {
	if c.TunnelURL == "" {
		return "", ErrNoTunnelURL
	}
	resp, err := c.send(ctx, call{base: c.TunnelURL, method: "GET", path: "/metrics"})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("GET /metrics: reading the answer: %w", err)
	}
	return string(b), nil
}

// tunnelPath escapes a tunnel's name for a {name...} path: each segment
// escaped, the slashes kept, as the route's wildcard takes them.
func tunnelPath(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
