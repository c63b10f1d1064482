// Package hosts holds the rules of host records above any store: validation,
// defaults, the keep-absent-credentials merge of an update, sealing of
// credential fields, conditional writes, ownership and the jump hosts'
// chains (chain.go).
package hosts

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/sshkey"
)

// Record is a host as its owner sees it, credentials in plaintext.
type Record struct {
	ID int64 `json:"id"`
	sshdeck.HostConfig
	sshdeck.Credentials
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Version is the record's ETag.
	Version int64 `json:"-"`
}

// Precondition is an If-Match header. A nil Precondition lets every write
// through; Any ("*") lets it through when the host exists; otherwise the
// stored version must be one of Versions (none, when no tag can match).
type Precondition struct {
	Any      bool
	Versions []int64
}

// Allows tells whether a write may go ahead on the stored version.
func (p *Precondition) Allows(version int64) bool {
	return p == nil || p.Any || slices.Contains(p.Versions, version)
}

// version is the version a conditional write must name for p: 0 for any
// version; ok is false when p names several, or none, which only reading
// the host can decide.
func (p *Precondition) version() (version int64, ok bool) {
	switch {
	case p == nil || p.Any:
		return 0, true
	case len(p.Versions) == 1:
		return p.Versions[0], true
	default:
		return 0, false
	}
}

// Service applies the host rules over a store.
type Service struct {
	// Limits are the deployment's limits (config.Limits; FromApp sets
	// them from the settings): Hosts per user and JumpHosts per chain are
	// enforced here. NewService sets config.DefaultLimits, and a zero
	// limit is its default.
	Limits config.Limits

	store sshdeck.HostStore
	// tunnels are the owners' tunnel records, which a host's save keeps
	// up to date (tunnels.go); nil writes none, which only tests of the
	// host rules alone do.
	tunnels sshdeck.TunnelStore
	sealer  *secret.Sealer
	now     func() time.Time
}

// NewService returns a Service with the default limits over the hosts and
// tunnels of a store (one store implements both: sshdeck.Store); now is
// the clock (time.Now when nil).
func NewService(store sshdeck.HostStore, tunnels sshdeck.TunnelStore, sealer *secret.Sealer, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{Limits: config.DefaultLimits, store: store, tunnels: tunnels, sealer: sealer, now: now}
}

// maxHosts is the limit of hosts per user.
func (s *Service) maxHosts() int { return cmp.Or(max(s.Limits.Hosts, 0), config.DefaultLimits.Hosts) }

// maxUpdateAttempts bounds the retries of an unconditional update that lost
// a race with another writer.
const maxUpdateAttempts = 5

// Page returns the owner's hosts with an id above after, ordered by id, at
// most limit of them (0: all): a list is read a page at a time, so that
// what it holds is bounded by a page, not by the owner's hosts.
func (s *Service) Page(ctx context.Context, owner string, after int64, limit int) ([]*Record, error) {
	stored, err := s.store.Hosts(ctx, owner, after, limit)
	if err != nil {
		return nil, err
	}
	// One allocation for the page's records: a 1000-host list makes ten.
	slab := make([]Record, len(stored))
	records := make([]*Record, len(stored))
	for i, h := range stored {
		creds, err := s.open(ctx, h)
		if err != nil {
			return nil, err
		}
		slab[i] = recordOf(h, creds)
		records[i] = &slab[i]
	}
	return records, nil
}

// Configs returns a page of the owner's hosts as Page does, without their
// credentials (not opened, and the sealed ones cleared): what an
// ssh_config export and an import's names need, with no data key.
func (s *Service) Configs(ctx context.Context, owner string, after int64, limit int) ([]*sshdeck.Host, error) {
	stored, err := s.store.Hosts(ctx, owner, after, limit)
	for _, h := range stored {
		h.Sealed = sshdeck.SealedCredentials{}
	}
	return stored, err
}

// Get returns one of the owner's hosts.
func (s *Service) Get(ctx context.Context, owner string, id int64) (*Record, error) {
	h, err := s.store.Host(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	return s.record(ctx, h)
}

// Create stores a new host for the owner.
func (s *Service) Create(ctx context.Context, owner string, in *Input) (*Record, error) {
	cfg, err := in.config()
	if err != nil {
		return nil, err
	}
	cfg, creds := merge(cfg, sshdeck.Credentials{}, in)
	if err := checkKey(cfg, creds); err != nil {
		return nil, err
	}
	// Before an id is spent: a new host cannot be in any chain yet.
	if err := s.checkChain(ctx, owner, 0, cfg.JumpHosts); err != nil {
		return nil, err
	}
	id, err := s.store.NextHostID(ctx, owner)
	if err != nil {
		return nil, err
	}
	now := s.timestamp()
	h := &sshdeck.Host{Owner: owner, ID: id, Version: 1, HostConfig: cfg, CreatedAt: now, UpdatedAt: now}
	if h.Sealed, err = s.seal(ctx, h, creds, nil); err != nil {
		return nil, err
	}
	sshdeck.SetAuditTarget(ctx, hostTarget(id))
	if err := s.store.CreateHost(sshdeck.AuditCommit(ctx), h, s.maxHosts()); err != nil {
		return nil, err
	}
	if err := s.afterWrite(ctx, owner, nil, h); err != nil {
		return nil, err
	}
	return newRecord(h, creds), nil
}

// Update replaces the configuration of one of the owner's hosts; absent
// credentials keep their stored values. With a precondition, a host changed
// since is PreconditionFailed; without one, a lost race is retried on the
// newer record, so no writer's credentials are merged into a stale copy.
func (s *Service) Update(ctx context.Context, owner string, id int64, in *Input, ifMatch *Precondition) (*Record, error) {
	sshdeck.SetAuditTarget(ctx, hostTarget(id))
	cfg, err := in.config()
	if err != nil {
		return nil, err
	}
	return s.readMergeWrite(ctx, owner, id, cfg, in, ifMatch)
}

// readMergeWrite reads the host, merges the input over it, checks the key
// and the jump hosts and writes the result conditioned on the version
// read, retrying a lost race without a precondition.
func (s *Service) readMergeWrite(ctx context.Context, owner string, id int64, cfg sshdeck.HostConfig, in *Input, ifMatch *Precondition) (*Record, error) {
	chainChecked := false
	for attempt := 1; ; attempt++ {
		cur, err := s.store.Host(ctx, owner, id)
		if err != nil {
			return nil, err
		}
		if !ifMatch.Allows(cur.Version) {
			return nil, preconditionFailed(id)
		}
		// The chain is the input's whatever the host held: checked once,
		// once the host is known to exist and the precondition to hold.
		if !chainChecked {
			if err := s.checkChain(ctx, owner, id, cfg.JumpHosts); err != nil {
				return nil, err
			}
			chainChecked = true
		}
		stored, err := s.open(ctx, cur)
		if err != nil {
			return nil, err
		}
		next, creds := merge(cfg, stored, in)
		if in.Key != nil || in.KeyPassword != nil || next.KeyType != cur.KeyType {
			if err := checkKey(next, creds); err != nil {
				return nil, err
			}
		}
		h := *cur
		h.HostConfig, h.Version, h.UpdatedAt = next, cur.Version+1, s.timestamp()
		if h.Sealed, err = s.seal(ctx, &h, creds, &secret.Previous{Plain: stored, Sealed: cur.Sealed}); err != nil {
			return nil, err
		}
		err = s.store.UpdateHost(sshdeck.AuditCommit(ctx), &h)
		switch {
		case err == nil:
			if err := s.afterWrite(ctx, owner, cur, &h); err != nil {
				return nil, err
			}
			return newRecord(&h, creds), nil
		case sshdeck.ErrorCode(err) != sshdeck.Conflict:
			return nil, err
		case ifMatch != nil:
			return nil, preconditionFailed(id)
		case attempt == maxUpdateAttempts:
			return nil, sshdeck.Errorf(sshdeck.Conflict, "host %d is being changed by other requests; try again", id)
		}
	}
}

// Delete removes one of the owner's hosts and everything that belongs to it.
// A precondition naming at most one version is the delete's own condition;
// one naming several, or none, is checked on the host read first.
//
// With tunnels, the host is read first whatever the precondition: its
// name tells which tunnels name it as their endpoint (tunnels.go).
func (s *Service) Delete(ctx context.Context, owner string, id int64, ifMatch *Precondition) error {
	sshdeck.SetAuditTarget(ctx, hostTarget(id))
	version, ok := ifMatch.version()
	var cur *sshdeck.Host
	if !ok || s.tunnels != nil {
		var err error
		if cur, err = s.store.Host(ctx, owner, id); err != nil {
			return err
		}
		if !ifMatch.Allows(cur.Version) {
			return preconditionFailed(id)
		}
		if !ok {
			version = cur.Version
		}
	}
	err := s.store.DeleteHost(sshdeck.AuditCommit(ctx), owner, id, version)
	if sshdeck.ErrorCode(err) == sshdeck.Conflict {
		return preconditionFailed(id)
	}
	if err != nil {
		return err
	}
	return s.afterWrite(ctx, owner, cur, nil)
}

func preconditionFailed(id int64) error {
	return sshdeck.Errorf(sshdeck.PreconditionFailed, "host %d has changed since the ETag in If-Match", id)
}

// merge applies the input's credentials over the stored ones (absent or null
// keeps, "" clears), infers an absent authType and clears what the authType
// does not use.
func merge(cfg sshdeck.HostConfig, creds sshdeck.Credentials, in *Input) (sshdeck.HostConfig, sshdeck.Credentials) {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&creds.Password, in.Password)
	set(&creds.Key, in.Key)
	set(&creds.KeyPassword, in.KeyPassword)
	if cfg.AuthType == "" {
		cfg.AuthType = sshdeck.AuthPassword
		if creds.Key != "" {
			cfg.AuthType = sshdeck.AuthKey
		}
	}
	switch cfg.AuthType {
	case sshdeck.AuthPassword:
		creds.Key, creds.KeyPassword = "", ""
	case sshdeck.AuthKey:
		creds.Password = ""
	case sshdeck.AuthNone:
		creds = sshdeck.Credentials{}
	}
	return cfg, creds
}

// checkKey parses a non-empty key with its passphrase as its keyType says.
func checkKey(cfg sshdeck.HostConfig, creds sshdeck.Credentials) error {
	if creds.Key == "" {
		return nil
	}
	_, err := sshkey.Parse(creds.Key, creds.KeyPassword, cfg.KeyType)
	return err
}

func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

func (s *Service) seal(ctx context.Context, h *sshdeck.Host, creds sshdeck.Credentials, prev *secret.Previous) (sshdeck.SealedCredentials, error) {
	sealed, err := s.sealer.SealCredentials(ctx, creds, hostchain.AD(h), prev)
	if err != nil {
		return sealed, fmt.Errorf("host %d: %w", h.ID, err)
	}
	return sealed, nil
}

func (s *Service) open(ctx context.Context, h *sshdeck.Host) (sshdeck.Credentials, error) {
	return hostchain.Open(ctx, s.sealer, h)
}

func (s *Service) record(ctx context.Context, h *sshdeck.Host) (*Record, error) {
	creds, err := s.open(ctx, h)
	if err != nil {
		return nil, err
	}
	return newRecord(h, creds), nil
}

// newRecord renders a stored host. A store may return empty lists as nil;
// the API shows them as [] all the same.
func newRecord(h *sshdeck.Host, creds sshdeck.Credentials) *Record {
	r := recordOf(h, creds)
	return &r
}

func recordOf(h *sshdeck.Host, creds sshdeck.Credentials) Record {
	cfg := h.HostConfig
	if cfg.Tags == nil {
		cfg.Tags = []string{}
	}
	if cfg.TunnelConnections == nil {
		cfg.TunnelConnections = []sshdeck.TunnelConnection{}
	}
	if cfg.JumpHosts == nil {
		cfg.JumpHosts = []sshdeck.JumpHost{}
	}
	return Record{ID: h.ID, HostConfig: cfg, Credentials: creds, CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt, Version: h.Version}
}

// hostTarget names a host in its audit records.
func hostTarget(id int64) string { return fmt.Sprintf("host %d", id) }

// importTarget names the hosts of an import, whose ids are consecutive.
func importTarget(hosts []*sshdeck.Host) string {
	if len(hosts) == 1 {
		return hostTarget(hosts[0].ID)
	}
	return fmt.Sprintf("hosts %d to %d", hosts[0].ID, hosts[len(hosts)-1].ID)
}
