package api

import (
	"net/http"
	"strconv"

	"github.com/sshdeck/sshdeck/shared/releases"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// releasesFeed answers a page of the feed. Paging parameters never fail the
// request (API.md): a value that is not a positive integer is the default,
// a per_page over 100 is 100.
// releaseRoutes binds the releases feed's route to its handler.
func (s *Server) releaseRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{"releases-feed": s.releasesFeed}
}

func (s *Server) releasesFeed(w http.ResponseWriter, r *http.Request, _ sshdeck.Principal) error {
	if s.cfg.Releases == nil {
		return sshdeck.Errorf(sshdeck.NotFound, "the releases feed is not configured: the server has no SSHDECK_RELEASES_REPO")
	}
	q := r.URL.Query()
	page := positiveOr(q.Get("page"), 1)
	perPage := min(positiveOr(q.Get("per_page"), releases.DefaultPerPage), releases.MaxPerPage)
	feed, err := s.cfg.Releases.Page(r.Context(), page, perPage)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, feed)
	return nil
}

func positiveOr(raw string, def int) int {
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return def
	}
	return n
}
