package sshdeck

import (
	"context"
	"slices"
)

// Principal is the authenticated caller of an operation.
type Principal struct {
	UserID string
	// TokenID is the id of the token the caller brought: "" where none
	// is known (a test's caller).
	TokenID string
	// Scopes are what the caller's token may do: its own scopes within
	// its user's (an admin scope only for an admin user), in AllScopes
	// order.
	Scopes []Scope
}

// Can reports whether the caller holds the scope. Every route names the
// scope it needs and the route wrapper of each service asks this, once.
// The empty scope (a route any valid token may call) is held by everyone.
func (p Principal) Can(s Scope) bool {
	return s == "" || slices.Contains(p.Scopes, s)
}

// Admin reports whether the caller acts as an admin: an admin user with a
// token that carries the admin scope.
func (p Principal) Admin() bool { return p.Can(ScopeAdmin) }

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
