package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/files"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func (e *env) listFiles(token, list, query string) []*files.Entry {
	e.t.Helper()
	resp := e.get(token, "/ssh/file_manager/"+list+"?"+query)
	if resp.Status != http.StatusOK {
		e.t.Fatalf("GET %s?%s: %d %s", list, query, resp.Status, resp.Body)
	}
	var entries []*files.Entry
	resp.json(e.t, &entries)
	return entries
}

func (e *env) addFile(token, list string, body map[string]any, wantMessage string) {
	e.t.Helper()
	resp := e.sendJSON("POST", token, "/ssh/file_manager/"+list, body)
	if resp.Status != http.StatusOK || !strings.Contains(string(resp.Body), `"message":"`+wantMessage+`"`) {
		e.t.Fatalf("POST %s %v: %d %s", list, body, resp.Status, resp.Body)
	}
}

func entryPaths(es []*files.Entry) string {
	var ps []string
	for _, e := range es {
		ps = append(ps, e.Path)
	}
	return strings.Join(ps, " ")
}

func TestRecentFiles(t *testing.T) {
	e := newEnv(t)
	h := e.createHost(e.alice, nil)
	if got := e.get(e.alice, fmt.Sprintf("/ssh/file_manager/recent?hostId=%d", h.ID)); got.Status != 200 || strings.TrimSpace(string(got.Body)) != "[]" {
		t.Fatalf("empty list: %d %s", got.Status, got.Body)
	}
	first := e.clock().UTC().Truncate(time.Millisecond)
	for _, p := range []string{"/etc/hosts", "/var/log/syslog/", "/srv/app.yaml"} {
		e.addFile(e.alice, "recent", map[string]any{"path": p, "hostId": h.ID, "isSSH": true, "sshSessionId": "s-1"}, "File added to recent")
		e.advance(time.Second)
	}
	list := e.listFiles(e.alice, "recent", fmt.Sprintf("hostId=%d", h.ID))
	if got := entryPaths(list); got != "/srv/app.yaml /var/log/syslog/ /etc/hosts" {
		t.Fatalf("recent: %s, want newest first", got)
	}
	if l := list[1]; l.Name != "syslog" || !l.IsSSH || l.SSHSessionID != "s-1" || l.HostID != h.ID {
		t.Fatalf("entry %+v: want the name from the last segment and the fields sent", l)
	}
	// Re-adding moves the entry to the top with its new values; it keeps
	// when it was first added.
	e.addFile(e.alice, "recent", map[string]any{"path": "/etc/hosts", "hostId": h.ID, "name": "hosts file"}, "File added to recent")
	list = e.listFiles(e.alice, "recent", fmt.Sprintf("hostId=%d", h.ID))
	top := list[0]
	if got := entryPaths(list); got != "/etc/hosts /srv/app.yaml /var/log/syslog/" {
		t.Fatalf("recent after re-adding /etc/hosts: %s", got)
	}
	if top.Name != "hosts file" || top.IsSSH || !top.CreatedAt.Equal(first) || !top.LastOpened.Equal(first.Add(3*time.Second)) {
		t.Fatalf("re-added entry %+v: want the new values, first added at %s, last opened 3 s later", top, first)
	}
	for query, want := range map[string]int{"limit=2": 2, "limit=100": 3, "limit=500": 3} {
		if got := e.listFiles(e.alice, "recent", fmt.Sprintf("hostId=%d&%s", h.ID, query)); len(got) != want {
			t.Errorf("recent?%s: %d entries, want %d", query, len(got), want)
		}
	}
}

// TestRecentFilesKeep100 adds 105 entries: the list keeps the 100 newest,
// answers 20 by default and at most 100.
func TestRecentFilesKeep100(t *testing.T) {
	e := newEnv(t)
	h := e.createHost(e.alice, nil)
	for i := range 105 {
		e.addFile(e.alice, "recent", map[string]any{"path": fmt.Sprintf("/f%03d", i), "hostId": h.ID}, "File added to recent")
		e.advance(time.Millisecond)
	}
	if got := e.listFiles(e.alice, "recent", fmt.Sprintf("hostId=%d", h.ID)); len(got) != 20 || got[0].Path != "/f104" {
		t.Fatalf("default page: %d entries from %s, want 20 from /f104", len(got), got[0].Path)
	}
	all := e.listFiles(e.alice, "recent", fmt.Sprintf("hostId=%d&limit=1000", h.ID))
	if len(all) != 100 || all[0].Path != "/f104" || all[99].Path != "/f005" {
		t.Fatalf("limit=1000: %d entries, %s … %s; want the 100 newest, /f104 … /f005", len(all), all[0].Path, all[len(all)-1].Path)
	}
}

func TestShortcuts(t *testing.T) {
	e := newEnv(t)
	h := e.createHost(e.alice, nil)
	e.addFile(e.alice, "shortcuts", map[string]any{"path": "/srv/www", "hostId": h.ID}, "Shortcut added")
	e.advance(time.Second)
	e.addFile(e.alice, "shortcuts", map[string]any{"path": "/etc", "hostId": h.ID, "name": "config"}, "Shortcut added")
	// Adding again is a no-op that answers the same.
	e.advance(time.Second)
	e.addFile(e.alice, "shortcuts", map[string]any{"path": "/srv/www", "hostId": h.ID, "name": "renamed"}, "Shortcut added")
	list := e.listFiles(e.alice, "shortcuts", fmt.Sprintf("hostId=%d", h.ID))
	if got := entryPaths(list); got != "/srv/www /etc" || list[0].Name != "www" || list[1].Name != "config" {
		t.Fatalf("shortcuts: %+v, want /srv/www (www) then /etc (config)", list)
	}
	if !list[0].LastOpened.IsZero() {
		t.Fatalf("a shortcut has lastOpened %s", list[0].LastOpened)
	}
	// A host holds SSHDECK_LIMIT_SHORTCUTS shortcuts (here 100).
	limits := config.DefaultLimits
	limits.Shortcuts = 100
	e.setLimits(limits)
	for i := range 98 {
		e.addFile(e.alice, "shortcuts", map[string]any{"path": fmt.Sprintf("/s%02d", i), "hostId": h.ID}, "Shortcut added")
	}
	resp := e.sendJSON("POST", e.alice, "/ssh/file_manager/shortcuts", map[string]any{"path": "/one-too-many", "hostId": h.ID})
	if resp.Status != http.StatusConflict || resp.errorCode(t) != "limit_exceeded" || !strings.Contains(string(resp.Body), "SSHDECK_LIMIT_SHORTCUTS") {
		t.Fatalf("101st shortcut: %d %s", resp.Status, resp.Body)
	}
	e.addFile(e.alice, "shortcuts", map[string]any{"path": "/etc", "hostId": h.ID}, "Shortcut added")
	// Recent files are another list.
	e.addFile(e.alice, "recent", map[string]any{"path": "/etc", "hostId": h.ID}, "File added to recent")
}

func TestDeleteFileEntries(t *testing.T) {
	e := newEnv(t)
	h := e.createHost(e.alice, nil)
	for _, list := range []string{"recent", "shortcuts"} {
		e.sendJSON("POST", e.alice, "/ssh/file_manager/"+list, map[string]any{"path": "/a", "hostId": h.ID})
		e.sendJSON("POST", e.alice, "/ssh/file_manager/"+list, map[string]any{"path": "/b", "hostId": h.ID})
	}
	resp := e.sendJSON("DELETE", e.alice, "/ssh/file_manager/recent", map[string]any{"path": "/a", "hostId": h.ID})
	if resp.Status != 200 || !strings.Contains(string(resp.Body), "File removed from recent") {
		t.Fatalf("delete recent: %d %s", resp.Status, resp.Body)
	}
	resp = e.sendJSON("DELETE", e.alice, "/ssh/file_manager/shortcuts", map[string]any{"path": "/b", "hostId": h.ID})
	if resp.Status != 200 || !strings.Contains(string(resp.Body), "Shortcut removed") {
		t.Fatalf("delete shortcut: %d %s", resp.Status, resp.Body)
	}
	if got := entryPaths(e.listFiles(e.alice, "recent", fmt.Sprintf("hostId=%d", h.ID))); got != "/b" {
		t.Fatalf("recent after delete: %s", got)
	}
	if got := entryPaths(e.listFiles(e.alice, "shortcuts", fmt.Sprintf("hostId=%d", h.ID))); got != "/a" {
		t.Fatalf("shortcuts after delete: %s", got)
	}
	resp = e.sendJSON("DELETE", e.alice, "/ssh/file_manager/recent", map[string]any{"path": "/a", "hostId": h.ID})
	if resp.Status != http.StatusNotFound || resp.errorCode(t) != "not_found" {
		t.Fatalf("delete twice: %d %s", resp.Status, resp.Body)
	}
}

// TestDeletedHostTakesItsEntries: after DELETE of a host its lists are gone
// (its id is no host of the caller's any more), and a new host starts empty.
func TestDeletedHostTakesItsEntries(t *testing.T) {
	e := newEnv(t)
	h := e.createHost(e.alice, nil)
	kept := e.createHost(e.alice, nil)
	for _, id := range []int64{h.ID, kept.ID} {
		e.addFile(e.alice, "recent", map[string]any{"path": "/a", "hostId": id}, "File added to recent")
		e.addFile(e.alice, "shortcuts", map[string]any{"path": "/a", "hostId": id}, "Shortcut added")
	}
	if resp := e.do(request{method: "DELETE", path: fmt.Sprintf("/ssh/db/host/%d", h.ID), token: e.alice}); resp.Status != 200 {
		t.Fatalf("delete host: %d %s", resp.Status, resp.Body)
	}
	for _, list := range []string{"recent", "shortcuts"} {
		resp := e.get(e.alice, fmt.Sprintf("/ssh/file_manager/%s?hostId=%d", list, h.ID))
		if resp.Status != http.StatusBadRequest {
			t.Fatalf("%s of the deleted host: %d %s", list, resp.Status, resp.Body)
		}
		if got := e.listFiles(e.alice, list, fmt.Sprintf("hostId=%d", kept.ID)); len(got) != 1 {
			t.Fatalf("%s of the other host: %v", list, got)
		}
	}
	alice, err := e.store.UserByName(t.Context(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []sshdeck.FileKind{sshdeck.RecentFile, sshdeck.Shortcut} {
		es, err := e.store.Files(t.Context(), alice.ID, h.ID, kind)
		if err != nil || len(es) != 0 {
			t.Fatalf("stored %s entries of the deleted host: %v %v", kind, es, err)
		}
	}
}

// TestFileRequestsRefused: every way a client can get a file request wrong,
// and the status and field it is told.
func TestFileRequestsRefused(t *testing.T) {
	e := newEnv(t)
	h := e.createHost(e.alice, nil)
	e.createHost(e.bob, nil) // bob's host 1 is not alice's host 1
	bobs := e.createHost(e.bob, nil)
	long := "/" + strings.Repeat("é", 4096)
	for _, list := range []string{"recent", "shortcuts"} {
		path := "/ssh/file_manager/" + list
		for _, tc := range []struct {
			name   string
			body   string
			status int
			says   string
		}{
			{"not JSON", `{"path":`, 400, "truncated JSON"},
			{"not JSON at all", `path=/a`, 400, "not valid JSON"},
			{"an array", `[]`, 400, "JSON object"},
			{"no hostId", `{"path":"/a"}`, 400, "hostId is required"},
			{"hostId as a string", `{"path":"/a","hostId":"1"}`, 400, "hostId: expected an integer"},
			{"hostId 0", `{"path":"/a","hostId":0}`, 400, "hostId must be a positive integer"},
			{"hostId of nobody", `{"path":"/a","hostId":99}`, 400, "hostId: you have no host 99"},
			{"bob's hostId", fmt.Sprintf(`{"path":"/a","hostId":%d}`, bobs.ID), 400, "you have no host"},
			{"no path", fmt.Sprintf(`{"hostId":%d}`, h.ID), 400, "path is required"},
			{"path too long", fmt.Sprintf(`{"path":%q,"hostId":%d}`, long, h.ID), 400, "path: at most 4096"},
			{"path with NUL", fmt.Sprintf(`{"path":"/a\u0000b","hostId":%d}`, h.ID), 400, "path must not contain control characters"},
			{"path with a newline", fmt.Sprintf(`{"path":"/a\nb","hostId":%d}`, h.ID), 400, "path must not contain control characters"},
			{"name with an escape", fmt.Sprintf(`{"path":"/a","name":"\u001b[31m","hostId":%d}`, h.ID), 400, "name must not contain control characters"},
			{"sshSessionId with DEL", fmt.Sprintf(`{"path":"/a","sshSessionId":"s\u007f","hostId":%d}`, h.ID), 400, "sshSessionId must not contain control characters"},
			{"path a number", fmt.Sprintf(`{"path":7,"hostId":%d}`, h.ID), 400, "path: expected a string"},
			{"isSSH a string", fmt.Sprintf(`{"path":"/a","isSSH":"yes","hostId":%d}`, h.ID), 400, "isSSH: expected a boolean"},
			{"name too long", fmt.Sprintf(`{"path":"/a","name":%q,"hostId":%d}`, strings.Repeat("n", 1025), h.ID), 400, "name: at most 1024"},
			{"session too long", fmt.Sprintf(`{"path":"/a","sshSessionId":%q,"hostId":%d}`, strings.Repeat("s", 257), h.ID), 400, "sshSessionId: at most 256"},
			{"over 1 MiB", fmt.Sprintf(`{"path":"/a","hostId":%d,"name":%q}`, h.ID, strings.Repeat("x", 1<<20)), 413, "body is over"},
		} {
			resp := e.sendJSON("POST", e.alice, path, []byte(tc.body))
			if resp.Status != tc.status || !strings.Contains(string(resp.Body), tc.says) {
				t.Errorf("POST %s with %s: %d %s, want %d saying %q", list, tc.name, resp.Status, resp.Body, tc.status, tc.says)
			}
		}
		valid := fmt.Sprintf(`{"path":"/a","hostId":%d}`, h.ID)
		if resp := e.do(request{method: "POST", path: path, token: e.alice, contentType: "text/plain", body: []byte(valid)}); resp.Status != 415 {
			t.Errorf("POST %s as text/plain: %d %s", list, resp.Status, resp.Body)
		}
		for _, token := range []string{"", "sshdeck_nope"} {
			if resp := e.do(request{method: "POST", path: path, token: token, contentType: "application/json", body: []byte(valid)}); resp.Status != 401 {
				t.Errorf("POST %s with token %q: %d", list, token, resp.Status)
			}
		}
		for _, tc := range []struct{ query, says string }{
			{"", "hostId is required"},
			{"hostId=abc", "hostId must be a positive integer"},
			{"hostId=-1", "hostId must be a positive integer"},
			{fmt.Sprintf("hostId=%d", bobs.ID), "you have no host"},
		} {
			resp := e.get(e.alice, path+"?"+tc.query)
			if resp.Status != 400 || !strings.Contains(string(resp.Body), tc.says) {
				t.Errorf("GET %s?%s: %d %s, want 400 saying %q", list, tc.query, resp.Status, resp.Body, tc.says)
			}
		}
		for _, tc := range []struct {
			body   string
			status int
		}{
			{`{"path":"/a"}`, 400},
			{fmt.Sprintf(`{"hostId":%d}`, h.ID), 400},
			{fmt.Sprintf(`{"path":"/a","hostId":%d}`, bobs.ID), 400},
			{fmt.Sprintf(`{"path":"/never-added","hostId":%d}`, h.ID), 404},
		} {
			if resp := e.sendJSON("DELETE", e.alice, path, []byte(tc.body)); resp.Status != tc.status {
				t.Errorf("DELETE %s %s: %d %s, want %d", list, tc.body, resp.Status, resp.Body, tc.status)
			}
		}
	}
	for _, q := range []string{"limit=0", "limit=abc", "limit=-3", "limit=1.5"} {
		resp := e.get(e.alice, fmt.Sprintf("/ssh/file_manager/recent?hostId=%d&%s", h.ID, q))
		if resp.Status != 400 || !strings.Contains(string(resp.Body), "limit must be a positive integer") {
			t.Errorf("GET recent?%s: %d %s", q, resp.Status, resp.Body)
		}
	}
	// Nothing was stored by any refused request.
	if got := e.listFiles(e.alice, "recent", fmt.Sprintf("hostId=%d", h.ID)); len(got) != 0 {
		t.Fatalf("recent after refused requests: %s", entryPaths(got))
	}
}
