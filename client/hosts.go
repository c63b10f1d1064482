package client

import (
	"context"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sshdeck/sshdeck/shared/hostconfig"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Message is the body of the answers that only confirm: {"message": …}.
type Message struct {
	Message string `json:"message"`
}

// hostPath is the path of host id.
func hostPath(id int64) string { return "/ssh/db/host/" + strconv.FormatInt(id, 10) }

// ListHosts is GET /ssh/db/host unpaged: every host of the caller, ordered
// by id, in one answer (the API streams it).
func (c *Client) ListHosts(ctx context.Context) ([]hosts.Record, error) {
	list := []hosts.Record{}
	_, err := c.do(ctx, call{base: c.BaseURL, method: "GET", path: "/ssh/db/host", out: &list})
	return list, err
}

// Hosts yields every host of the caller, ordered by id, a page of pageSize
// at a time (GET /ssh/db/host?limit=N, following Link).
func (c *Client) Hosts(ctx context.Context, pageSize int) iter.Seq2[hosts.Record, error] {
	return pages[hosts.Record](c, ctx, c.BaseURL, "/ssh/db/host", nil, pageSize)
}

// Host is GET /ssh/db/host/{id}. The record's Version is its ETag, for
// UpdateHost's and DeleteHost's ifMatch.
func (c *Client) Host(ctx context.Context, id int64) (*hosts.Record, error) {
	var rec hosts.Record
	h, err := c.do(ctx, call{base: c.BaseURL, method: "GET", path: hostPath(id), out: &rec})
	if err != nil {
		return nil, err
	}
	rec.Version = versionOf(h)
	return &rec, nil
}

// CreateHost is POST /ssh/db/host with a JSON body: the new record.
func (c *Client) CreateHost(ctx context.Context, in *hosts.Input) (*hosts.Record, error) {
	var rec hosts.Record
	h, err := c.do(ctx, call{base: c.BaseURL, method: "POST", path: "/ssh/db/host", in: in, out: &rec})
	if err != nil {
		return nil, err
	}
	rec.Version = versionOf(h)
	return &rec, nil
}

// UpdateHost is PUT /ssh/db/host/{id}: in replaces the configuration,
// absent (nil) credentials keep theirs. ifMatch, unless 0, is the Version
// the record must still have (412 precondition_failed otherwise).
func (c *Client) UpdateHost(ctx context.Context, id int64, in *hosts.Input, ifMatch int64) (*hosts.Record, error) {
	var rec hosts.Record
	h, err := c.do(ctx, call{base: c.BaseURL, method: "PUT", path: hostPath(id), header: ifMatchHeader(ifMatch), in: in, out: &rec})
	if err != nil {
		return nil, err
	}
	rec.Version = versionOf(h)
	return &rec, nil
}

// DeleteHost is DELETE /ssh/db/host/{id}, with its recent files and
// shortcuts; ifMatch as UpdateHost's.
func (c *Client) DeleteHost(ctx context.Context, id int64, ifMatch int64) error {
	_, err := c.do(ctx, call{base: c.BaseURL, method: "DELETE", path: hostPath(id), header: ifMatchHeader(ifMatch), out: &Message{}})
	return err
}

// ifMatchHeader is If-Match of a version, none for 0.
func ifMatchHeader(version int64) http.Header {
	if version == 0 {
		return nil
	}
	return http.Header{"If-Match": {`"` + strconv.FormatInt(version, 10) + `"`}}
}

// versionOf reads the ETag `"N"` of a host answer; 0 without one.
func versionOf(h http.Header) int64 {
	v, _ := strconv.ParseInt(strings.Trim(h.Get("ETag"), `"`), 10, 64)
	return v
}

// ImportResult is the answer of an import: one result per item, each an id
// or an error, and the lines of an ssh_config it skipped. Nothing is
// half-imported: when one item fails, none is created, and Import returns
// the answer with an *Error (400, the items' errors in Results).
type ImportResult struct {
	Results []hosts.ImportResult `json:"results"`
	Skipped []hostconfig.Skipped `json:"skipped"`
}

// importAnswer is the import's body, on success as on a refusal.
type importAnswer struct {
	Error string       `json:"error"`
	Code  sshdeck.Code `json:"code"`
	ImportResult
}

// ImportHosts is POST /ssh/db/host/import of a JSON array of hosts; an
// item's ID names it for the other items' jumpHosts and endpointHost.
func (c *Client) ImportHosts(ctx context.Context, items []hosts.JSONItem) (*ImportResult, error) {
	if items == nil {
		items = []hosts.JSONItem{}
	}
	return c.importHosts(ctx, call{in: items})
}

// ImportSSHConfig is POST /ssh/db/host/import of an OpenSSH client config
// (text/plain). local, unless "", is the alias of the Host that stands for
// the machine the config is used on: its forwards become tunnels. The
// server cannot read IdentityFiles; the sshdeck command maps the config
// itself and uploads them (ImportHosts).
func (c *Client) ImportSSHConfig(ctx context.Context, config io.Reader, local string) (*ImportResult, error) {
	var q url.Values
	if local != "" {
		q = url.Values{"local": {local}}
	}
	return c.importHosts(ctx, call{query: q, in: config, contentType: "text/plain; charset=utf-8"})
}

// importHosts sends an import and reads its answer: a refusal (400 with
// results) is an *Error and the results.
func (c *Client) importHosts(ctx context.Context, k call) (*ImportResult, error) {
	k.base, k.method, k.path = c.BaseURL, "POST", "/ssh/db/host/import"
	var answer importAnswer
	k.out = &answer
	_, err := c.do(ctx, k)
	if e, ok := err.(*Error); ok && e.Status == http.StatusBadRequest && e.Body != nil {
		if jsonErr := decodeJSON(e.Body, &answer); jsonErr == nil && answer.Results != nil {
			return &answer.ImportResult, err
		}
	}
	if err != nil {
		return nil, err
	}
	return &answer.ImportResult, nil
}

// ExportOptions are the query of GET /ssh/db/host/export.
type ExportOptions struct {
	// Format is "json" (default) or "ssh_config".
	Format string
	// Credentials: the JSON export with the hosts' credentials.
	Credentials bool
	// Local, unless 0, is the host that stands for the machine an
	// ssh_config is used on: its tunnels become forwards.
	Local int64
}

// ExportHosts is GET /ssh/db/host/export: the body as the API streams it
// (a JSON array of hosts, or an ssh_config), which the caller closes.
func (c *Client) ExportHosts(ctx context.Context, opts ExportOptions) (io.ReadCloser, error) {
	q := url.Values{}
	if opts.Format != "" {
		q.Set("format", opts.Format)
	}
	if opts.Credentials {
		q.Set("credentials", "true")
	}
	if opts.Local != 0 {
		q.Set("local", strconv.FormatInt(opts.Local, 10))
	}
	resp, err := c.send(ctx, call{base: c.BaseURL, method: "GET", path: "/ssh/db/host/export", query: q})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
