package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// The limits the suite passes to the stores (config.DefaultLimits' own).
const (
	maxRecent    = 100
	maxShortcuts = 500
	maxHosts     = 1000
)

// entry returns a file entry of kind at path on the owner's host, opened
// (and created) at base + minute minutes.
func entry(owner string, hostID int64, kind sshdeck.FileKind, path string, minute int) *sshdeck.FileEntry {
	at := base.Add(time.Duration(minute) * time.Minute)
	e := &sshdeck.FileEntry{
		Owner: owner, HostID: hostID, Kind: kind, Path: path,
		Name: path[strings.LastIndex(path, "/")+1:], IsSSH: true, SSHSessionID: fmt.Sprintf("sess-%d", minute),
		CreatedAt: at,
	}
	if kind == sshdeck.RecentFile {
		e.LastOpened = at
	}
	return e
}

func putRecent(t *testing.T, s sshdeck.Store, e *sshdeck.FileEntry, keep int) {
	t.Helper()
	must(t, s.PutRecentFile(t.Context(), e, keep), "PutRecentFile("+e.Path+")")
}

func addShortcut(t *testing.T, s sshdeck.Store, e *sshdeck.FileEntry, max int, want bool) {
	t.Helper()
	added, err := s.AddShortcut(t.Context(), e, max)
	must(t, err, "AddShortcut("+e.Path+")")
	if added != want {
		t.Fatalf("AddShortcut(%s): added %t, want %t", e.Path, added, want)
	}
}

func listFiles(t *testing.T, s sshdeck.Store, owner string, hostID int64, kind sshdeck.FileKind) []*sshdeck.FileEntry {
	t.Helper()
	es, err := s.Files(t.Context(), owner, hostID, kind)
	must(t, err, fmt.Sprintf("Files(%s, %d, %s)", owner, hostID, kind))
	if es == nil {
		t.Fatalf("Files(%s, %d, %s): got nil, want a non-nil slice", owner, hostID, kind)
	}
	return es
}

// sameFiles compares lists entry by entry, times to the millisecond.
func sameFiles(t *testing.T, got, want []*sshdeck.FileEntry, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d entries %v, want %d %v", what, len(got), paths(got), len(want), paths(want))
	}
	for i := range want {
		same(t, got[i], want[i], func(e *sshdeck.FileEntry) {
			e.CreatedAt, e.LastOpened = ms(e.CreatedAt), ms(e.LastOpened)
		}, fmt.Sprintf("%s[%d]", what, i))
	}
}

func paths(es []*sshdeck.FileEntry) []string {
	var ps []string
	for _, e := range es {
		ps = append(ps, e.Path)
	}
	return ps
}

func testFileRecentNewestFirst(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	a := entry("alice", h.ID, sshdeck.RecentFile, "/etc/hosts", 1)
	b := entry("alice", h.ID, sshdeck.RecentFile, "/var/log/syslog", 3)
	c := entry("alice", h.ID, sshdeck.RecentFile, "/srv/app/config.yaml", 2)
	c.IsSSH, c.SSHSessionID, c.Name = false, "", "config"
	for _, e := range []*sshdeck.FileEntry{a, b, c} {
		putRecent(t, s, e, maxRecent)
	}
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.RecentFile), []*sshdeck.FileEntry{b, c, a}, "recent")
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.Shortcut), nil, "shortcuts")
}

// testFileRecentReAdd: re-adding a path moves it to the top with the new
// values, keeping when it was first added.
func testFileRecentReAdd(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	a := entry("alice", h.ID, sshdeck.RecentFile, "/a", 1)
	b := entry("alice", h.ID, sshdeck.RecentFile, "/b", 2)
	putRecent(t, s, a, maxRecent)
	putRecent(t, s, b, maxRecent)
	again := entry("alice", h.ID, sshdeck.RecentFile, "/a", 5)
	again.Name, again.IsSSH, again.SSHSessionID = "renamed", false, "sess-new"
	putRecent(t, s, again, maxRecent)
	want := *again
	want.CreatedAt = a.CreatedAt
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.RecentFile), []*sshdeck.FileEntry{&want, b}, "recent after re-adding /a")
}

// testFileRecentKeep: beyond keep entries the oldest go; equal times are
// ordered by path, so the order (and what is dropped) is deterministic.
func testFileRecentKeep(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	other := createHost(t, s, "alice", 2)
	const keep = 5
	var all []*sshdeck.FileEntry
	for i := range keep + 4 {
		e := entry("alice", h.ID, sshdeck.RecentFile, fmt.Sprintf("/f%02d", i), i/2)
		all = append(all, e)
		putRecent(t, s, e, keep)
	}
	putRecent(t, s, entry("alice", other.ID, sshdeck.RecentFile, "/f00", 0), keep)
	// Newest first: minute 4 (/f08), minute 3 (/f06 /f07), minute 2 (/f04 /f05).
	want := []*sshdeck.FileEntry{all[8], all[7], all[6], all[5], all[4]}
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.RecentFile), want, "recent after overflowing")
	if got := listFiles(t, s, "alice", other.ID, sshdeck.RecentFile); len(got) != 1 {
		t.Fatalf("recent of the other host: got %v, want its one entry", paths(got))
	}
	// Re-adding an old path brings it back on top and drops the oldest.
	back := entry("alice", h.ID, sshdeck.RecentFile, "/f00", 9)
	putRecent(t, s, back, keep)
	want = []*sshdeck.FileEntry{back, all[8], all[7], all[6], all[5]}
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.RecentFile), want, "recent after re-adding a dropped path")
}

func testFileShortcutAddOnce(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	a := entry("alice", h.ID, sshdeck.Shortcut, "/srv/www", 2)
	b := entry("alice", h.ID, sshdeck.Shortcut, "/etc", 1)
	addShortcut(t, s, a, maxShortcuts, true)
	addShortcut(t, s, b, maxShortcuts, true)
	again := entry("alice", h.ID, sshdeck.Shortcut, "/srv/www", 9)
	again.Name = "renamed"
	addShortcut(t, s, again, maxShortcuts, false)
	// Oldest first; the re-added one unchanged.
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.Shortcut), []*sshdeck.FileEntry{b, a}, "shortcuts")
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.RecentFile), nil, "recent")
}

func testFileShortcutMax(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	h := createHost(t, s, "alice", 1)
	other := createHost(t, s, "alice", 2)
	const max = 3
	for i := range max {
		addShortcut(t, s, entry("alice", h.ID, sshdeck.Shortcut, fmt.Sprintf("/s%d", i), i), max, true)
	}
	extra := entry("alice", h.ID, sshdeck.Shortcut, "/extra", 9)
	_, err := s.AddShortcut(ctx, extra, max)
	wantCode(t, err, sshdeck.LimitExceeded, "AddShortcut beyond max")
	// A path already there is still a no-op, not a refusal.
	addShortcut(t, s, entry("alice", h.ID, sshdeck.Shortcut, "/s1", 9), max, false)
	// Recent entries and other hosts do not count.
	putRecent(t, s, entry("alice", h.ID, sshdeck.RecentFile, "/r", 1), maxRecent)
	addShortcut(t, s, entry("alice", other.ID, sshdeck.Shortcut, "/s0", 0), max, true)
	must(t, s.DeleteFile(ctx, "alice", h.ID, sshdeck.Shortcut, "/s0"), "DeleteFile")
	addShortcut(t, s, extra, max, true)
	if got := listFiles(t, s, "alice", h.ID, sshdeck.Shortcut); len(got) != max {
		t.Fatalf("shortcuts: got %v, want %d", paths(got), max)
	}
}

// testFileNeedsHost: entries go only to a host of their owner that exists.
func testFileNeedsHost(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	h := createHost(t, s, "alice", 1)
	gone := createHost(t, s, "alice", 2)
	must(t, s.DeleteHost(ctx, "alice", gone.ID, 0), "DeleteHost")
	for name, e := range map[string]func(kind sshdeck.FileKind) *sshdeck.FileEntry{
		"never existed":   func(k sshdeck.FileKind) *sshdeck.FileEntry { return entry("alice", 99, k, "/x", 1) },
		"deleted":         func(k sshdeck.FileKind) *sshdeck.FileEntry { return entry("alice", gone.ID, k, "/x", 1) },
		"another owner's": func(k sshdeck.FileKind) *sshdeck.FileEntry { return entry("bob", h.ID, k, "/x", 1) },
	} {
		wantCode(t, s.PutRecentFile(ctx, e(sshdeck.RecentFile), maxRecent), sshdeck.NotFound, "PutRecentFile on a host "+name)
		_, err := s.AddShortcut(ctx, e(sshdeck.Shortcut), maxShortcuts)
		wantCode(t, err, sshdeck.NotFound, "AddShortcut on a host "+name)
	}
	for _, owner := range []string{"alice", "bob"} {
		for _, id := range []int64{h.ID, gone.ID, 99} {
			for _, kind := range []sshdeck.FileKind{sshdeck.RecentFile, sshdeck.Shortcut} {
				if got := listFiles(t, s, owner, id, kind); len(got) != 0 {
					t.Fatalf("Files(%s, %d, %s): got %v, want none", owner, id, kind, paths(got))
				}
			}
		}
	}
}

func testFileDelete(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	h := createHost(t, s, "alice", 1)
	r := entry("alice", h.ID, sshdeck.RecentFile, "/same", 1)
	sc := entry("alice", h.ID, sshdeck.Shortcut, "/same", 1)
	putRecent(t, s, r, maxRecent)
	addShortcut(t, s, sc, maxShortcuts, true)
	// The kinds are separate lists: deleting one leaves the other.
	must(t, s.DeleteFile(ctx, "alice", h.ID, sshdeck.RecentFile, "/same"), "DeleteFile recent")
	wantCode(t, s.DeleteFile(ctx, "alice", h.ID, sshdeck.RecentFile, "/same"), sshdeck.NotFound, "DeleteFile twice")
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.RecentFile), nil, "recent after delete")
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.Shortcut), []*sshdeck.FileEntry{sc}, "shortcuts after deleting the recent entry")
	for name, err := range map[string]error{
		"another path":    s.DeleteFile(ctx, "alice", h.ID, sshdeck.Shortcut, "/Same"),
		"another host":    s.DeleteFile(ctx, "alice", h.ID+1, sshdeck.Shortcut, "/same"),
		"another owner's": s.DeleteFile(ctx, "bob", h.ID, sshdeck.Shortcut, "/same"),
	} {
		wantCode(t, err, sshdeck.NotFound, "DeleteFile of "+name)
	}
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.Shortcut), []*sshdeck.FileEntry{sc}, "shortcuts after refused deletes")
}

// testFileOwnerIsolation: host ids are per owner, so alice's host 1 and
// bob's host 1 are different hosts with different lists.
func testFileOwnerIsolation(t *testing.T, s sshdeck.Store) {
	a := createHost(t, s, "alice", 1)
	b := createHost(t, s, "bob", 2)
	if a.ID != b.ID {
		t.Fatalf("want both owners' first host ids equal, got %d and %d", a.ID, b.ID)
	}
	ea := entry("alice", a.ID, sshdeck.RecentFile, "/home/alice", 1)
	eb := entry("bob", b.ID, sshdeck.RecentFile, "/home/bob", 2)
	putRecent(t, s, ea, maxRecent)
	putRecent(t, s, eb, maxRecent)
	sameFiles(t, listFiles(t, s, "alice", a.ID, sshdeck.RecentFile), []*sshdeck.FileEntry{ea}, "alice's recent")
	sameFiles(t, listFiles(t, s, "bob", b.ID, sshdeck.RecentFile), []*sshdeck.FileEntry{eb}, "bob's recent")
}

// testFilePaths: paths are kept byte for byte, up to the API's 4096
// characters of 3 bytes each, and only an identical path is the same entry.
func testFilePaths(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	long := "/" + strings.Repeat("é", 2000) + strings.Repeat("€", 2095)
	odd := []string{long, "/tmp/a b#c", "/tmp/A B#C", "/tmp/a b#c/", "relative/path", "~/.ssh/config", "/", "/ünïcødé/文件.txt", "/x.y", "/x#y"}
	var want []*sshdeck.FileEntry
	for i, p := range odd {
		e := entry("alice", h.ID, sshdeck.Shortcut, p, i)
		addShortcut(t, s, e, maxShortcuts, true)
		want = append(want, e)
	}
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.Shortcut), want, "shortcuts")
	must(t, s.DeleteFile(t.Context(), "alice", h.ID, sshdeck.Shortcut, long), "DeleteFile of the long path")
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.Shortcut), want[1:], "shortcuts after deleting the long path")
}

// testFileHostDeleteCascade: a deleted host takes its entries, more of them
// than one DynamoDB transaction or batch holds, and nothing else.
func testFileHostDeleteCascade(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	h := createHost(t, s, "alice", 1)
	kept := createHost(t, s, "alice", 2)
	bobs := createHost(t, s, "bob", 3)
	for i := range maxRecent {
		putRecent(t, s, entry("alice", h.ID, sshdeck.RecentFile, fmt.Sprintf("/r%03d", i), i), maxRecent)
	}
	for i := range 30 {
		addShortcut(t, s, entry("alice", h.ID, sshdeck.Shortcut, fmt.Sprintf("/s%03d", i), i), maxShortcuts, true)
	}
	keptRecent := entry("alice", kept.ID, sshdeck.RecentFile, "/r000", 1)
	keptShortcut := entry("alice", kept.ID, sshdeck.Shortcut, "/s000", 1)
	bobsRecent := entry("bob", bobs.ID, sshdeck.RecentFile, "/r000", 1)
	putRecent(t, s, keptRecent, maxRecent)
	addShortcut(t, s, keptShortcut, maxShortcuts, true)
	putRecent(t, s, bobsRecent, maxRecent)

	must(t, s.DeleteHost(ctx, "alice", h.ID, 0), "DeleteHost")
	for _, kind := range []sshdeck.FileKind{sshdeck.RecentFile, sshdeck.Shortcut} {
		sameFiles(t, listFiles(t, s, "alice", h.ID, kind), nil, string(kind)+" of the deleted host")
		wantCode(t, s.DeleteFile(ctx, "alice", h.ID, kind, "/r000"), sshdeck.NotFound, "DeleteFile on the deleted host")
	}
	sameFiles(t, listFiles(t, s, "alice", kept.ID, sshdeck.RecentFile), []*sshdeck.FileEntry{keptRecent}, "recent of the other host")
	sameFiles(t, listFiles(t, s, "alice", kept.ID, sshdeck.Shortcut), []*sshdeck.FileEntry{keptShortcut}, "shortcuts of the other host")
	sameFiles(t, listFiles(t, s, "bob", bobs.ID, sshdeck.RecentFile), []*sshdeck.FileEntry{bobsRecent}, "bob's recent")
	// A refused delete takes nothing.
	putRecent(t, s, entry("alice", kept.ID, sshdeck.RecentFile, "/r001", 2), maxRecent)
	wantCode(t, s.DeleteHost(ctx, "alice", kept.ID, 99), sshdeck.Conflict, "DeleteHost at a stale version")
	if got := listFiles(t, s, "alice", kept.ID, sshdeck.RecentFile); len(got) != 2 {
		t.Fatalf("recent after a refused DeleteHost: got %v", paths(got))
	}
}

// testFileCopies: what a caller holds shares no memory with the store.
func testFileCopies(t *testing.T, s sshdeck.Store) {
	h := createHost(t, s, "alice", 1)
	e := entry("alice", h.ID, sshdeck.RecentFile, "/a", 1)
	want := *e
	putRecent(t, s, e, maxRecent)
	e.Name = "mutated"
	listFiles(t, s, "alice", h.ID, sshdeck.RecentFile)[0].Name = "mutated"
	sameFiles(t, listFiles(t, s, "alice", h.ID, sshdeck.RecentFile), []*sshdeck.FileEntry{&want}, "recent after mutating copies")
}
