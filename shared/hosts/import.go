package hosts

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// An import creates hosts from a list of items, all or none (Import). An
// item may name another item of the same import where a host names a host
// (a jump host, a tunnel's endpoint), since the hosts have no ids before
// they are created: the JSON import by the id an item had in the export
// it came from (ResolveRefs), the ssh_config import by alias
// (shared/hostconfig). Every rule of a create holds for every item, the
// jump hosts' checked over the stored hosts and the import's together.

// ImportItem is one host of an import.
type ImportItem struct {
	Input *Input
	// HopItems holds, for each of Input.JumpHosts, the index of the item
	// of the import that the hop names, or -1 for a stored host of the
	// owner (then Input.JumpHosts[i].HostID is its id). Nil: every hop is
	// a stored host.
	HopItems []int
	// EndpointItems holds, for each of Input.TunnelConnections, the index
	// of the item whose host is its endpoint, or -1 when endpointHost is
	// as given. Nil: all are as given.
	EndpointItems []int
	// Err is the item's error found before Import (a reference that names
	// nothing, a line of a config): Import reports it as the item's.
	Err error
}

// ImportResult is the outcome of one item: its new id, or its error.
type ImportResult struct {
	Index int          `json:"index"`
	ID    int64        `json:"id,omitempty"`
	Error string       `json:"error,omitempty"`
	Code  sshdeck.Code `json:"code,omitempty"`
}

// ErrImportRefused is Import's error when an item failed: nothing was
// written, and the results say why each item failed.
var ErrImportRefused = sshdeck.Errorf(sshdeck.Invalid, "the import was refused, nothing was written: see each item's error in results")

// placeholder is the hop id an item's reference to another item holds
// until ids are allocated: positive and unique per item (so the input's
// own checks pass), far past any id an owner can reach.
func placeholder(item int) int64 { return 1<<62 + int64(item) }

// Import creates the items' hosts for the owner, all or none, and returns
// one result per item. When any item fails, nothing is written: the
// results hold every item's error (those of items checked after the
// first failure too, as far as they can be checked) and the error is
// ErrImportRefused. An import past the owner's limit of hosts is
// LimitExceeded, of more than sshdeck.MaxHostBatch items Invalid, both
// without results. Ids are allocated once every item is valid on its
// own; an import refused after that (a jump chain, the limit) skips them.
func (s *Service) Import(ctx context.Context, owner string, items []ImportItem) ([]ImportResult, error) {
	results := make([]ImportResult, len(items))
	if len(items) == 0 {
		return results, nil
	}
	if len(items) > sshdeck.MaxHostBatch {
		return nil, sshdeck.Errorf(sshdeck.Invalid, "an import has %d hosts; at most %d are allowed in one (import the rest in another)", len(items), sshdeck.MaxHostBatch)
	}
	failed := false
	// fail records the item's error; one that is no client's (no code)
	// is the whole import's, an internal one.
	fail := func(i int, err error) error {
		if sshdeck.ErrorCode(err) == "" {
			return err
		}
		results[i] = ImportResult{Index: i, Error: fmt.Sprintf("items[%d]: %s", i, sshdeck.ErrorMessage(err)), Code: sshdeck.ErrorCode(err)}
		failed = true
		return nil
	}
	hosts := make([]*sshdeck.Host, len(items))
	creds := make([]sshdeck.Credentials, len(items))
	for i, item := range items {
		results[i].Index = i
		if err := item.check(len(items)); err != nil {
			return nil, err
		}
		err := item.Err
		var cfg sshdeck.HostConfig
		if err == nil {
			cfg, err = item.input().config()
		}
		if err == nil {
			cfg, creds[i] = merge(cfg, sshdeck.Credentials{}, item.Input)
			err = checkKey(cfg, creds[i])
		}
		if err != nil {
			if err := fail(i, err); err != nil {
				return nil, err
			}
			continue
		}
		hosts[i] = &sshdeck.Host{Owner: owner, Version: 1, HostConfig: cfg}
	}
	if failed {
		return results, ErrImportRefused
	}
	first, err := s.store.NextHostIDs(ctx, owner, len(items))
	if err != nil {
		return nil, err
	}
	now := s.timestamp()
	for i, h := range hosts {
		h.ID, h.CreatedAt, h.UpdatedAt = first+int64(i), now, now
	}
	for i, item := range items {
		h := hosts[i]
		for j, k := range item.HopItems {
			if k >= 0 {
				h.JumpHosts[j].HostID = hosts[k].ID
			}
		}
		for j, k := range item.EndpointItems {
			if k >= 0 {
				h.TunnelConnections[j].EndpointHost = strconv.FormatInt(hosts[k].ID, 10)
			}
		}
	}
	// The chains, over the stored hosts and the import's: a Reader over a
	// store that also holds the new hosts, as they will be.
	chains := &hostchain.Reader{Store: overlay{s.store, hosts, first}, Sealer: s.sealer, Max: s.maxJumpHosts()}
	for i, h := range hosts {
		if err := chains.Check(ctx, owner, h.ID, h.JumpHosts); err != nil {
			if sshdeck.ErrorCode(err) == "" {
				return nil, err
			}
			fail(i, annotate(err, hosts, first))
		}
	}
	if failed {
		return results, ErrImportRefused
	}
	for i, h := range hosts {
		if h.Sealed, err = s.seal(ctx, h, creds[i], nil); err != nil {
			return nil, err
		}
	}
	sshdeck.SetAuditTarget(ctx, importTarget(hosts))
	if err := s.store.CreateHosts(sshdeck.AuditCommit(ctx), hosts, s.maxHosts()); err != nil {
		return nil, err
	}
	for i, h := range hosts {
		results[i].ID = h.ID
	}
	return results, s.afterImport(ctx, owner, hosts)
}

// check checks the item's references: one per hop and per tunnel at most,
// each an item of the import other than itself.
func (item *ImportItem) check(n int) error {
	switch {
	case item.Input == nil && item.Err != nil:
		return nil
	case item.Input == nil:
		return errors.New("import item without input")
	case item.HopItems != nil && len(item.HopItems) != len(item.Input.JumpHosts):
		return errors.New("import item: HopItems does not match JumpHosts")
	case item.EndpointItems != nil && len(item.EndpointItems) != len(item.Input.TunnelConnections):
		return errors.New("import item: EndpointItems does not match TunnelConnections")
	}
	for _, k := range append(append([]int(nil), item.HopItems...), item.EndpointItems...) {
		if k >= n {
			return fmt.Errorf("import item: reference to item %d of %d", k, n)
		}
	}
	return nil
}

// input is the item's input with each hop that names an item holding a
// placeholder id (the caller's input unchanged).
func (item *ImportItem) input() *Input {
	if item.HopItems == nil {
		return item.Input
	}
	in := *item.Input
	in.JumpHosts = append([]sshdeck.JumpHost(nil), in.JumpHosts...)
	for j, k := range item.HopItems {
		if k >= 0 {
			in.JumpHosts[j].HostID = placeholder(k)
		}
	}
	return &in
}

// JSONItem is an item of a JSON import: a host as a create takes it, and
// the id it had in the export it came from, by which other items name it.
type JSONItem struct {
	ID int64 `json:"id"`
	Input
}

// ResolveRefs turns the items of a JSON import into ImportItems: a hop's
// hostId, or a tunnel's endpointHost of digits, that is the id of an item
// names that item (its new host once created); any other names a stored
// host of the owner, as in a create. Two items with one id are the second's
// error. An item's id names it only within the import: stored hosts keep
// theirs, and an item's id that is also a stored host's names the item.
func ResolveRefs(items []JSONItem) []ImportItem {
	refs := make(map[int64]int, len(items))
	out := make([]ImportItem, len(items))
	for i := range items {
		out[i].Input = &items[i].Input
		id := items[i].ID
		if id <= 0 {
			continue
		}
		if j, dup := refs[id]; dup {
			out[i].Err = sshdeck.Errorf(sshdeck.Invalid, "id %d is items[%d]'s already; items name each other by id", id, j)
			continue
		}
		refs[id] = i
	}
	for i := range out {
		in := out[i].Input
		if len(in.JumpHosts) > 0 {
			out[i].HopItems = make([]int, len(in.JumpHosts))
			for j, hop := range in.JumpHosts {
				out[i].HopItems[j] = itemOf(refs, hop.HostID)
			}
		}
		if len(in.TunnelConnections) > 0 {
			out[i].EndpointItems = make([]int, len(in.TunnelConnections))
			for j, t := range in.TunnelConnections {
				id, err := strconv.ParseInt(t.EndpointHost, 10, 64)
				if err != nil || strconv.FormatInt(id, 10) != t.EndpointHost {
					id = 0
				}
				out[i].EndpointItems[j] = itemOf(refs, id)
			}
		}
	}
	return out
}

func itemOf(refs map[int64]int, id int64) int {
	if k, ok := refs[id]; ok && id > 0 {
		return k
	}
	return -1
}

// overlay is a HostStore whose Host also finds the hosts of an import,
// ids from first on: what the chain checks read.
type overlay struct {
	sshdeck.HostStore
	hosts []*sshdeck.Host
	first int64
}

func (o overlay) Host(ctx context.Context, owner string, id int64) (*sshdeck.Host, error) {
	if i := id - o.first; i >= 0 && i < int64(len(o.hosts)) {
		return o.hosts[i], nil
	}
	return o.HostStore.Host(ctx, owner, id)
}

var number = regexp.MustCompile(`\b[0-9]+\b`)

// annotate adds to a chain's error which items the new ids it names are:
// the client knows the items, not the ids they were about to get.
func annotate(err error, hosts []*sshdeck.Host, first int64) error {
	msg := sshdeck.ErrorMessage(err)
	var names []string
	seen := map[int64]bool{}
	for _, m := range number.FindAllString(msg, -1) {
		id, _ := strconv.ParseInt(m, 10, 64)
		if i := id - first; i >= 0 && i < int64(len(hosts)) && !seen[id] {
			seen[id] = true
			names = append(names, fmt.Sprintf("host %d is items[%d]", id, i))
		}
	}
	if len(names) > 0 {
		msg += " (in this import: " + strings.Join(names, ", ") + ")"
	}
	return sshdeck.Errorf(sshdeck.ErrorCode(err), "%s", msg)
}
