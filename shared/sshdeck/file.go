package sshdeck

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// FileKind tells the two lists of the file manager apart.
type FileKind string

const (
	// RecentFile entries are files opened lately, newest first, at most
	// config.Limits.Recent per host (adding one more drops the oldest).
	RecentFile FileKind = "recent"
	// Shortcut entries are files or folders a user pinned, at most
	// config.Limits.Shortcuts per host (adding one more is refused with
	// ShortcutsExceeded until one is deleted).
	Shortcut FileKind = "shortcut"
)

// ShortcutsExceeded is the error of an add that would take a host past max
// shortcuts (config.Limits.Shortcuts), the same from every store.
func ShortcutsExceeded(hostID int64, max int) *Error {
	return Errorf(LimitExceeded, "limit of shortcuts per host reached: host %d has %d, the most it may have (SSHDECK_LIMIT_SHORTCUTS); delete one first", hostID, max)
}

// FileEntry is one entry of a file-manager list. Its key is (Owner, HostID,
// Kind, Path): adding the same path again updates the entry, never adds a
// second one.
type FileEntry struct {
	Owner        string   `json:"owner"`
	HostID       int64    `json:"hostId"`
	Kind         FileKind `json:"kind"`
	Path         string   `json:"path"`
	Name         string   `json:"name"`
	IsSSH        bool     `json:"isSSH"`
	SSHSessionID string   `json:"sshSessionId"`
	// CreatedAt is when the path was first added; re-adding keeps it.
	CreatedAt time.Time `json:"createdAt"`
	// LastOpened is when a recent entry was last added; the recent list is
	// ordered by it, newest first.
	LastOpened time.Time `json:"lastOpened"`
}

// FileStore persists file-manager entries. An entry belongs to one of its
// owner's hosts: adding one for a host that is absent is NotFound, and
// HostStore.DeleteHost deletes the host's entries with it, so that no entry
// outlives its host.
type FileStore interface {
	// PutRecentFile stores e (Kind RecentFile), replacing the entry at its
	// path but keeping that entry's CreatedAt, then deletes the host's
	// recent entries beyond the first keep in the order of Files.
	// NotFound when the owner has no host e.HostID.
	PutRecentFile(ctx context.Context, e *FileEntry, keep int) error
	// AddShortcut stores e (Kind Shortcut) unless an entry exists at its
	// path, which is left as it is; added reports which. LimitExceeded
	// (ShortcutsExceeded) when the host has max shortcuts already and e's
	// path is not one of them, the count and the write being one atomic
	// step; NotFound when the owner has no host e.HostID.
	AddShortcut(ctx context.Context, e *FileEntry, max int) (added bool, err error)
	// Files returns the entries of one kind of the owner's host: recent
	// entries newest first (LastOpened descending, then Path descending),
	// shortcuts oldest first (CreatedAt ascending, then Path ascending). An
	// absent host has none.
	Files(ctx context.Context, owner string, hostID int64, kind FileKind) ([]*FileEntry, error)
	// DeleteFile removes one entry; NotFound when absent.
	DeleteFile(ctx context.Context, owner string, hostID int64, kind FileKind, path string) error
}

// SortFiles puts entries of one kind in the order FileStore.Files returns
// them. Stores use it: neither keeps a list in that order by itself.
func SortFiles(es []*FileEntry, kind FileKind) {
	slices.SortFunc(es, func(a, b *FileEntry) int { return CompareFiles(a, b, kind) })
}

// CompareFiles orders two entries of one kind as FileStore.Files does:
// recent entries newest first (LastOpened descending, then Path
// descending), shortcuts oldest first (CreatedAt ascending, then Path
// ascending). No two entries of a host's list compare equal: their paths
// differ.
func CompareFiles(a, b *FileEntry, kind FileKind) int {
	if kind == RecentFile {
		return cmp.Or(b.LastOpened.Compare(a.LastOpened), cmp.Compare(b.Path, a.Path))
	}
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.Path, b.Path))
}
