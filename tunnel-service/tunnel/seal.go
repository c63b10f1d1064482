package tunnel

import (
	"context"
	"fmt"
	"net/url"

	"github.com/sshdeck/sshdeck/shared/secret"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// ad binds a tunnel's envelopes to the owner, the tunnel and the hop. The
// name is escaped: a slash in it would otherwise read as a separator.
func ad(owner, name, role string) func(field string) string {
	return func(field string) string { return secret.AD("tunnel", owner, url.PathEscape(name), role, field) }
}

func sealTunnel(ctx context.Context, s *secret.Sealer, owner, name string, c sshdeck.TunnelCredentials) (sshdeck.SealedTunnelCredentials, error) {
	var out sshdeck.SealedTunnelCredentials
	var err error
	if out.Source, err = s.SealCredentials(ctx, c.Source, ad(owner, name, "source"), nil); err != nil {
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
	if out.Source, err = s.OpenCredentials(ctx, t.Sealed.Source, ad(t.Owner, t.Name, "source")); err != nil {
		return out, fmt.Errorf("tunnel source: %w", err)
	}
	if out.Endpoint, err = s.OpenCredentials(ctx, t.Sealed.Endpoint, ad(t.Owner, t.Name, "endpoint")); err != nil {
		return out, fmt.Errorf("tunnel endpoint: %w", err)
	}
	return out, nil
}
