package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/web"
)

// hops is a jumpHosts value for a JSON body.
func hops(ids ...int64) []map[string]any {
	out := []map[string]any{}
	for _, id := range ids {
		out = append(out, map[string]any{"hostId": id})
	}
	return out
}

func hopsOf(r hosts.Record) []int64 {
	ids := []int64{}
	for _, h := range r.JumpHosts {
		ids = append(ids, h.HostID)
	}
	return ids
}

// wantAnswer checks an error answer's status, code and message.
func wantAnswer(t *testing.T, what string, resp *response, status int, code, msg string) {
	t.Helper()
	var body web.ErrorBody
	resp.json(t, &body)
	if resp.Status != status || string(body.Code) != code || body.Error != msg {
		t.Errorf("%s: %d %s, want %d %s %q", what, resp.Status, resp.Body, status, code, msg)
	}
}

func TestJumpHostsInAndOut(t *testing.T) {
	e := newEnv(t)
	bastion := e.createHost(e.alice, map[string]any{"name": "bastion"})
	inner := e.createHost(e.alice, map[string]any{"name": "inner"})
	// JSON: the order is the chain's, first hop first.
	h := e.createHost(e.alice, map[string]any{"name": "db", "jumpHosts": hops(bastion.ID, inner.ID)})
	if !slices.Equal(hopsOf(h), []int64{bastion.ID, inner.ID}) {
		t.Fatalf("created %+v", h.JumpHosts)
	}
	if got := e.get(e.alice, fmt.Sprintf("/ssh/db/host/%d", h.ID)).host(t); !slices.Equal(hopsOf(got), []int64{1, 2}) {
		t.Fatalf("read back %+v", got.JumpHosts)
	}
	// Multipart: in the data part.
	resp := e.sendMultipart("POST", e.alice, "/ssh/db/host", `{"ip":"10.0.0.6","username":"u","jumpHosts":[{"hostId":2},{"hostId":1}]}`, nil)
	if resp.Status != http.StatusCreated || !slices.Equal(hopsOf(resp.host(t)), []int64{2, 1}) {
		t.Fatalf("multipart create: %d %s", resp.Status, resp.Body)
	}
	resp = e.sendMultipart("PUT", e.alice, "/ssh/db/host/4", `{"ip":"10.0.0.6","username":"u","jumpHosts":[{"hostId":3}]}`, nil)
	if resp.Status != http.StatusOK || !slices.Equal(hopsOf(resp.host(t)), []int64{3}) {
		t.Fatalf("multipart update: %d %s", resp.Status, resp.Body)
	}
	// Every answer has jumpHosts, [] when none, after tunnelConnections, as
	// the list writes it (appendHost) and the single host (encoding/json).
	list := e.get(e.alice, "/ssh/db/host").Body
	one := e.get(e.alice, "/ssh/db/host/1").Body
	for _, body := range [][]byte{list, one} {
		if !strings.Contains(string(body), `"tunnelConnections":[],"jumpHosts":[],"identityFile":"","password"`) {
			t.Errorf("a host without jump hosts: %s", body)
		}
	}
	if !strings.Contains(string(list), `"jumpHosts":[{"hostId":1},{"hostId":2}]`) || !strings.Contains(string(list), `"jumpHosts":[{"hostId":3}]`) {
		t.Errorf("the list: %s", list)
	}
	// null is absent: no jump hosts.
	resp = e.sendJSON("PUT", e.alice, "/ssh/db/host/4", []byte(`{"ip":"10.0.0.6","username":"u","jumpHosts":null}`))
	if resp.Status != http.StatusOK || len(resp.host(t).JumpHosts) != 0 {
		t.Fatalf("jumpHosts null: %d %s", resp.Status, resp.Body)
	}
}

func TestJumpHostsMalformed(t *testing.T) {
	e := newEnv(t)
	e.createHost(e.alice, nil)
	for body, says := range map[string]string{
		`{"ip":"h","username":"u","jumpHosts":{"hostId":1}}`:                      "jumpHosts: expected an array",
		`{"ip":"h","username":"u","jumpHosts":[1]}`:                               "jumpHosts: expected an object",
		`{"ip":"h","username":"u","jumpHosts":[{"hostId":"1"}]}`:                  "jumpHosts.hostId: expected an integer",
		`{"ip":"h","username":"u","jumpHosts":[{"hostId":1.5}]}`:                  "jumpHosts.hostId: expected an integer",
		`{"ip":"h","username":"u","jumpHosts":[{"hostId":99999999999999999999}]}`: "jumpHosts.hostId: expected an integer",
		`{"ip":"h","username":"u","jumpHosts":[{"hostId":-1}]}`:                   "jumpHosts[0].hostId must be a positive host id",
		`{"ip":"h","username":"u","jumpHosts":[{}]}`:                              "jumpHosts[0].hostId must be a positive host id",
		`{"ip":"h","username":"u","jumpHosts":[null]}`:                            "jumpHosts[0].hostId must be a positive host id",
		`{"ip":"h","username":"u","jumpHosts":[{"hostId":1},{"hostId":1}]}`:       "jumpHosts[1]: host 1 is jumpHosts[0] already; a chain passes each host once",
	} {
		for _, target := range []struct{ method, path string }{{"POST", "/ssh/db/host"}, {"PUT", "/ssh/db/host/1"}} {
			resp := e.sendJSON(target.method, e.alice, target.path, []byte(body))
			if resp.Status != http.StatusBadRequest || !strings.Contains(string(resp.Body), says) {
				t.Errorf("%s %s: %d %s, want 400 saying %q", target.method, body, resp.Status, resp.Body, says)
			}
		}
	}
	if list := e.get(e.alice, "/ssh/db/host").Body; strings.Count(string(list), `"id"`) != 1 || !strings.Contains(string(list), `"jumpHosts":[]`) {
		t.Errorf("after the refused writes: %s", list)
	}
}

// TestJumpHostOfAnotherUser: bob's host reads exactly as a host that does
// not exist, whichever way it is named.
func TestJumpHostOfAnotherUser(t *testing.T) {
	e := newEnv(t)
	e.createHost(e.bob, nil)
	e.createHost(e.bob, nil)
	mine := e.createHost(e.alice, nil) // alice's 1; bob's 1 and 2
	answers := map[int64]*response{}
	for _, id := range []int64{2, 3} { // bob's, nobody's
		answers[id] = e.sendJSON("POST", e.alice, "/ssh/db/host", map[string]any{"ip": "h", "username": "u", "jumpHosts": hops(mine.ID, id)})
		wantAnswer(t, fmt.Sprintf("create naming host %d", id), answers[id], 400, "invalid", fmt.Sprintf("jumpHosts[1]: host %d not found", id))
		resp := e.sendJSON("PUT", e.alice, "/ssh/db/host/1", map[string]any{"ip": "h", "username": "u", "jumpHosts": hops(id)})
		wantAnswer(t, fmt.Sprintf("update naming host %d", id), resp, 400, "invalid", fmt.Sprintf("jumpHosts[0]: host %d not found", id))
	}
	// The same answer but for the id itself: headers too.
	a, b := answers[2], answers[3]
	if strings.ReplaceAll(string(a.Body), "host 2", "host 3") != string(b.Body) || a.Header.Get("Content-Type") != b.Header.Get("Content-Type") ||
		len(a.Header) != len(b.Header) {
		t.Errorf("bob's host and no host answer differently:\n%v %s\n%v %s", a.Header, a.Body, b.Header, b.Body)
	}
	// Nothing was created, and bob's hosts are as they were.
	if list := e.get(e.alice, "/ssh/db/host").Body; strings.Count(string(list), `"id"`) != 1 {
		t.Errorf("alice's hosts: %s", list)
	}
}

func TestJumpHostSelfAndCycles(t *testing.T) {
	e := newEnv(t)
	for range 4 {
		e.createHost(e.alice, nil)
	}
	put := func(id int64, ids ...int64) *response {
		return e.sendJSON("PUT", e.alice, fmt.Sprintf("/ssh/db/host/%d", id), map[string]any{"ip": "h", "username": "u", "jumpHosts": hops(ids...)})
	}
	wantAnswer(t, "a host its own hop", put(1, 1), 400, "invalid", "jumpHosts[0]: host 1 is this host; a host cannot be its own jump host")
	if resp := put(2, 1); resp.Status != http.StatusOK {
		t.Fatalf("2 through 1: %d %s", resp.Status, resp.Body)
	}
	// An update that introduces a cycle: 1 → 2 → 1.
	wantAnswer(t, "2-cycle", put(1, 2), 400, "invalid", "jumpHosts[0]: a cycle: 1 → 2 → 1")
	if resp := put(3, 2); resp.Status != http.StatusOK {
		t.Fatalf("3 through 2: %d %s", resp.Status, resp.Body)
	}
	// Through existing hosts, behind another hop: 1 → 3 → 2 → 1.
	wantAnswer(t, "3-cycle", put(1, 4, 3), 400, "invalid", "jumpHosts[1]: a cycle: 1 → 3 → 2 → 1")
	if got := e.get(e.alice, "/ssh/db/host/1"); got.Header.Get("ETag") != `"1"` || len(got.host(t).JumpHosts) != 0 {
		t.Errorf("host 1 after the refused updates: %s %s", got.Header.Get("ETag"), got.Body)
	}
}

func TestJumpHostLimit(t *testing.T) {
	e := newEnv(t)
	limits := config.DefaultLimits
	limits.JumpHosts = 2
	e.setLimits(limits)
	e.createHost(e.alice, nil)
	e.createHost(e.alice, map[string]any{"jumpHosts": hops(1)})
	e.createHost(e.alice, map[string]any{"jumpHosts": hops(2)}) // 2, 1: at the limit
	const msg = "limit of jump hosts per chain reached: the route to the host would pass more than 2 hosts, counting the jump hosts' own (SSHDECK_LIMIT_JUMP_HOSTS); shorten the chain"
	body := map[string]any{"ip": "h", "username": "u", "jumpHosts": hops(3)} // 3, 2, 1
	wantAnswer(t, "create", e.sendJSON("POST", e.alice, "/ssh/db/host", body), 409, "limit_exceeded", msg)
	// The hops' own chains count: [2, 1] is 1, 2, 1.
	four := e.createHost(e.alice, nil)
	wantAnswer(t, "update", e.sendJSON("PUT", e.alice, fmt.Sprintf("/ssh/db/host/%d", four.ID), map[string]any{"ip": "h", "username": "u", "jumpHosts": hops(2, 1)}), 409, "limit_exceeded", msg)
}

// TestJumpHostDeleted: deleting a hop is allowed; the hosts behind it keep
// its id, are read and listed, and are 400 to save until fixed.
func TestJumpHostDeleted(t *testing.T) {
	e := newEnv(t)
	e.createHost(e.alice, nil)
	e.createHost(e.alice, map[string]any{"jumpHosts": hops(1)})
	if resp := e.do(request{method: "DELETE", path: "/ssh/db/host/1", token: e.alice}); resp.Status != http.StatusOK {
		t.Fatalf("delete: %d %s", resp.Status, resp.Body)
	}
	if got := e.get(e.alice, "/ssh/db/host/2").host(t); !slices.Equal(hopsOf(got), []int64{1}) {
		t.Fatalf("host 2: %+v", got.JumpHosts)
	}
	if list := e.get(e.alice, "/ssh/db/host"); list.Status != http.StatusOK || !strings.Contains(string(list.Body), `"jumpHosts":[{"hostId":1}]`) {
		t.Fatalf("list: %d %s", list.Status, list.Body)
	}
	same := map[string]any{"ip": "10.0.0.5", "username": "deploy", "jumpHosts": hops(1)}
	wantAnswer(t, "saved as it is", e.sendJSON("PUT", e.alice, "/ssh/db/host/2", same), 400, "invalid", "jumpHosts[0]: host 1 not found")
	fixed := map[string]any{"ip": "10.0.0.5", "username": "deploy"}
	if resp := e.sendJSON("PUT", e.alice, "/ssh/db/host/2", fixed); resp.Status != http.StatusOK || len(resp.host(t).JumpHosts) != 0 {
		t.Fatalf("fixed: %d %s", resp.Status, resp.Body)
	}
}
