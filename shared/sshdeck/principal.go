package sshdeck

import "context"

// Principal is the authenticated caller of an operation.
type Principal struct {
	UserID string
	Admin  bool
}

type principalKey struct{}

// NewContextWithPrincipal returns a context that carries p.
func NewContextWithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFromContext returns the caller put into ctx by the local auth
// middleware or by the Lambda adapter, and whether there was one.
func PrincipalFromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok && p.UserID != ""
}
