// Package hostchain reads an owner's stored hosts as the services that use
// them do: a host with its credentials opened (Open, under the additional
// data that shared/hosts seals them with, AD), and the route of jump hosts
// that reaches it (Reader.Route), checked as every save checks a host's
// jump hosts (Reader.Check).
//
// It is apart from shared/hosts, the hosts service of the base_url API,
// so that the tunnel service can read the hosts its tunnels name without
// linking that service (functions/deps_test.go): it needs the store, the
// sealer and the route's rules, and nothing of a host's input or updates.
//
// A host's jump hosts are a chain, as OpenSSH's ProxyJump is: the service
// goes through them in order, first hop first, to reach the host. A hop
// that has jump hosts of its own is reached through them, as ssh reaches
// a ProxyJump host through that host's own ProxyJump: the route to a host
// is, for each of its jump hosts in order, that hop's own route and then
// the hop (Route). So X [A, B] with B [C] is A, C, B, then X. ssh differs
// in that one case: given ProxyJump A,B it reaches B from A without B's
// own ProxyJump (ssh -G -J A B shows proxyjump A whatever B's config
// says); sshdeck reaches a host the same way wherever it appears, and an
// export to ssh_config must spell such a route out.
//
// The rules, checked on every create and update (Check) and by every Route:
//   - each hop is one of the owner's hosts; another owner's host reads as
//     a missing one (the store is scoped to the owner), so the answer
//     never tells that it exists: 400 "jumpHosts[1]: host 7 not found";
//   - no host is its own hop, and no hop's route comes back to a host it
//     passes through (a cycle, 400 naming it: "3 → 5 → 3");
//   - the route has at most Reader.Max hops, the hops' own counted (409
//     limit_exceeded, sshdeck.JumpHostsExceeded);
//   - a list names each host once (shared/hosts checks that on the input).
//
// Checking costs one Host read per host of the route, each host read once
// however often the route passes it, and the walk stops at the limit: at
// most Max reads, never a scan.
//
// A hop may be deleted: the hosts that name it keep its id (nothing scans
// for them). Their route then fails where it reaches the missing hop, and
// saving them is 400 naming it until the list is changed. The checks read
// the hops as they are at the time of the write, not in its transaction:
// two concurrent saves (A naming B while B is saved naming A) can each
// pass and make a cycle, which Route reports as a save would. So does a
// route that a hop's later change made longer than the limit.
package hostchain

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// AD names a field of the host for the additional data of its envelope:
// a host's credentials open as that host's only.
func AD(h *sshdeck.Host) func(field string) string {
	id := strconv.FormatInt(h.ID, 10)
	return func(field string) string { return secret.AD("host", h.Owner, id, field) }
}

// Open opens a stored host's credentials.
func Open(ctx context.Context, s *secret.Sealer, h *sshdeck.Host) (sshdeck.Credentials, error) {
	creds, err := s.OpenCredentials(ctx, h.Sealed, AD(h))
	if err != nil {
		return creds, fmt.Errorf("host %d: %w", h.ID, err)
	}
	return creds, nil
}

// Host is a stored host with its credentials opened.
type Host struct {
	*sshdeck.Host
	sshdeck.Credentials
}

// Reader reads the owner's hosts and their routes from a store. Its zero
// Max is config.DefaultLimits.JumpHosts; a Reader is cheap to make per
// call.
type Reader struct {
	Store  sshdeck.HostStore
	Sealer *secret.Sealer
	// Max is the most hops of one host's route (config.Limits.JumpHosts).
	Max int
}

// max is the limit of hops in one host's route.
func (r *Reader) max() int {
	return cmp.Or(max(r.Max, 0), config.DefaultLimits.JumpHosts)
}

// Route returns the owner's host id and the hosts the service goes through
// to reach it, first hop first, each hop's own jump hosts before it: what
// a tunnel to the host follows. Every one comes with its credentials
// opened. A host that is not the owner's is NotFound; a route that cannot
// be followed (a hop deleted since the host was saved, a cycle or a route
// past the limit made by concurrent saves or by a hop's later changes) is
// Invalid (LimitExceeded past the limit), naming the host and the hop, as
// a save of the host would be: "host 3: jumpHosts[0]: host 1 not found".
func (r *Reader) Route(ctx context.Context, owner string, id int64) (*Host, []*Host, error) {
	h, err := r.Store.Host(ctx, owner, id)
	if err != nil {
		return nil, nil, err
	}
	w := walk{r: r, owner: owner, max: r.max(), route: []*sshdeck.Host{}}
	if err := w.walk(ctx, h.JumpHosts, []int64{id}, -1); err != nil {
		if e, ok := err.(*sshdeck.Error); ok {
			return nil, nil, sshdeck.Errorf(e.Code, "host %d: %s", id, e.Message)
		}
		return nil, nil, err
	}
	host, err := r.open(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	route := make([]*Host, len(w.route))
	for i, hop := range w.route {
		if route[i], err = r.open(ctx, hop); err != nil {
			return nil, nil, err
		}
	}
	return host, route, nil
}

func (r *Reader) open(ctx context.Context, h *sshdeck.Host) (*Host, error) {
	creds, err := Open(ctx, r.Sealer, h)
	if err != nil {
		return nil, err
	}
	return &Host{Host: h, Credentials: creds}, nil
}

// Check checks hops, the jump hosts of the owner's host id (0 for a host
// not created yet), against the store: every rule but the list's own
// duplicates. Its errors name the hop by its place in hops: "jumpHosts[1]".
func (r *Reader) Check(ctx context.Context, owner string, id int64, hops []sshdeck.JumpHost) error {
	if len(hops) == 0 {
		return nil
	}
	w := walk{r: r, owner: owner, max: r.max()}
	if len(hops) > w.max {
		return sshdeck.JumpHostsExceeded(w.max)
	}
	for i, hop := range hops {
		if hop.HostID == id {
			return sshdeck.Errorf(sshdeck.Invalid, "jumpHosts[%d]: host %d is this host; a host cannot be its own jump host", i, id)
		}
	}
	var path []int64
	if id > 0 {
		path = []int64{id}
	}
	return w.walk(ctx, hops, path, -1)
}

// Find returns the owner's host that ref names, as a host's
// tunnelConnections name their endpointHost: its id, or else its name.
// An id the owner has wins over a host of that name. NotFound when no
// host has either; Invalid when several share the name, naming them. It
// reads the owner's hosts a page at a time when ref is no id of theirs.
func (r *Reader) Find(ctx context.Context, owner, ref string) (*sshdeck.Host, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil && id > 0 {
		h, err := r.Store.Host(ctx, owner, id)
		if sshdeck.ErrorCode(err) != sshdeck.NotFound {
			return h, err
		}
	}
	const page = 100
	var found []*sshdeck.Host
	for after := int64(0); ; {
		hs, err := r.Store.Hosts(ctx, owner, after, page)
		if err != nil {
			return nil, err
		}
		for _, h := range hs {
			if h.Name == ref {
				found = append(found, h)
			}
		}
		if len(hs) < page {
			break
		}
		after = hs[len(hs)-1].ID
	}
	switch len(found) {
	case 0:
		return nil, sshdeck.Errorf(sshdeck.NotFound, "no host of yours has this name or id")
	case 1:
		return found[0], nil
	}
	ids := make([]int64, len(found))
	for i, h := range found {
		ids[i] = h.ID
	}
	return nil, sshdeck.Errorf(sshdeck.Invalid, "%d of your hosts have this name (hosts %s): name one by id", len(found), joinIDs(ids))
}

// RouteIDs returns the ids of the hosts the route to the owner's host id
// passes, first hop first, as Route does but without opening any
// credential: what tells which tunnels a change of a host concerns.
func (r *Reader) RouteIDs(ctx context.Context, owner string, id int64) ([]int64, error) {
	h, err := r.Store.Host(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	w := walk{r: r, owner: owner, max: r.max(), route: []*sshdeck.Host{}}
	if err := w.walk(ctx, h.JumpHosts, []int64{id}, -1); err != nil {
		return nil, err
	}
	ids := make([]int64, len(w.route))
	for i, hop := range w.route {
		ids[i] = hop.ID
	}
	return ids, nil
}

// walk follows a route through the store.
type walk struct {
	r     *Reader
	owner string
	max   int
	hops  int                     // hops of the route so far
	read  map[int64]*sshdeck.Host // each host is read once
	route []*sshdeck.Host         // when not nil, the route is appended
}

// walk follows hops, the jump hosts of the last host of path (the hosts
// from the saved one to here, each reached through the next). top is the
// index, in the saved host's own list, of the hop this walk is below (-1
// at the top), for messages.
func (w *walk) walk(ctx context.Context, hops []sshdeck.JumpHost, path []int64, top int) error {
	for i, hop := range hops {
		at := top
		if top < 0 {
			at = i
		}
		if j := slices.Index(path, hop.HostID); j >= 0 {
			return sshdeck.Errorf(sshdeck.Invalid, "jumpHosts[%d]: a cycle: %s", at, arrows(append(slices.Clone(path[j:]), hop.HostID)))
		}
		if w.hops++; w.hops > w.max {
			return sshdeck.JumpHostsExceeded(w.max)
		}
		h, err := w.host(ctx, hop.HostID)
		if sshdeck.ErrorCode(err) == sshdeck.NotFound {
			if top < 0 {
				return sshdeck.Errorf(sshdeck.Invalid, "jumpHosts[%d]: host %d not found", at, hop.HostID)
			}
			return sshdeck.Errorf(sshdeck.Invalid, "jumpHosts[%d]: host %d, a jump host of host %d, not found", at, hop.HostID, path[len(path)-1])
		}
		if err != nil {
			return err
		}
		if err := w.walk(ctx, h.JumpHosts, append(slices.Clip(path), hop.HostID), at); err != nil {
			return err
		}
		if w.route != nil {
			w.route = append(w.route, h)
		}
	}
	return nil
}

func (w *walk) host(ctx context.Context, id int64) (*sshdeck.Host, error) {
	if h, ok := w.read[id]; ok {
		return h, nil
	}
	h, err := w.r.Store.Host(ctx, w.owner, id)
	if err != nil {
		return nil, err
	}
	if w.read == nil {
		w.read = make(map[int64]*sshdeck.Host, w.max)
	}
	w.read[id] = h
	return h, nil
}

// joinIDs writes ids as a list: 3, 5 and 8.
func joinIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// arrows writes ids as a path: 3 → 5 → 3.
func arrows(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, " → ")
}
