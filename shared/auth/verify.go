package auth

import (
	"context"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Verify is Authenticate past the cache: the token is read from the store
// again (and cached anew), so that a revocation made by another process
// (the CLI against DynamoDB, another replica) is seen at once rather than
// within CacheTTL. A long-lived request, such as a status stream, checks
// its token with it.
func (a *Authenticator) Verify(ctx context.Context, header string) (sshdeck.Principal, error) {
	if token, ok := BearerToken(header); ok {
		hash := HashToken(token)
		a.mu.Lock()
		delete(a.cache, hash)
		a.mu.Unlock()
	}
	return a.Authenticate(ctx, header)
}
