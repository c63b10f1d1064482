// Package files holds the rules of the file manager's lists above any store:
// recent files and shortcuts per host, each entry keyed by its path, on a
// host of the caller's only.
package files

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sshdeck/sshdeck/shared/check"
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
	store Store
	now   func() time.Time
}

// NewService returns a Service; now is the clock (time.Now when nil).
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// AddRecent puts the path on top of the host's recent files, dropping the
// oldest beyond sshdeck.MaxRecentFiles.
func (s *Service) AddRecent(ctx context.Context, owner string, in *Input) error {
	e, err := s.entry(owner, sshdeck.RecentFile, in)
	if err != nil {
		return err
	}
	return hostError(s.store.PutRecentFile(ctx, e, sshdeck.MaxRecentFiles), e.HostID)
}

// AddShortcut adds the path to the host's shortcuts; a path that is there
// already stays as it is (added is false).
func (s *Service) AddShortcut(ctx context.Context, owner string, in *Input) (added bool, err error) {
	e, err := s.entry(owner, sshdeck.Shortcut, in)
	if err != nil {
		return false, err
	}
	added, err = s.store.AddShortcut(ctx, e, sshdeck.MaxShortcuts)
	return added, hostError(err, e.HostID)
}

// List returns at most limit entries of one kind of the owner's host (all
// of them when limit is 0), in the store's order: recent newest first,
// shortcuts oldest first.
func (s *Service) List(ctx context.Context, owner string, hostID int64, kind sshdeck.FileKind, limit int) ([]*Entry, error) {
	if err := s.checkHost(ctx, owner, hostID); err != nil {
		return nil, err
	}
	stored, err := s.store.Files(ctx, owner, hostID, kind)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(stored) > limit {
		stored = stored[:limit]
	}
	entries := make([]*Entry, len(stored))
	for i, e := range stored {
		entries[i] = &Entry{
			Name: e.Name, Path: e.Path, IsSSH: e.IsSSH, SSHSessionID: e.SSHSessionID, HostID: e.HostID,
			CreatedAt: e.CreatedAt, LastOpened: e.LastOpened,
		}
	}
	return entries, nil
}

// Delete removes the entry at the path from one kind of the host's list.
func (s *Service) Delete(ctx context.Context, owner string, hostID int64, kind sshdeck.FileKind, path string) error {
	if err := checkPath(path); err != nil {
		return err
	}
	if err := s.checkHost(ctx, owner, hostID); err != nil {
		return err
	}
	return s.store.DeleteFile(ctx, owner, hostID, kind, path)
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
