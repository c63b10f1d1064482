package api

import (
	"net/http"
	"strconv"

	"github.com/sshdeck/sshdeck/shared/files"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// Recent files are listed 20 at a time unless ?limit= asks for up to 100.
const (
	defaultRecentLimit = 20
	maxRecentLimit     = sshdeck.MaxRecentFiles
)

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

func (s *Server) listFiles(kind sshdeck.FileKind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
		q := r.URL.Query()
		hostID, err := queryHostID(q.Get("hostId"))
		if err != nil {
			return err
		}
		limit := 0
		if kind == sshdeck.RecentFile {
			if limit, err = recentLimit(q.Get("limit")); err != nil {
				return err
			}
		}
		entries, err := s.cfg.Files.List(r.Context(), caller.UserID, hostID, kind, limit)
		if err != nil {
			return err
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

// recentLimit reads ?limit=: 20 when absent, at most 100.
func recentLimit(raw string) (int, error) {
	if raw == "" {
		return defaultRecentLimit, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, sshdeck.Errorf(sshdeck.Invalid, "limit must be a positive integer (at most %d)", maxRecentLimit)
	}
	return min(n, maxRecentLimit), nil
}
