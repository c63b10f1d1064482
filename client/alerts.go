package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/releases"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Alerts is GET /alerts: the alerts the caller has not dismissed, most
// urgent first.
func (c *Client) Alerts(ctx context.Context) ([]sshdeck.Alert, error) {
	list := []sshdeck.Alert{}
	_, err := c.do(ctx, call{base: c.BaseURL, method: "GET", path: "/alerts", out: &list})
	return list, err
}

// DismissAlert is POST /alerts/dismiss: the caller no longer sees it.
func (c *Client) DismissAlert(ctx context.Context, id string) error {
	body := struct {
		AlertID string `json:"alertId"`
	}{id}
	_, err := c.do(ctx, call{base: c.BaseURL, method: "POST", path: "/alerts/dismiss", in: body, out: &Message{}})
	return err
}

// PublishAlert is POST /alerts (admin): the alert as stored.
func (c *Client) PublishAlert(ctx context.Context, in alerts.Input) (*sshdeck.Alert, error) {
	var a sshdeck.Alert
	if _, err := c.do(ctx, call{base: c.BaseURL, method: "POST", path: "/alerts", in: in, out: &a}); err != nil {
		return nil, err
	}
	return &a, nil
}

// DeleteAlert is DELETE /alerts/{id} (admin).
func (c *Client) DeleteAlert(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{base: c.BaseURL, method: "DELETE", path: "/alerts/" + url.PathEscape(id), out: &Message{}})
	return err
}

// Releases is GET /releases/rss?page=&per_page=: a page of the configured
// repository's releases (0 leaves a parameter to the server's default).
func (c *Client) Releases(ctx context.Context, page, perPage int) (*releases.Feed, error) {
	q := url.Values{}
	if page > 0 {
		q.Set("page", strconv.Itoa(page))
	}
	if perPage > 0 {
		q.Set("per_page", strconv.Itoa(perPage))
	}
	var feed releases.Feed
	if _, err := c.do(ctx, call{base: c.BaseURL, method: "GET", path: "/releases/rss", query: q, out: &feed}); err != nil {
		return nil, err
	}
	return &feed, nil
}
