package api_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// linkNext matches a Link header to the next page and takes its query.
var linkNext = regexp.MustCompile(`^<\?([^>]*)>; rel="next"$`)

// nextQuery returns the query of resp's Link to the next page, "" when
// there is none.
func nextQuery(t *testing.T, resp *response) string {
	t.Helper()
	link := resp.Header.Get("Link")
	if link == "" {
		return ""
	}
	m := linkNext.FindStringSubmatch(link)
	if m == nil {
		t.Fatalf("Link %q is not a relative reference to the next page", link)
	}
	return m[1]
}

// storeHosts stores n hosts of the user straight through the store (no
// credentials to seal, so a list of 1200 is made in a moment).
func (e *env) storeHosts(userID string, n int) []int64 {
	e.t.Helper()
	ctx := context.Background()
	ids := make([]int64, n)
	for i := range ids {
		id, err := e.store.NextHostID(ctx, userID)
		if err != nil {
			e.t.Fatal(err)
		}
		now := time.Now().UTC()
		h := &sshdeck.Host{Owner: userID, ID: id, Version: 1, CreatedAt: now, UpdatedAt: now,
			HostConfig: sshdeck.HostConfig{Name: fmt.Sprintf("h%d", i), IP: "10.0.0.5", Port: 22, Username: "deploy", AuthType: sshdeck.AuthNone,
				KeyType: "auto", DefaultPath: "/", EnableTerminal: true, EnableTunnel: true, EnableFileManager: true}}
		if err := e.store.CreateHost(ctx, h, 100000); err != nil {
			e.t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

func (e *env) userID(token string) string {
	e.t.Helper()
	p, err := e.authn.Authenticate(context.Background(), "Bearer "+token)
	if err != nil {
		e.t.Fatal(err)
	}
	return p.UserID
}

// TestHostPagingWalk walks a list of 1,200 hosts a page at a time while
// hosts are created and deleted between the pages: every host that exists
// for the whole walk is on exactly one page, no id is on two, ids grow page
// after page, hosts created during the walk are on a later page, and the
// last page has no Link.
func TestHostPagingWalk(t *testing.T) {
	e := newEnv(t)
	limits := config.DefaultLimits
	limits.Hosts = 2000
	e.setLimits(limits)
	alice := e.userID(e.alice)
	ids := e.storeHosts(alice, 1200)
	e.storeHosts(e.userID(e.bob), 30) // never on alice's pages

	deleted := map[int64]bool{}
	var created []int64
	seen := map[int64]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	query := "limit=100"
	last := int64(0)
	for pages := 0; ; pages++ {
		if pages > 40 {
			t.Fatal("the walk never ends")
		}
		resp := e.get(e.alice, "/ssh/db/host?"+query)
		if resp.Status != http.StatusOK {
			t.Fatalf("GET ?%s: %d %s", query, resp.Status, resp.Body)
		}
		var page []hosts.Record
		resp.json(t, &page)
		if len(page) > 100 {
			t.Fatalf("a page of %d", len(page))
		}
		for _, h := range page {
			if h.ID <= last {
				t.Fatalf("id %d after %d", h.ID, last)
			}
			last = h.ID
			seen[h.ID]++
		}
		if query = nextQuery(t, resp); query == "" {
			break
		}
		if len(page) != 100 {
			t.Fatalf("a page of %d with a Link after it", len(page))
		}
		// Between pages: 5 hosts go (anywhere: before, on or after this
		// page), 5 come.
		for range 5 {
			id := ids[rng.IntN(len(ids))]
			if deleted[id] {
				continue
			}
			if resp := e.do(request{method: "DELETE", path: fmt.Sprintf("/ssh/db/host/%d", id), token: e.alice}); resp.Status != http.StatusOK {
				t.Fatalf("delete %d: %d %s", id, resp.Status, resp.Body)
			}
			deleted[id] = true
		}
		for range 5 {
			created = append(created, e.createHost(e.alice, nil).ID)
		}
	}
	for _, id := range ids {
		switch n := seen[id]; {
		case deleted[id]:
			if n > 1 {
				t.Errorf("host %d (deleted during the walk) seen %d times", id, n)
			}
		case n != 1:
			t.Errorf("host %d, there for the whole walk, seen %d times", id, n)
		}
	}
	for _, id := range created {
		if seen[id] != 1 {
			t.Errorf("host %d, created during the walk, seen %d times", id, seen[id])
		}
	}
	if len(deleted) == 0 || len(created) == 0 {
		t.Fatal("the walk changed nothing")
	}
}

// TestHostPaging: the page size and the cursor, what is refused, and the
// unpaged list unchanged.
func TestHostPaging(t *testing.T) {
	e := newEnv(t)
	ids := e.storeHosts(e.userID(e.alice), 7)
	var all []hosts.Record
	e.get(e.alice, "/ssh/db/host").json(t, &all)
	if len(all) != 7 {
		t.Fatalf("the whole list: %d hosts", len(all))
	}
	resp := e.get(e.alice, "/ssh/db/host?limit=3")
	var page []hosts.Record
	resp.json(t, &page)
	next := nextQuery(t, resp)
	if len(page) != 3 || page[0].ID != ids[0] || !strings.HasPrefix(next, "cursor=") || !strings.Contains(next, "limit=3") {
		t.Fatalf("first page: %d hosts, Link %q", len(page), resp.Header.Get("Link"))
	}
	// A cursor without limit: the rest of the list.
	resp = e.get(e.alice, "/ssh/db/host?"+strings.Replace(next, "limit=3", "", 1))
	resp.json(t, &page)
	if len(page) != 4 || page[0].ID != ids[3] || resp.Header.Get("Link") != "" {
		t.Fatalf("the rest after the cursor: %d hosts, Link %q", len(page), resp.Header.Get("Link"))
	}
	// An exact fit: no Link after the last page.
	resp = e.get(e.alice, "/ssh/db/host?limit=7")
	resp.json(t, &page)
	if len(page) != 7 || resp.Header.Get("Link") != "" {
		t.Fatalf("limit=7 of 7: %d hosts, Link %q", len(page), resp.Header.Get("Link"))
	}
	for _, q := range []string{"limit=0", "limit=501", "limit=abc", "limit=", "limit=1&limit=2", "cursor=", "cursor=!!", "cursor=MA", "cursor=LTE", "cursor=MDE", "cursor=Mw==", "cursor=a&cursor=b"} {
		resp := e.get(e.alice, "/ssh/db/host?"+q)
		if resp.Status != http.StatusBadRequest || resp.errorCode(t) != "invalid" {
			t.Errorf("?%s: %d %s, want 400 invalid", q, resp.Status, resp.Body)
		}
	}
	// Another user's cursor is only an id: it pages that user's own hosts.
	resp = e.get(e.bob, "/ssh/db/host?"+next)
	resp.json(t, &page)
	if resp.Status != http.StatusOK || len(page) != 0 {
		t.Fatalf("bob with alice's cursor: %d, %d hosts", resp.Status, len(page))
	}
}

// TestHostLimit: a user has at most SSHDECK_LIMIT_HOSTS hosts; one more is
// 409 limit_exceeded naming it, a delete makes room, another user is not
// concerned.
func TestHostLimit(t *testing.T) {
	e := newEnv(t)
	limits := config.DefaultLimits
	limits.Hosts = 3
	e.setLimits(limits)
	var first hosts.Record
	for i := range 3 {
		h := e.createHost(e.alice, nil)
		if i == 0 {
			first = h
		}
	}
	resp := e.sendJSON("POST", e.alice, "/ssh/db/host", map[string]any{"ip": "10.0.0.5", "username": "deploy"})
	if resp.Status != http.StatusConflict || resp.errorCode(t) != "limit_exceeded" || !strings.Contains(string(resp.Body), "SSHDECK_LIMIT_HOSTS") {
		t.Fatalf("4th host: %d %s", resp.Status, resp.Body)
	}
	e.createHost(e.bob, nil)
	if resp := e.do(request{method: "DELETE", path: fmt.Sprintf("/ssh/db/host/%d", first.ID), token: e.alice}); resp.Status != http.StatusOK {
		t.Fatalf("delete: %d %s", resp.Status, resp.Body)
	}
	e.createHost(e.alice, nil)
	var list []hosts.Record
	e.get(e.alice, "/ssh/db/host").json(t, &list)
	if len(list) != 3 {
		t.Fatalf("%d hosts, want 3", len(list))
	}
}

// TestFilePaging walks the shortcuts and the recent files of a host a page
// at a time, with a shortcut deleted and one added during the walk: every
// entry there for the whole walk is on exactly one page.
func TestFilePaging(t *testing.T) {
	e := newEnv(t)
	h := e.createHost(e.alice, nil)
	for i := range 25 {
		e.addFile(e.alice, "shortcuts", map[string]any{"path": fmt.Sprintf("/s%02d", i), "hostId": h.ID}, "Shortcut added")
		e.addFile(e.alice, "recent", map[string]any{"path": fmt.Sprintf("/r%02d", i), "hostId": h.ID}, "File added to recent")
		e.advance(time.Second)
	}
	walk := func(list, first string, change func()) []string {
		var got []string
		query := first
		for pages := 0; query != ""; pages++ {
			if pages > 30 {
				t.Fatalf("%s: the walk never ends", list)
			}
			resp := e.get(e.alice, "/ssh/file_manager/"+list+"?"+query)
			if resp.Status != http.StatusOK {
				t.Fatalf("%s?%s: %d %s", list, query, resp.Status, resp.Body)
			}
			var page []struct{ Path string }
			resp.json(t, &page)
			for _, p := range page {
				got = append(got, p.Path)
			}
			if query = nextQuery(t, resp); query != "" && !strings.Contains(query, fmt.Sprintf("hostId=%d", h.ID)) {
				t.Fatalf("%s: Link %q lost hostId", list, query)
			}
			if pages == 1 && change != nil {
				change()
			}
		}
		return got
	}
	got := walk("shortcuts", fmt.Sprintf("hostId=%d&limit=7", h.ID), func() {
		e.sendJSON("DELETE", e.alice, "/ssh/file_manager/shortcuts", map[string]any{"path": "/s20", "hostId": h.ID})
		e.addFile(e.alice, "shortcuts", map[string]any{"path": "/new", "hostId": h.ID}, "Shortcut added")
	})
	want := []string{}
	for i := range 25 {
		if i != 20 {
			want = append(want, fmt.Sprintf("/s%02d", i))
		}
	}
	want = append(want, "/new")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("shortcuts in pages of 7: %v, want %v", got, want)
	}
	// The recent list keeps its default page of 20, now with a Link.
	got = walk("recent", fmt.Sprintf("hostId=%d", h.ID), nil)
	if len(got) != 25 || got[0] != "/r24" || got[24] != "/r00" {
		t.Errorf("recent in pages of 20: %v", got)
	}
	for _, q := range []string{"cursor=", "cursor=!!", "cursor=MTI", "cursor=eDov"} {
		for _, list := range []string{"recent", "shortcuts"} {
			resp := e.get(e.alice, fmt.Sprintf("/ssh/file_manager/%s?hostId=%d&%s", list, h.ID, q))
			if resp.Status != http.StatusBadRequest || resp.errorCode(t) != "invalid" {
				t.Errorf("%s ?%s: %d %s, want 400 invalid", list, q, resp.Status, resp.Body)
			}
		}
	}
	resp := e.get(e.alice, fmt.Sprintf("/ssh/file_manager/shortcuts?hostId=%d&limit=501", h.ID))
	if resp.Status != http.StatusBadRequest {
		t.Errorf("shortcuts limit=501: %d", resp.Status)
	}
}
