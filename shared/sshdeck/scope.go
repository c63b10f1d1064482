package sshdeck

import (
	"slices"
	"strings"
)

// Scope is one right a token may carry (API.md, "Accounts, login and
// tokens"). Each route of the route table names the scope it needs; a
// token's scopes are never more than its user's (UserScopes).
type Scope string

// The scopes, in the order they are listed and shown.
const (
	ScopeHostsRead    Scope = "hosts:read"
	ScopeHostsWrite   Scope = "hosts:write"
	ScopeFilesRead    Scope = "files:read"
	ScopeFilesWrite   Scope = "files:write"
	ScopeAlertsRead   Scope = "alerts:read"
	ScopeTunnelsRead  Scope = "tunnels:read"
	ScopeTunnelsWrite Scope = "tunnels:write"
	// ScopeTokens manages the caller's own account: tokens, password, TOTP.
	ScopeTokens Scope = "tokens"
	// ScopeAdmin is an admin's: users, alerts. Only an admin user has it.
	ScopeAdmin Scope = "admin"
)

// AllScopes is every scope, in order.
var AllScopes = []Scope{
	ScopeHostsRead, ScopeHostsWrite, ScopeFilesRead, ScopeFilesWrite, ScopeAlertsRead,
	ScopeTunnelsRead, ScopeTunnelsWrite, ScopeTokens, ScopeAdmin,
}

// UserScopes is every scope a user may hold: all of them for an admin, all
// but admin for anyone else. A login token carries these; a token's
// effective scopes are its own within these.
func UserScopes(admin bool) []Scope {
	if admin {
		return slices.Clone(AllScopes)
	}
	return slices.DeleteFunc(slices.Clone(AllScopes), func(s Scope) bool { return s == ScopeAdmin })
}

// ParseScopes checks names against the known scopes and returns them in
// AllScopes order without duplicates; Invalid naming the first unknown one.
func ParseScopes(names []string) ([]Scope, error) {
	scopes := make([]Scope, 0, len(names))
	for _, n := range names {
		s := Scope(n)
		if !slices.Contains(AllScopes, s) {
			return nil, Errorf(Invalid, "unknown scope %q: scopes are %s", n, JoinScopes(AllScopes, ", "))
		}
		scopes = append(scopes, s)
	}
	return SortScopes(scopes), nil
}

// SortScopes puts scopes in AllScopes order without duplicates, in place.
func SortScopes(scopes []Scope) []Scope {
	slices.SortFunc(scopes, func(a, b Scope) int {
		return slices.Index(AllScopes, a) - slices.Index(AllScopes, b)
	})
	return slices.Compact(scopes)
}

// Within returns the scopes of have that are also in limit, in order: a
// token's effective scopes (within its user's), or a new token's bound.
func Within(have, limit []Scope) []Scope {
	out := make([]Scope, 0, len(have))
	for _, s := range have {
		if slices.Contains(limit, s) {
			out = append(out, s)
		}
	}
	return SortScopes(out)
}

// JoinScopes writes scopes joined by sep ("hosts:read hosts:write"), as the
// authorizer's context carries them.
func JoinScopes(scopes []Scope, sep string) string {
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	return strings.Join(names, sep)
}

// MissingScope is the Forbidden error of a valid token without the scope a
// route needs.
func MissingScope(s Scope, method, path string) error {
	return Errorf(Forbidden, "this token lacks the scope %q that %s %s needs", s, method, path)
}
