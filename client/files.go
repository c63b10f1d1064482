package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"

	"github.com/sshdeck/sshdeck/shared/files"
)

// The file manager's two lists of a host: recent entries (newest first)
// and shortcuts (oldest first).
const (
	recentPath    = "/ssh/file_manager/recent"
	shortcutsPath = "/ssh/file_manager/shortcuts"
)

// fileRef is the body of a delete.
type fileRef struct {
	HostID int64  `json:"hostId"`
	Path   string `json:"path"`
}

func hostQuery(hostID int64) url.Values {
	return url.Values{"hostId": {strconv.FormatInt(hostID, 10)}}
}

// RecentFiles yields the host's recent entries, newest first, a page at a
// time (the API pages this list by default, 20 an answer).
func (c *Client) RecentFiles(ctx context.Context, hostID int64, pageSize int) iter.Seq2[files.Entry, error] {
	return pages[files.Entry](c, ctx, c.BaseURL, recentPath, hostQuery(hostID), min(pageSize, 100))
}

// ListRecentFiles is every recent entry of the host (at most 100 are kept).
func (c *Client) ListRecentFiles(ctx context.Context, hostID int64) ([]files.Entry, error) {
	return collect(c.RecentFiles(ctx, hostID, 100))
}

// AddRecentFile is POST /ssh/file_manager/recent: re-adding moves the entry
// to the top.
func (c *Client) AddRecentFile(ctx context.Context, in files.Input) error {
	_, err := c.do(ctx, call{base: c.BaseURL, method: "POST", path: recentPath, in: in, out: &Message{}})
	return err
}

// DeleteRecentFile is DELETE /ssh/file_manager/recent.
func (c *Client) DeleteRecentFile(ctx context.Context, hostID int64, path string) error {
	_, err := c.do(ctx, call{base: c.BaseURL, method: "DELETE", path: recentPath, in: fileRef{hostID, path}, out: &Message{}})
	return err
}

// Shortcuts yields the host's shortcuts, oldest first, a page at a time.
func (c *Client) Shortcuts(ctx context.Context, hostID int64, pageSize int) iter.Seq2[files.Entry, error] {
	return pages[files.Entry](c, ctx, c.BaseURL, shortcutsPath, hostQuery(hostID), pageSize)
}

// ListShortcuts is GET /ssh/file_manager/shortcuts unpaged: every shortcut
// of the host.
func (c *Client) ListShortcuts(ctx context.Context, hostID int64) ([]files.Entry, error) {
	list := []files.Entry{}
	_, err := c.do(ctx, call{base: c.BaseURL, method: "GET", path: shortcutsPath, query: hostQuery(hostID), out: &list})
	return list, err
}

// AddShortcut is POST /ssh/file_manager/shortcuts; adding one that is
// there already is a no-op.
func (c *Client) AddShortcut(ctx context.Context, in files.Input) error {
	_, err := c.do(ctx, call{base: c.BaseURL, method: "POST", path: shortcutsPath, in: in, out: &Message{}})
	return err
}

// DeleteShortcut is DELETE /ssh/file_manager/shortcuts.
func (c *Client) DeleteShortcut(ctx context.Context, hostID int64, path string) error {
	_, err := c.do(ctx, call{base: c.BaseURL, method: "DELETE", path: shortcutsPath, in: fileRef{hostID, path}, out: &Message{}})
	return err
}
