package api

import (
	"net/http"
	"strconv"

	"github.com/sshdeck/sshdeck/shared/files"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// Recent files are listed 20 at a time unless ?limit= asks for more; a
// larger limit than a page may hold is that many (as it was 100 before
// paging), where the shortcuts' ?limit= is 1..maxPage like every list's.
const defaultRecentLimit = 20

// fileRoutes binds the file manager's routes to their handlers.
func (s *Server) fileRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{
		"list-recent-files":  s.listFiles(sshdeck.RecentFile),
		"add-recent-file":    s.addRecentFile,
		"delete-recent-file": s.deleteFile(sshdeck.RecentFile, "File removed from recent"),
		"list-shortcuts":     s.listFiles(sshdeck.Shortcut),
		"add-shortcut":       s.addShortcut,
		"delete-shortcut":    s.deleteFile(sshdeck.Shortcut, "Shortcut removed"),
	}
}

// listFiles answers one list of a host's: recent entries newest first,
// shortcuts oldest first, a page at a time (page.go). The recent list is
// paged by default (20 entries); the shortcuts are all answered without
// ?limit=. A cursor is the order's key of the page's last entry (files.Cursor).
func (s *Server) listFiles(kind sshdeck.FileKind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
		q := r.URL.Query()
		hostID, err := queryHostID(q.Get("hostId"))
		if err != nil {
			return err
		}
		var limit int
		if kind == sshdeck.RecentFile {
			limit, err = recentLimit(q.Get("limit"))
		} else {
			limit, err = pageLimit(q)
		}
		if err != nil {
			return err
		}
		var after *files.Cursor
		if raw, ok := q["cursor"]; ok {
			if len(raw) > 1 {
				return sshdeck.Errorf(sshdeck.Invalid, "cursor: give one")
			}
			if after, err = files.ParseCursor(raw[0]); err != nil {
				return err
			}
		}
		entries, next, err := s.cfg.Files.List(r.Context(), caller.UserID, hostID, kind, after, limit)
		if err != nil {
			return err
		}
		if next != nil {
			setNext(w, r, limit, next.Encode())
		}
		web.WriteJSON(w, http.StatusOK, entries)
		return nil
	}
}

func (s *Server) addRecentFile(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	var in files.Input
	if err := web.DecodeBody(w, r, &in); err != nil {
		return err
	}
	if err := s.cfg.Files.AddRecent(r.Context(), caller.UserID, &in); err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, message{"File added to recent"})
	return nil
}

// addShortcut answers the same whether the shortcut was new or there
// already: either way the client's intent holds.
func (s *Server) addShortcut(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	var in files.Input
	if err := web.DecodeBody(w, r, &in); err != nil {
		return err
	}
	if _, err := s.cfg.Files.AddShortcut(r.Context(), caller.UserID, &in); err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, message{"Shortcut added"})
	return nil
}

// fileRef is the body of a delete: which entry of which host.
type fileRef struct {
	HostID *int64 `json:"hostId"`
	Path   string `json:"path"`
}

func (s *Server) deleteFile(kind sshdeck.FileKind, done string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
		var ref fileRef
		if err := web.DecodeBody(w, r, &ref); err != nil {
			return err
		}
		if ref.HostID == nil {
			return sshdeck.Errorf(sshdeck.Invalid, "hostId is required")
		}
		if err := s.cfg.Files.Delete(r.Context(), caller.UserID, *ref.HostID, kind, ref.Path); err != nil {
			return err
		}
		web.WriteJSON(w, http.StatusOK, message{done})
		return nil
	}
}

func queryHostID(raw string) (int64, error) {
	if raw == "" {
		return 0, sshdeck.Errorf(sshdeck.Invalid, "hostId is required: add ?hostId=<id of one of your hosts>")
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, sshdeck.Errorf(sshdeck.Invalid, "hostId must be a positive integer")
	}
	return id, files.CheckHostID(id)
}

// recentLimit reads ?limit= of the recent list: 20 when absent, and at
// most maxPage (a larger limit is maxPage, as it was the list's 100 before
// paging: a client asking for "all" keeps getting them, the default
// SSHDECK_LIMIT_RECENT being 100).
func recentLimit(raw string) (int, error) {
	if raw == "" {
		return defaultRecentLimit, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, sshdeck.Errorf(sshdeck.Invalid, "limit must be a positive integer (at most %d)", maxPage)
	}
	return min(n, maxPage), nil
}
