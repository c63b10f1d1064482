package auditbench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
)

// requestFunc returns the i-th request of a worker (load.Config.Request)
// to the server of a mode.
type requestFunc func(m mode, worker, i int) (*http.Request, error)

// route is one write route measured.
type route struct {
	// Name is the route table's; Call is the method and path, for the
	// report.
	Name, Call string
	// Status is the answer every request must get: 0 for any 2xx, else
	// the failure's status.
	Status int
	// prepare makes what a run's requests write to, new for each run so
	// that every run starts from the same state whatever the runs before
	// it wrote (a host's shortcuts are counted at each add: a host that
	// kept the previous runs' would make each run slower than the last).
	// It is not measured, and not audited.
	prepare func(ctx context.Context, w *world, workers int) (requestFunc, error)
	// ownStore: each of the route's runs is over a new store of its own,
	// set up as the shared one (the user and their token), rather than
	// over the store the other routes share. For create-token: the
	// embedded store's CreateTokenWithin reads every token of the store,
	// anyone's, revoked and expired ones included, to count the user's
	// live ones, and a run makes hundreds or thousands; in one store each
	// run would start slower than the last by the tokens of the runs
	// before it (in a trial over one store, at concurrency 1: unaudited
	// 181 then 105 req/s, audited 115 then 69).
	ownStore bool
}

// absentHost is a host id no run reaches: the user's ids count up from 1,
// one per host created.
const absentHost = 1 << 40

// routes are the write routes measured, and the failure.
var routes = []route{
	{Name: "create-host", Call: "POST /ssh/db/host", prepare: func(_ context.Context, w *world, _ int) (requestFunc, error) {
		return func(m mode, worker, i int) (*http.Request, error) {
			return w.newRequest(m, "POST", "/ssh/db/host", hostBody(fmt.Sprintf("web-%d-%d", worker, i), i))
		}, nil
	}},
	// Each worker updates its own host, so that no two requests race for
	// one version (a lost race is a retry, not the route's cost).
	{Name: "update-host", Call: "PUT /ssh/db/host/{id}", prepare: func(ctx context.Context, w *world, workers int) (requestFunc, error) {
		ids, err := w.newHosts(ctx, workers)
		if err != nil {
			return nil, err
		}
		return func(m mode, worker, i int) (*http.Request, error) {
			return w.newRequest(m, "PUT", "/ssh/db/host/"+strconv.FormatInt(ids[worker], 10), hostBody("web", i))
		}, nil
	}},
	// One host's list: after its first 100 adds (the cap) every add of
	// the 150 paths moves an entry to the top or trims the oldest.
	{Name: "add-recent-file", Call: "POST /ssh/file_manager/recent", prepare: func(ctx context.Context, w *world, _ int) (requestFunc, error) {
		ids, err := w.newHosts(ctx, 1)
		if err != nil {
			return nil, err
		}
		return func(m mode, worker, i int) (*http.Request, error) {
			path := fmt.Sprintf("/var/log/app/%03d.log", (worker*37+i)%150)
			return w.newRequest(m, "POST", "/ssh/file_manager/recent", map[string]any{"path": path, "isSSH": true, "hostId": ids[0]})
		}, nil
	}},
	// A new path every request, spread over hosts new for the run: each
	// add counts its host's shortcuts, so they are kept few.
	{Name: "add-shortcut", Call: "POST /ssh/file_manager/shortcuts", prepare: func(ctx context.Context, w *world, _ int) (requestFunc, error) {
		ids, err := w.newHosts(ctx, shortcutHosts)
		if err != nil {
			return nil, err
		}
		return func(m mode, worker, i int) (*http.Request, error) {
			path := fmt.Sprintf("/srv/share/%d/%d", worker, i)
			return w.newRequest(m, "POST", "/ssh/file_manager/shortcuts", map[string]any{"path": path, "name": "share", "isSSH": true, "hostId": ids[(worker+i)%len(ids)]})
		}, nil
	}},
	{Name: "create-token", Call: "POST /tokens", ownStore: true, prepare: func(_ context.Context, w *world, _ int) (requestFunc, error) {
		return func(m mode, worker, i int) (*http.Request, error) {
			return w.newRequest(m, "POST", "/tokens", map[string]any{"name": fmt.Sprintf("ci-%d-%d", worker, i), "ttl": 3600})
		}, nil
	}},
	// A failure: the host is read, is not there, and nothing is written
	// but, audited, the failure's record alone (audit.Recorder.Finish).
	{Name: "update-host, absent (404)", Call: "PUT /ssh/db/host/{absent id}", Status: http.StatusNotFound, prepare: func(_ context.Context, w *world, _ int) (requestFunc, error) {
		return func(m mode, worker, i int) (*http.Request, error) {
			return w.newRequest(m, "PUT", "/ssh/db/host/"+strconv.Itoa(absentHost), hostBody("web", i))
		}, nil
	}},
}

// shortcutHosts is how many hosts a run of add-shortcut spreads its adds
// over.
const shortcutHosts = 64

// hostBody is a host with a password, so that every write seals it; an odd
// i gives the other of two bodies, so that an update alternating them is
// always a change.
func hostBody(name string, i int) map[string]any {
	port, password := 22, "pw-even"
	if i%2 == 1 {
		port, password = 2222, "pw-odd"
	}
	return map[string]any{
		"name": name, "ip": "10.0.0.5", "port": port, "username": "deploy", "authType": "password",
		"password": password, "folder": "prod/eu", "tags": []string{"prod", "eu"},
		"enableTerminal": true, "enableTunnel": true, "enableFileManager": true, "defaultPath": "/var/www",
	}
}
