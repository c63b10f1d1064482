// Package files holds the rules of the file manager's lists above any store:
// recent files and shortcuts per host, each entry keyed by its path, on a
// host of the caller's only.
package files

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Limits of an entry's fields, in characters.
const (
	MaxPath      = 4096
	MaxName      = 1024
	MaxSessionID = 256
)

// Store is what the service needs: hosts to check ownership, and entries.
type Store interface {
	sshdeck.HostStore
	sshdeck.FileStore
}

// Input is the body of an add: the API's {name, path, isSSH, sshSessionId,
// hostId}. HostID is a pointer so that an absent one is told apart from 0.
type Input struct {
	Name         string `json:"name"`
	Path         string `json:"path"`
	IsSSH        bool   `json:"isSSH"`
	SSHSessionID string `json:"sshSessionId"`
	HostID       *int64 `json:"hostId"`
}

// Entry is an entry as its owner sees it.
type Entry struct {
	Name         string    `json:"name"`
	Path         string    `json:"path"`
	IsSSH        bool      `json:"isSSH"`
	SSHSessionID string    `json:"sshSessionId"`
	HostID       int64     `json:"hostId"`
	CreatedAt    time.Time `json:"createdAt"`
	// LastOpened is set on recent entries only.
	LastOpened time.Time `json:"lastOpened,omitzero"`
}

// Service applies the file-manager rules over a store.
type Service struct {
	// Limits are the deployment's limits (config.Limits; FromApp sets
	// them from the settings): Shortcuts and Recent per host are enforced
	// here. NewService sets config.DefaultLimits, and a zero limit is its
	// default.
	Limits config.Limits

	store Store
	now   func() time.Time
}

// NewService returns a Service with the default limits; now is the clock
// (time.Now when nil).
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{Limits: config.DefaultLimits, store: store, now: now}
}

// MaxShortcuts is how many shortcuts a host may have.
func (s *Service) MaxShortcuts() int {
	return cmp.Or(max(s.Limits.Shortcuts, 0), config.DefaultLimits.Shortcuts)
}

// MaxRecent is how many recent entries a host keeps.
func (s *Service) MaxRecent() int {
	return cmp.Or(max(s.Limits.Recent, 0), config.DefaultLimits.Recent)
}

// AddRecent puts the path on top of the host's recent files, dropping the
// oldest beyond MaxRecent.
func (s *Service) AddRecent(ctx context.Context, owner string, in *Input) error {
	e, err := s.entry(owner, sshdeck.RecentFile, in)
	if err != nil {
		return err
	}
	sshdeck.SetAuditTarget(ctx, fileTarget(e.HostID, e.Kind, e.Path))
	return hostError(s.store.PutRecentFile(sshdeck.AuditCommit(ctx), e, s.MaxRecent()), e.HostID)
}

// AddShortcut adds the path to the host's shortcuts; a path that is there
// already stays as it is (added is false).
func (s *Service) AddShortcut(ctx context.Context, owner string, in *Input) (added bool, err error) {
	e, err := s.entry(owner, sshdeck.Shortcut, in)
	if err != nil {
		return false, err
	}
	sshdeck.SetAuditTarget(ctx, fileTarget(e.HostID, e.Kind, e.Path))
	added, err = s.store.AddShortcut(sshdeck.AuditCommit(ctx), e, s.MaxShortcuts())
	return added, hostError(err, e.HostID)
}

// Cursor is where a page of a list ended: the order's key of its last
// entry (its LastOpened for a recent entry, its CreatedAt for a shortcut,
// and its path). The next page starts after it, whatever was added or
// deleted since: an entry that keeps its place for the whole walk is on
// exactly one page.
type Cursor struct {
	At   time.Time
	Path string
}

// Encode is the cursor as the API shows it: opaque, URL-safe base64 of
// the time in Unix nanoseconds, a colon and the path.
func (c *Cursor) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.At.UnixNano(), 10) + ":" + c.Path))
}

// ParseCursor reads a cursor that Encode made; Invalid for anything else.
func ParseCursor(raw string) (*Cursor, error) {
	bad := sshdeck.Errorf(sshdeck.Invalid, "cursor: not a cursor of this list (take it from the Link header of the page before)")
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return nil, bad
	}
	nanos, path, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(nanos, 10, 64)
	if !ok || err != nil || checkPath(path) != nil || !utf8.ValidString(path) {
		return nil, bad
	}
	c := &Cursor{At: time.Unix(0, n).UTC(), Path: path}
	if c.Encode() != raw {
		return nil, bad
	}
	return c, nil
}

// List returns the entries of one kind of the owner's host that come after
// the cursor (nil: from the first), in the store's order (recent newest
// first, shortcuts oldest first): at most limit of them (0: all), and the
// cursor of the last one when more follow (nil when none do).
func (s *Service) List(ctx context.Context, owner string, hostID int64, kind sshdeck.FileKind, after *Cursor, limit int) ([]*Entry, *Cursor, error) {
	if err := s.checkHost(ctx, owner, hostID); err != nil {
		return nil, nil, err
	}
	stored, err := s.store.Files(ctx, owner, hostID, kind)
	if err != nil {
		return nil, nil, err
	}
	if after != nil {
		mark := &sshdeck.FileEntry{Path: after.Path, LastOpened: after.At, CreatedAt: after.At}
		// The list is in order: skip what is not after the mark.
		i, _ := slices.BinarySearchFunc(stored, mark, func(e, mark *sshdeck.FileEntry) int {
			return sshdeck.CompareFiles(e, mark, kind)
		})
		for i < len(stored) && sshdeck.CompareFiles(stored[i], mark, kind) <= 0 {
			i++
		}
		stored = stored[i:]
	}
	var next *Cursor
	if limit > 0 && len(stored) > limit {
		stored = stored[:limit]
		last := stored[limit-1]
		next = &Cursor{At: last.CreatedAt, Path: last.Path}
		if kind == sshdeck.RecentFile {
			next.At = last.LastOpened
		}
	}
	entries := make([]*Entry, len(stored))
	for i, e := range stored {
		entries[i] = &Entry{
			Name: e.Name, Path: e.Path, IsSSH: e.IsSSH, SSHSessionID: e.SSHSessionID, HostID: e.HostID,
			CreatedAt: e.CreatedAt, LastOpened: e.LastOpened,
		}
	}
	return entries, next, nil
}

// Delete removes the entry at the path from one kind of the host's list.
func (s *Service) Delete(ctx context.Context, owner string, hostID int64, kind sshdeck.FileKind, path string) error {
	if err := checkPath(path); err != nil {
		return err
	}
	sshdeck.SetAuditTarget(ctx, fileTarget(hostID, kind, path))
	if err := s.checkHost(ctx, owner, hostID); err != nil {
		return err
	}
	return s.store.DeleteFile(sshdeck.AuditCommit(ctx), owner, hostID, kind, path)
}

// CheckHostID reports whether id can be a host id at all; the API uses it
// on ids from the query string.
func CheckHostID(id int64) error {
	if id < 1 {
		return sshdeck.Errorf(sshdeck.Invalid, "hostId must be a positive integer")
	}
	return nil
}

func (s *Service) checkHost(ctx context.Context, owner string, hostID int64) error {
	if err := CheckHostID(hostID); err != nil {
		return err
	}
	_, err := s.store.Host(ctx, owner, hostID)
	return hostError(err, hostID)
}

// hostError turns the store's NotFound about the host into the client's
// mistake: hostId must name one of the caller's hosts.
func hostError(err error, hostID int64) error {
	if sshdeck.ErrorCode(err) == sshdeck.NotFound {
		return sshdeck.Errorf(sshdeck.Invalid, "hostId: you have no host %d", hostID)
	}
	return err
}

func (s *Service) entry(owner string, kind sshdeck.FileKind, in *Input) (*sshdeck.FileEntry, error) {
	if in.HostID == nil {
		return nil, sshdeck.Errorf(sshdeck.Invalid, "hostId is required")
	}
	if err := CheckHostID(*in.HostID); err != nil {
		return nil, err
	}
	if err := checkPath(in.Path); err != nil {
		return nil, err
	}
	name := in.Name
	if name == "" {
		name = baseName(in.Path)
	}
	switch {
	case utf8.RuneCountInString(name) > MaxName:
		return nil, sshdeck.Errorf(sshdeck.Invalid, "name: at most %d characters", MaxName)
	case utf8.RuneCountInString(in.SSHSessionID) > MaxSessionID:
		return nil, sshdeck.Errorf(sshdeck.Invalid, "sshSessionId: at most %d characters", MaxSessionID)
	}
	if err := check.First(check.Plain("name", name, ""), check.Plain("sshSessionId", in.SSHSessionID, "")); err != nil {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	e := &sshdeck.FileEntry{
		Owner: owner, HostID: *in.HostID, Kind: kind, Path: in.Path, Name: name,
		IsSSH: in.IsSSH, SSHSessionID: in.SSHSessionID, CreatedAt: now,
	}
	if kind == sshdeck.RecentFile {
		e.LastOpened = now
	}
	return e, nil
}

func checkPath(path string) error {
	switch {
	case path == "":
		return sshdeck.Errorf(sshdeck.Invalid, "path is required")
	case utf8.RuneCountInString(path) > MaxPath:
		return sshdeck.Errorf(sshdeck.Invalid, "path: at most %d characters", MaxPath)
	}
	// A file name may hold a newline or an escape on the host, but a path
	// holding one would be shown to (or pasted into a terminal by) the
	// file manager as something else.
	return check.Plain("path", path, "")
}

// baseName is the last segment of a path, trailing slashes aside; the root
// (or a path of slashes) is its own name.
func baseName(path string) string {
	trimmed := strings.TrimRight(path, "/")
	if trimmed == "" {
		return path
	}
	return trimmed[strings.LastIndex(trimmed, "/")+1:]
}

// fileTarget names an entry of a host's list in its audit records: the
// path is the user's, not a secret.
func fileTarget(hostID int64, kind sshdeck.FileKind, path string) string {
	return fmt.Sprintf("host %d %s %s", hostID, kind, path)
}
