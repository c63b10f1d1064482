package hosts

import (
	"cmp"
	"context"

	"github.com/sshdeck/sshdeck/shared/config"
	"github.com/sshdeck/sshdeck/shared/hostchain"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// A host's jump hosts are a chain, as OpenSSH's ProxyJump is; its rules
// and the route that follows it are shared/hostchain's (its doc), which
// the tunnel service reads hosts with too. Every create and update checks
// the chain (checkChain), and a list names each host once (checkHops, with
// the input's fields).

// maxJumpHosts is the limit of hops in one host's route.
func (s *Service) maxJumpHosts() int {
	return cmp.Or(max(s.Limits.JumpHosts, 0), config.DefaultLimits.JumpHosts)
}

func (s *Service) chains() *hostchain.Reader {
	return &hostchain.Reader{Store: s.store, Sealer: s.sealer, Max: s.maxJumpHosts()}
}

// checkChain checks hops, the jump hosts of the owner's host id (0 for a
// host not created yet), against the store.
func (s *Service) checkChain(ctx context.Context, owner string, id int64, hops []sshdeck.JumpHost) error {
	return s.chains().Check(ctx, owner, id, hops)
}

// Route returns the hosts the service goes through to reach the owner's
// host id, first hop first, each hop's own jump hosts before it: what a
// tunnel to the host follows (hostchain.Reader.Route, which the tunnel
// service calls itself). A route that cannot be followed is Invalid,
// naming the host and the hop, as a save of the host would be.
func (s *Service) Route(ctx context.Context, owner string, id int64) ([]*Record, error) {
	_, route, err := s.chains().Route(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	records := make([]*Record, len(route))
	for i, hop := range route {
		records[i] = newRecord(hop.Host, hop.Credentials)
	}
	return records, nil
}
