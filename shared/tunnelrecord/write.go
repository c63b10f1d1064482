// Package tunnelrecord writes tunnel records as every writer must: the
// tunnel service's Manager (connect, disconnect) and the hosts service,
// which keeps a host's tunnelConnections' records (shared/hosts,
// tunnels.go). It is apart from both so that each links it without the
// other.
package tunnelrecord

import (
	"context"
	"errors"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Unchanged, returned by a change, leaves the record as it is: Write then
// returns the stored record and Unchanged.
var Unchanged = errors.New("tunnel record unchanged")

// maxWriteAttempts bounds the read-modify-write of a tunnel record racing
// other writers.
const maxWriteAttempts = 3

// Writer writes one store's tunnel records.
type Writer struct {
	Store sshdeck.TunnelStore
	// Limit is the most tunnels one owner may have (config.Limits.Tunnels);
	// a new record past it is LimitExceeded (sshdeck.TunnelLimit).
	Limit int
	Now   func() time.Time
}

// Write changes the owner's tunnel (creating it when create is set) under
// the guard of its generation: change sees the record at its next
// generation, and a writer that raced it makes Write read again, up to
// three times (then Conflict). A running replica restarts a tunnel whose
// generation changed at its next heartbeat, so every write is a restart
// of a running tunnel: change returns Unchanged when there is nothing to
// write.
func (w *Writer) Write(ctx context.Context, owner, name string, create bool, change func(*sshdeck.Tunnel) error) (*sshdeck.Tunnel, error) {
	for range maxWriteAttempts {
		now := w.Now().UTC()
		var t sshdeck.Tunnel
		cur, err := w.Store.Tunnel(ctx, owner, name)
		switch {
		case err == nil:
			t = *cur
		case sshdeck.ErrorCode(err) == sshdeck.NotFound && create:
			t = sshdeck.Tunnel{Owner: owner, Name: name, CreatedAt: now} // generation 1 below
		case sshdeck.ErrorCode(err) == sshdeck.NotFound:
			return nil, sshdeck.Errorf(sshdeck.NotFound, "no tunnel named %q", name)
		default:
			return nil, err
		}
		t.Generation++
		if err := change(&t); errors.Is(err, Unchanged) {
			return cur, Unchanged
		} else if err != nil {
			return nil, err
		}
		t.Status.UpdatedAt, t.UpdatedAt = now, now
		if t.Generation == 1 {
			err = w.Store.CreateTunnel(ctx, &t, w.Limit)
		} else {
			err = w.Store.PutTunnel(ctx, &t)
		}
		if sshdeck.ErrorCode(err) == sshdeck.Conflict {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &t, nil
	}
	return nil, sshdeck.Errorf(sshdeck.Conflict, "tunnel %q changed while this request wrote it; try again", name)
}
