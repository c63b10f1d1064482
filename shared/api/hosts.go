package api

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// hostRoutes binds the host routes of the route table to their handlers.
func (s *Server) hostRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{
		"list-hosts":   s.listHosts,
		"create-host":  s.createHost,
		"get-host":     s.getHost,
		"update-host":  s.updateHost,
		"delete-host":  s.deleteHost,
		"import-hosts": s.importHosts,
		"export-hosts": s.exportHosts,
	}
}

// listPage is how many hosts a list reads from the store at a time.
const listPage = 100

// listHosts answers the caller's hosts in id order. Without ?limit= it
// streams them all a page of the store at a time, so that the memory a list
// takes is bounded by a page, not by the caller's hosts; with ?limit=N it
// answers the N after ?cursor= (from the first without one) and a Link to
// the next page when more follow (page.go).
//
// Ids only grow and are never reused, and each page starts after the last
// id of the one before: a host that exists for the whole walk is on
// exactly one page, whatever is created or deleted meanwhile; one created
// during the walk is on a later page, one deleted may or may not be seen.
func (s *Server) listHosts(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	ctx := r.Context()
	q := r.URL.Query()
	limit, err := pageLimit(q)
	if err != nil {
		return err
	}
	after, err := parseHostCursor(q)
	if err != nil {
		return err
	}
	chunk := listPage
	if limit > 0 {
		// One more than the page tells whether another follows.
		chunk = limit + 1
	}
	page, err := s.cfg.Hosts.Page(ctx, caller.UserID, after, chunk)
	if err != nil {
		return err // nothing written yet: an error answer is still possible
	}
	if limit > 0 && len(page) > limit {
		page = page[:limit]
		setNext(w, r, limit, hostCursor(page[limit-1].ID))
	}
	list := web.StartJSONArray(w)
	var item []byte
	for {
		for _, rec := range page {
			item = appendHost(item[:0], rec)
			if err := list.AppendRaw(item); err != nil {
				return s.abort(r, err)
			}
		}
		if limit > 0 || len(page) < listPage {
			break
		}
		if page, err = s.cfg.Hosts.Page(ctx, caller.UserID, page[len(page)-1].ID, listPage); err != nil {
			return s.abort(r, err)
		}
	}
	if err := list.End(); err != nil {
		return s.abort(r, err)
	}
	return nil
}

// abort logs why a streamed answer cannot be finished, then cuts it.
func (s *Server) abort(r *http.Request, err error) error {
	if r.Context().Err() == nil {
		s.log.LogAttrs(r.Context(), slog.LevelError, "answer cut short",
			slog.String("request_id", web.RequestID(r.Context())), slog.String("error", err.Error()))
	}
	web.Abort()
	return nil
}

func (s *Server) getHost(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	id, err := hostID(r)
	if err != nil {
		return err
	}
	rec, err := s.cfg.Hosts.Get(r.Context(), caller.UserID, id)
	if err != nil {
		return err
	}
	writeHost(w, http.StatusOK, rec)
	return nil
}

func (s *Server) createHost(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	in, err := decodeHostInput(w, r)
	if err != nil {
		return err
	}
	rec, err := s.cfg.Hosts.Create(r.Context(), caller.UserID, in)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/ssh/db/host/"+strconv.FormatInt(rec.ID, 10))
	writeHost(w, http.StatusCreated, rec)
	return nil
}

func (s *Server) updateHost(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	id, err := hostID(r)
	if err != nil {
		return err
	}
	in, err := decodeHostInput(w, r)
	if err != nil {
		return err
	}
	rec, err := s.cfg.Hosts.Update(r.Context(), caller.UserID, id, in, ifMatch(r))
	if err != nil {
		return err
	}
	writeHost(w, http.StatusOK, rec)
	return nil
}

func (s *Server) deleteHost(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	id, err := hostID(r)
	if err != nil {
		return err
	}
	if err := s.cfg.Hosts.Delete(r.Context(), caller.UserID, id, ifMatch(r)); err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, message{"SSH host deleted"})
	return nil
}

type message struct {
	Message string `json:"message"`
}

func writeHost(w http.ResponseWriter, status int, rec *hosts.Record) {
	w.Header().Set("ETag", etag(rec.Version))
	web.WriteJSON(w, status, rec)
}

// hostID reads the {id} path segment: a positive integer.
func hostID(r *http.Request) (int64, error) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 || strings.TrimLeft(raw, "0123456789") != "" {
		return 0, sshdeck.Errorf(sshdeck.Invalid, "host id must be a positive integer")
	}
	return id, nil
}

// etag is a host version as a strong entity tag.
func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// ifMatch turns an If-Match header into a precondition: "*" matches any
// version, otherwise the version must be one of the listed strong ETags.
// Weak or malformed tags match nothing, as strong comparison requires.
func ifMatch(r *http.Request) *hosts.Precondition {
	values := r.Header.Values("If-Match")
	if len(values) == 0 {
		return nil
	}
	p := &hosts.Precondition{}
	for _, v := range values {
		for tag := range strings.SplitSeq(v, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" {
				p.Any = true
			}
			if version, ok := parseETag(tag); ok {
				p.Versions = append(p.Versions, version)
			}
		}
	}
	return p
}

// parseETag reads a version back from its strong entity tag (etag).
func parseETag(tag string) (int64, bool) {
	digits, ok := strings.CutPrefix(tag, `"`)
	if digits, ok = strings.CutSuffix(digits, `"`); !ok {
		return 0, false
	}
	version, err := strconv.ParseInt(digits, 10, 64)
	return version, err == nil && version > 0 && etag(version) == tag
}
