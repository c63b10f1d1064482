package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// MaxPage is the largest page the API answers (?limit= 1..500).
const MaxPage = 500

// pages yields the items of a paged list (API.md, "Limits, paging and
// tenancy"): GET path?limit=pageSize, then each page its answer's
// Link rel="next" names, until a page has none. It stops at the first
// error, which it yields with T's zero value. A pageSize outside 1..MaxPage
// is MaxPage.
func pages[T any](c *Client, ctx context.Context, base, path string, query url.Values, pageSize int) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		if pageSize < 1 || pageSize > MaxPage {
			pageSize = MaxPage
		}
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		q.Set("limit", strconv.Itoa(pageSize))
		first, err := endpoint(base, path, q)
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		for next := first; next != ""; {
			var page []T
			h, err := c.do(ctx, call{base: base, method: "GET", path: path, next: next, out: &page})
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range page {
				if !yield(item, nil) {
					return
				}
			}
			if next, err = nextPage(next, h); err != nil {
				var zero T
				yield(zero, err)
				return
			}
		}
	}
}

// collect is the whole of a paged list.
func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	all := []T{}
	for item, err := range seq {
		if err != nil {
			return nil, err
		}
		all = append(all, item)
	}
	return all, nil
}

// nextPage is the absolute URL of the page after the one answered at
// current: its Link rel="next" resolved against current (the API writes a
// relative "<?limit=…&cursor=…>", which keeps whatever stage prefix the
// base URL has), or "" when it is the last. A Link to another origin is an
// error: following it would send the token there.
func nextPage(current string, h http.Header) (string, error) {
	ref := linkNext(h.Values("Link"))
	if ref == "" {
		return "", nil
	}
	cur, err := url.Parse(current)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("the Link to the next page %q does not parse: %w", ref, err)
	}
	next := cur.ResolveReference(r)
	if next.Scheme != cur.Scheme || next.Host != cur.Host {
		return "", fmt.Errorf("the Link to the next page leads to %s, not to %s: not followed", next.Host, cur.Host)
	}
	if next.String() == cur.String() {
		return "", fmt.Errorf("the Link to the next page is the page itself: not followed")
	}
	return next.String(), nil
}

// linkNext is the target of the rel="next" link of Link header values
// (RFC 8288: `<target>; rel="next"`, several links comma-separated).
func linkNext(values []string) string {
	for _, v := range values {
		for _, link := range strings.Split(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(link), ";")
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			for _, p := range strings.Split(params, ";") {
				name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(name, "rel") && slicesContainsFold(strings.Fields(strings.Trim(value, `"`)), "next") {
					return target[1 : len(target)-1]
				}
			}
		}
	}
	return ""
}

func slicesContainsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
