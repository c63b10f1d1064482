package api

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// Paging of the lists (API.md, "Limits, paging and tenancy"): ?limit=N
// (1..maxPage) answers the first N items and, when more follow, a Link
// header to the next page: ?limit=N&cursor=C, the other parameters of the
// request kept. The cursor is opaque; a malformed one is 400. A Link is a
// relative reference of the query alone ("<?limit=…>"), which resolves
// against the path the client asked for, behind whatever prefix (an API
// Gateway stage) it has.
const maxPage = 500

// pageLimit reads ?limit= of a list whose pages are asked for: 0 when
// absent (the whole list), else 1..maxPage.
func pageLimit(q url.Values) (int, error) {
	raw, ok := q["limit"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(raw[0])
	if err != nil || n < 1 || n > maxPage || len(raw) > 1 {
		return 0, sshdeck.Errorf(sshdeck.Invalid, "limit must be a whole number from 1 to %d", maxPage)
	}
	return n, nil
}

// setNext sets the Link header to the page after the one answered: the
// request's query with cursor set.
func setNext(w http.ResponseWriter, r *http.Request, limit int, cursor string) {
	q := r.URL.Query()
	q.Set("limit", strconv.Itoa(limit))
	q.Set("cursor", cursor)
	w.Header().Set("Link", "<?"+q.Encode()+`>; rel="next"`)
}

// A host list's cursor is the last id of its page, opaque: URL-safe base64
// of its decimal digits.
func hostCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString(strconv.AppendInt(nil, id, 10))
}

// parseHostCursor reads ?cursor= of the host list: the id the page starts
// after, 0 when absent.
func parseHostCursor(q url.Values) (int64, error) {
	raw, ok := q["cursor"]
	if !ok {
		return 0, nil
	}
	if len(raw) == 1 {
		if b, err := base64.RawURLEncoding.DecodeString(raw[0]); err == nil {
			if id, err := strconv.ParseInt(string(b), 10, 64); err == nil && id > 0 && hostCursor(id) == raw[0] {
				return id, nil
			}
		}
	}
	return 0, sshdeck.Errorf(sshdeck.Invalid, "cursor: not a cursor of this list (take it from the Link header of the page before)")
}

// writePage answers a list its service returns whole (users, tokens: a
// few hundred at most), a page at a time when ?limit= asks: the cursor is
// the key (the id) of the page's last item, opaque as the others.
func writePage[T any](w http.ResponseWriter, r *http.Request, items []T, key func(T) string) error {
	q := r.URL.Query()
	limit, err := pageLimit(q)
	if err != nil {
		return err
	}
	if raw, ok := q["cursor"]; ok {
		i := -1
		if b, err := base64.RawURLEncoding.DecodeString(raw[0]); err == nil && len(raw) == 1 {
			i = slices.IndexFunc(items, func(item T) bool { return key(item) == string(b) })
		}
		if i < 0 {
			return sshdeck.Errorf(sshdeck.Invalid, "cursor: not a cursor of this list (take it from the Link header of the page before)")
		}
		items = items[i+1:]
	}
	if limit > 0 && len(items) > limit {
		items = items[:limit]
		setNext(w, r, limit, base64.RawURLEncoding.EncodeToString([]byte(key(items[limit-1]))))
	}
	web.WriteJSON(w, http.StatusOK, items)
	return nil
}
