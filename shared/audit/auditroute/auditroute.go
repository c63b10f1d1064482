// Package auditroute is the tail both services' route wrappers share
// (shared/api, tunnel-service/tunnelapi) once a caller is authenticated:
// the route's scope check and its audit record. It stands apart from
// package audit so that what records without serving HTTP (audit-events)
// links neither the route table nor the web toolkit.
package auditroute

import (
	"net/http"

	"github.com/sshdeck/sshdeck/shared/audit"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// Run runs handle, caller's request of route from sourceIP, unless the
// caller's token lacks the route's scope. When route is audited
// (routes.Route.Audited) and rec is not nil, handle runs with the
// request's audit note in its context and the note is finished with the
// outcome, a refused scope being the caller's failure. A public route's
// request refused as malformed (Invalid) leaves no record: it named no one,
// and no one may fill the trail without trying a credential.
func Run(rec *audit.Recorder, r *http.Request, route routes.Route, caller sshdeck.Principal, sourceIP string, handle func(*http.Request) error) error {
	serve := func(r *http.Request) error {
		if !caller.Can(route.Scope) {
			return sshdeck.MissingScope(route.Scope, route.Method, route.Path)
		}
		return handle(r)
	}
	if rec == nil || !route.Audited() {
		return serve(r)
	}
	ctx, note := rec.Begin(r.Context(), caller.UserID, route.Name, r.URL.Path, web.RequestID(r.Context()), sourceIP)
	err := serve(r.WithContext(ctx))
	if !route.Public || sshdeck.ErrorCode(err) != sshdeck.Invalid {
		rec.Finish(ctx, note, err)
	}
	return err
}
