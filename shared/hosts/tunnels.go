package hosts

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/tunnelrecord"
)

// A host's tunnelConnections are live tunnels (API.md, "Hosts as OpenSSH
// users keep them"), and tunnels from stored hosts reference them rather
// than copy them (tunnel-service/tunnel, refs.go): the tunnel service
// reads the hosts at each attempt. What a host's save changes of its
// owner's tunnels is written here, after the host's write (afterWrite):
//
//   - item i of the host's tunnelConnections is the tunnel "<id>:<i>"
//     (sshdeck.HostTunnelSpec): a new or changed item is written at a new
//     generation, to run when autoStart says so (the tunnel service's
//     reconcile starts it on some replica; a replica running an older
//     generation restarts it at its next heartbeat); an item left as it
//     was is not written, so its tunnel runs on, or stays stopped, as it
//     was; the tunnels past the list's end, and all of them when the host
//     is deleted, are deleted (a replica running one stops it at its next
//     heartbeat, when its lease renewal finds no tunnel);
//   - when the host's connection changes (ip, port, username, authType,
//     keyType, a credential, jumpHosts; or its deletion), every running
//     tunnel of the owner (and every failed autoStart one: restartable)
//     that goes through it, as source, endpoint or any
//     hop of the source's route, gets a new generation: its replica
//     restarts it with what the host now says. So does a running tunnel
//     whose endpointHost names the host by a name it takes or leaves, so
//     that a tunnel waiting for an endpoint saved later connects at once.
//     A change of only the name, tags, folder or the like restarts
//     nothing else.
//
// The host's write is the commit point: a write of its tunnels that fails
// after it is the request's error (LimitExceeded when the owner's tunnels
// are at config.Limits.Tunnels), whose message says the host is saved, and
// saving the host again writes what is missing, since every step above is
// idempotent. A crash between the two writes leaves the tunnels as they
// were until the host's next save, with one mend on the tunnel service's
// side: a host tunnel whose host or item is gone is deleted by the replica
// that tries it (refs.go).
//
// Finding the tunnels a host concerns reads the owner's tunnels (at most
// config.Limits.Tunnels) and, for each running one with a stored source,
// the ids on its source's route, once per source (a per-call cache), with
// no credential opened.

// afterWrite writes what a committed write of the owner's host changes of
// the owner's tunnels: old is nil on a create, new nil on a delete. The
// import of many hosts at once calls it for each host it created.
func (s *Service) afterWrite(ctx context.Context, owner string, old, new *sshdeck.Host) error {
	if s.tunnels == nil {
		return nil
	}
	sync := &tunnelSync{s: s, owner: owner, old: old, new: new, routes: map[int64][]int64{}}
	sync.w = tunnelrecord.Writer{Store: s.tunnels, Limit: s.maxTunnels(), Now: s.now}
	if err := sync.run(ctx); err != nil {
		return err
	}
	if len(sync.done) == 0 {
		// No item tunnel written or deleted: nothing of another save's
		// to undo (settle).
		return nil
	}
	return sync.settle(ctx)
}

// maxSettleRounds bounds settle against a host saved again and again.
const maxSettleRounds = 3

// settle makes the host's item tunnels those of the host as stored now.
// Two saves of one host at once each write their own list's tunnels after
// their own commit, in either order: the save committed first, syncing
// last, would delete the items the host has again (or write back its
// older items) with nothing to mend it. So, after its writes, a sync reads
// the host again and, when another save or a delete has committed since,
// writes that host's items (only: the restarts of what changed are that
// save's own) until the host it read is the one it wrote. The last
// tunnel write is then always followed by a read of the host as it ends,
// whichever save made it.
func (y *tunnelSync) settle(ctx context.Context) error {
	for range maxSettleRounds {
		id := y.host().ID
		cur, err := y.s.store.Host(ctx, y.owner, id)
		switch {
		case sshdeck.ErrorCode(err) == sshdeck.NotFound:
			cur = nil
		case err != nil:
			return y.saved(err)
		}
		if cur == nil && y.new == nil || cur != nil && y.new != nil && cur.Version == y.new.Version {
			return nil
		}
		again := &tunnelSync{s: y.s, owner: y.owner, old: cur, new: cur, w: y.w, routes: y.routes, itemsOnly: true}
		if cur == nil {
			again.old = &sshdeck.Host{ID: id}
		}
		if err := again.run(ctx); err != nil || len(again.done) == 0 {
			return err
		}
		y = again
	}
	return nil
}

// afterImport is afterWrite for each host an import created: their
// tunnelConnections, and the owner's tunnels waiting for an endpoint by a
// name one of them takes. An import with no tunnelConnections into an
// owner without tunnels, the usual first import, reads the tunnels once
// and writes nothing.
func (s *Service) afterImport(ctx context.Context, owner string, hosts []*sshdeck.Host) error {
	if s.tunnels == nil {
		return nil
	}
	if !slices.ContainsFunc(hosts, func(h *sshdeck.Host) bool { return len(h.TunnelConnections) > 0 }) {
		tunnels, err := s.tunnels.Tunnels(ctx, owner)
		if err != nil {
			return err
		}
		if len(tunnels) == 0 {
			return nil
		}
	}
	var errs []error
	for _, h := range hosts {
		errs = append(errs, s.afterWrite(ctx, owner, nil, h))
	}
	return errors.Join(errs...)
}

// maxTunnels is the limit of tunnels per user.
func (s *Service) maxTunnels() int {
	return cmp.Or(max(s.Limits.Tunnels, 0), config.DefaultLimits.Tunnels)
}

// tunnelSync is one afterWrite.
type tunnelSync struct {
	s        *Service
	owner    string
	old, new *sshdeck.Host
	w        tunnelrecord.Writer
	routes   map[int64][]int64 // a source's route's ids, read once
	done     map[string]bool   // the tunnels written or deleted already
	// itemsOnly writes the host's item tunnels and restarts nothing
	// (settle).
	itemsOnly bool
}

func (y *tunnelSync) host() *sshdeck.Host { return cmp.Or(y.new, y.old) }

func (y *tunnelSync) run(ctx context.Context) error {
	h := y.host()
	y.done = map[string]bool{}
	var errs []error
	if y.new != nil {
		for i := range y.new.TunnelConnections {
			if err := y.writeItem(ctx, i); err != nil {
				errs = append(errs, err)
			}
		}
	}
	tunnels, err := y.s.tunnels.Tunnels(ctx, y.owner)
	if err != nil {
		return y.saved(errors.Join(append(errs, err)...))
	}
	for _, t := range tunnels {
		id, i, ok := sshdeck.ParseHostTunnelName(t.Name)
		if !ok || id != h.ID || !t.Spec.HostTunnel || (y.new != nil && i < len(y.new.TunnelConnections)) {
			continue
		}
		y.done[t.Name] = true
		if err := y.s.tunnels.DeleteTunnel(ctx, y.owner, t.Name, 0); err != nil && sshdeck.ErrorCode(err) != sshdeck.NotFound {
			errs = append(errs, err)
		}
	}
	changed, names := y.changes()
	if !y.itemsOnly && (changed || len(names) > 0) {
		for _, t := range tunnels {
			if !restartable(t) || y.done[t.Name] {
				continue
			}
			through, err := y.through(ctx, t, changed, names)
			if err == nil && through {
				err = y.restart(ctx, t.Name)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return y.saved(errors.Join(errs...))
}

// saved makes err the request's error, saying that the host is saved:
// its code is the first failure's (LimitExceeded for the limit of
// tunnels), and saving the host again mends it.
func (y *tunnelSync) saved(err error) error {
	if err == nil {
		return nil
	}
	h := y.host()
	var e *sshdeck.Error
	if errors.As(err, &e) {
		what := "saved"
		if y.new == nil {
			what = "deleted"
		}
		return sshdeck.Errorf(e.Code, "host %d is %s, but its tunnels are not all up to date (%s); save the host again to finish", h.ID, what, e.Message)
	}
	return err
}

// writeItem writes item i's tunnel when it is new or changed.
func (y *tunnelSync) writeItem(ctx context.Context, i int) error {
	h := y.new
	name := sshdeck.HostTunnelName(h.ID, i)
	spec := sshdeck.HostTunnelSpec(h, i)
	_, err := y.w.Write(ctx, y.owner, name, true, func(t *sshdeck.Tunnel) error {
		if t.Generation > 1 && t.Spec.HostTunnel && sshdeck.SameHostTunnel(&t.Spec, &spec) {
			return tunnelrecord.Unchanged
		}
		t.Spec, t.Sealed, t.Run = spec, sshdeck.SealedTunnelCredentials{}, spec.AutoStart
		t.Status = sshdeck.TunnelStatus{State: sshdeck.TunnelConnecting, Reason: "saved with host " + strconv.FormatInt(h.ID, 10) + "; a tunnel service replica starts it"}
		if !spec.AutoStart {
			t.Status = sshdeck.TunnelStatus{State: sshdeck.TunnelDisconnected,
				Reason: `autoStart is off: POST /ssh/tunnel/connect {"name": "` + name + `"} starts it`}
		}
		return nil
	})
	switch {
	case errors.Is(err, tunnelrecord.Unchanged):
		return nil
	case err != nil:
		return sshdeck.Errorf(sshdeck.ErrorCode(err), "tunnelConnections[%d] (tunnel %q): %s", i, name, sshdeck.ErrorMessage(err))
	}
	y.done[name] = true
	return nil
}

// changes tells whether the host's connection changed, and the names by
// which a tunnelConnection's endpointHost may name it that the write made
// or unmade (with its id when the connection changed).
func (y *tunnelSync) changes() (changed bool, names []string) {
	old, new := y.old, y.new
	switch {
	case old == nil:
		return false, []string{strconv.FormatInt(new.ID, 10), new.Name}
	case new == nil:
		return true, []string{strconv.FormatInt(old.ID, 10), old.Name}
	}
	changed = old.IP != new.IP || old.Port != new.Port || old.Username != new.Username ||
		old.AuthType != new.AuthType || old.KeyType != new.KeyType ||
		!slices.Equal(old.JumpHosts, new.JumpHosts) || !sameSealed(&old.Sealed, &new.Sealed)
	if changed {
		return true, []string{strconv.FormatInt(new.ID, 10), old.Name, new.Name}
	}
	if old.Name != new.Name {
		return false, []string{old.Name, new.Name}
	}
	return false, nil
}

// sameSealed compares credentials by their envelopes: an update keeps the
// envelope of a field whose value did not change (secret.Previous), so a
// new envelope is a new value, and no credential is opened to tell.
func sameSealed(a, b *sshdeck.SealedCredentials) bool {
	return bytes.Equal(a.Password, b.Password) && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.KeyPassword, b.KeyPassword)
}

// through tells whether tunnel t goes through the host: by its endpoint's
// reference to one of names, or, when the connection changed, as its
// source, its endpoint or a hop of its source's route.
func (y *tunnelSync) through(ctx context.Context, t *sshdeck.Tunnel, changed bool, names []string) (bool, error) {
	id, sp := y.host().ID, &t.Spec
	if sp.EndpointHost != "" && slices.Contains(names, sp.EndpointHost) {
		return true, nil
	}
	if !changed {
		return false, nil
	}
	if sp.SourceHostID == id || sp.EndpointHostID == id {
		return true, nil
	}
	if sp.SourceHostID == 0 {
		return false, nil
	}
	route, ok := y.routes[sp.SourceHostID]
	if !ok {
		r := hostchain.Reader{Store: y.s.store, Max: y.s.maxJumpHosts()}
		var err error
		route, err = r.RouteIDs(ctx, y.owner, sp.SourceHostID)
		switch code := sshdeck.ErrorCode(err); {
		case code == sshdeck.NotFound || code == sshdeck.Invalid || code == sshdeck.LimitExceeded:
			// A source gone or a route broken: the tunnel's next attempt
			// says so, whatever this host is.
			route, err = nil, nil
		case err != nil:
			return false, err
		}
		y.routes[sp.SourceHostID] = route
	}
	return slices.Contains(route, id), nil
}

// restartable tells whether a host's change restarts t: when it runs,
// and when it is an autoStart tunnel that failed (a wrong password, say,
// which is not retried) and nobody disconnected, since the change may be
// what mends it; a replica's reconcile starts it again. A tunnel that is
// not autoStart and stopped is left alone: its next connect reads the
// hosts anyway, and no replica would take it up.
func restartable(t *sshdeck.Tunnel) bool {
	return t.Run || (t.Spec.AutoStart && t.Status.State == sshdeck.TunnelFailed && !t.Status.ManualDisconnect)
}

// restart writes a restartable tunnel at a new generation, to run: the
// replica running it restarts it at its next heartbeat, or a replica's
// reconcile starts it.
func (y *tunnelSync) restart(ctx context.Context, name string) error {
	h := y.host()
	why := "host " + strconv.FormatInt(h.ID, 10) + " was saved; restarting with it"
	if y.new == nil {
		why = "host " + strconv.FormatInt(h.ID, 10) + " was deleted; restarting without it"
	}
	_, err := y.w.Write(ctx, y.owner, name, false, func(t *sshdeck.Tunnel) error {
		if !restartable(t) {
			return tunnelrecord.Unchanged
		}
		t.Run = true
		t.Status = sshdeck.TunnelStatus{State: sshdeck.TunnelConnecting, Reason: why}
		return nil
	})
	switch code := sshdeck.ErrorCode(err); {
	case err == nil, errors.Is(err, tunnelrecord.Unchanged), code == sshdeck.NotFound:
		return nil
	}
	return err
}
