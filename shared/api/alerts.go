package api

import (
	"net/http"

	"github.com/sshdeck/sshdeck/shared/alerts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// alertRoutes binds the alert routes to their handlers.
func (s *Server) alertRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{
		"list-alerts":   s.listAlerts,
		"dismiss-alert": s.dismissAlert,
		"publish-alert": s.publishAlert,
		"delete-alert":  s.deleteAlert,
	}
}

func (s *Server) listAlerts(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	visible, err := s.cfg.Alerts.Visible(r.Context(), caller.UserID)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, visible)
	return nil
}

type dismissal struct {
	AlertID string `json:"alertId"`
}

func (s *Server) dismissAlert(w http.ResponseWriter, r *http.Request, caller sshdeck.Principal) error {
	var d dismissal
	if err := web.DecodeBody(w, r, &d); err != nil {
		return err
	}
	if err := s.cfg.Alerts.Dismiss(r.Context(), caller.UserID, d.AlertID); err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, message{"Alert dismissed"})
	return nil
}

func (s *Server) publishAlert(w http.ResponseWriter, r *http.Request, _ sshdeck.Principal) error {
	var in alerts.Input
	if err := web.DecodeBody(w, r, &in); err != nil {
		return err
	}
	a, err := s.cfg.Alerts.Publish(r.Context(), &in)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/alerts/"+a.ID)
	web.WriteJSON(w, http.StatusCreated, a)
	return nil
}

func (s *Server) deleteAlert(w http.ResponseWriter, r *http.Request, _ sshdeck.Principal) error {
	if err := s.cfg.Alerts.Delete(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, message{"Alert deleted"})
	return nil
}
