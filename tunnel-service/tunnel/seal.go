package tunnel

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// ad binds a tunnel's envelopes to the owner, the tunnel and the hop. The
// name is escaped: a slash in it would otherwise read as a separator.
func ad(owner, name, role string) func(field string) string {
	return func(field string) string { return secret.AD("tunnel", owner, url.PathEscape(name), role, field) }
}

// The roles that bind each hop's envelopes: a jump host's is its place in
// the chain ("jump1" first), so that no hop's credentials open as
// another's. A source behind jump hosts has a role of its own: a service
// from before jump hosts, which reads such a tunnel but not its chain and
// would dial the source directly (sending its credentials to whatever
// answers at that address in the service's own network), cannot open them
// and fails the tunnel instead.
const sealedSourceBehindJumps = "source-behind-jumps"

func sealedJump(i int) string { return "jump" + strconv.Itoa(i+1) }

func sealedSource(jumps int) string {
	if jumps > 0 {
		return sealedSourceBehindJumps
	}
	return "source"
}

func sealTunnel(ctx context.Context, s *secret.Sealer, owner, name string, c sshdeck.TunnelCredentials) (sshdeck.SealedTunnelCredentials, error) {
	var out sshdeck.SealedTunnelCredentials
	var err error
	if len(c.Jumps) > 0 {
		out.Jumps = make([]sshdeck.SealedCredentials, len(c.Jumps))
	}
	for i := range c.Jumps {
		if out.Jumps[i], err = s.SealCredentials(ctx, c.Jumps[i], ad(owner, name, sealedJump(i)), nil); err != nil {
			return out, fmt.Errorf("tunnel jump host %d: %w", i+1, err)
		}
	}
	if out.Source, err = s.SealCredentials(ctx, c.Source, ad(owner, name, sealedSource(len(c.Jumps))), nil); err != nil {
		return out, fmt.Errorf("tunnel source: %w", err)
	}
	if out.Endpoint, err = s.SealCredentials(ctx, c.Endpoint, ad(owner, name, "endpoint"), nil); err != nil {
		return out, fmt.Errorf("tunnel endpoint: %w", err)
	}
	return out, nil
}

func openTunnel(ctx context.Context, s *secret.Sealer, t *sshdeck.Tunnel) (sshdeck.TunnelCredentials, error) {
	var out sshdeck.TunnelCredentials
	var err error
	jumps := len(t.Spec.Jumps)
	if len(t.Sealed.Jumps) != jumps {
		return out, fmt.Errorf("tunnel: %d jump hosts but %d sealed credentials", jumps, len(t.Sealed.Jumps))
	}
	if jumps > 0 {
		out.Jumps = make([]sshdeck.Credentials, jumps)
	}
	for i := range out.Jumps {
		if out.Jumps[i], err = s.OpenCredentials(ctx, t.Sealed.Jumps[i], ad(t.Owner, t.Name, sealedJump(i))); err != nil {
			return out, fmt.Errorf("tunnel jump host %d: %w", i+1, err)
		}
	}
	if out.Source, err = s.OpenCredentials(ctx, t.Sealed.Source, ad(t.Owner, t.Name, sealedSource(jumps))); err != nil {
		return out, fmt.Errorf("tunnel source: %w", err)
	}
	if out.Endpoint, err = s.OpenCredentials(ctx, t.Sealed.Endpoint, ad(t.Owner, t.Name, "endpoint")); err != nil {
		return out, fmt.Errorf("tunnel endpoint: %w", err)
	}
	return out, nil
}
