package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/sshdeck/sshdeck/shared/releases"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// releaseRoutes binds the releases feed's route to its handler.
func (s *Server) releaseRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{"releases-feed": s.releasesFeed}
}

// releasesFeed answers a page of the feed (API.md): a paging value that is
// not a positive integer is the default, a per_page over 100 is 100, and a
// page over 100 (digits of any length) is 400. When the deployment's calls
// to GitHub this minute are spent and the page is not cached, 429 says
// when to try again (the error's Retry-After, which web.WriteError writes).
func (s *Server) releasesFeed(w http.ResponseWriter, r *http.Request, _ sshdeck.Principal) error {
	if s.cfg.Releases == nil {
		return sshdeck.Errorf(sshdeck.NotFound, "the releases feed is not configured: the server has no SSHDECK_RELEASES_REPO")
	}
	q := r.URL.Query()
	page := positiveOr(q.Get("page"), 1)
	if page > releases.MaxPage || page == 1 && isLongNumber(q.Get("page")) {
		return sshdeck.Errorf(sshdeck.Invalid, "page: must be from 1 to %d", releases.MaxPage)
	}
	perPage := min(positiveOr(q.Get("per_page"), releases.DefaultPerPage), releases.MaxPerPage)
	feed, err := s.cfg.Releases.Page(r.Context(), page, perPage)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, feed)
	return nil
}

// isLongNumber reports whether raw is digits (after an optional +) too
// many for an int: a page past any limit, not a malformed one.
func isLongNumber(raw string) bool {
	digits := strings.TrimPrefix(raw, "+")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return false
	}
	_, err := strconv.Atoi(digits)
	return err != nil
}

func positiveOr(raw string, def int) int {
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return def
	}
	return n
}
