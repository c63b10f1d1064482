package client

import (
	"context"

	"github.com/sshdeck/sshdeck/shared/web"
)

// Health is GET {base_url}/healthz (no token): status "ok" when the API
// and its store answer; a store that does not is a 503 *Error.
func (c *Client) Health(ctx context.Context) (*web.Health, error) {
	return c.health(ctx, c.BaseURL)
}

// TunnelHealth is GET {tunnel_url}/healthz.
func (c *Client) TunnelHealth(ctx context.Context) (*web.Health, error) {
	if c.TunnelURL == "" {
		return nil, ErrNoTunnelURL
	}
	return c.health(ctx, c.TunnelURL)
}

func (c *Client) health(ctx context.Context, base string) (*web.Health, error) {
	var h web.Health
	if _, err := c.do(ctx, call{base: base, method: "GET", path: "/healthz", out: &h}); err != nil {
		return nil, err
	}
	return &h, nil
}
