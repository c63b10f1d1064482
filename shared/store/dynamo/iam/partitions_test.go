package iam

import (
	"slices"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/routes"
)

// TestEveryRouteHasPartitions: every route's policy names the partitions
// it may touch, and every list here belongs to a route.
func TestEveryRouteHasPartitions(t *testing.T) {
	for _, r := range routes.All {
		p, ok := RoutePolicy(r.Name)
		if !ok || len(p) != 1 || len(p[0].Partitions) == 0 || len(p[0].Actions) == 0 {
			t.Errorf("route %s: policy %v", r.Name, p)
		}
	}
	for name := range routePartitions {
		if _, ok := routes.ByName(name); !ok {
			t.Errorf("partitions for %s, which is not in routes.All", name)
		}
	}
	if _, ok := RoutePolicy("no-such-route"); ok {
		t.Error("RoutePolicy found a route outside the table")
	}
}

// TestPartitionPatterns: each pattern is a whole partition (ALERTS) or a
// kind of partition (OWNER#*), never everything.
func TestPartitionPatterns(t *testing.T) {
	policies := map[string]Policy{"authorizer": AuthorizerPolicy(), "tunnel service": TunnelServicePolicy()}
	for _, r := range routes.All {
		policies[r.Name], _ = RoutePolicy(r.Name)
	}
	for who, p := range policies {
		for _, st := range p {
			for _, pattern := range st.Partitions {
				prefix, wild := strings.CutSuffix(pattern, "*")
				if prefix == "" || strings.ContainsAny(prefix, "*?[]/") || wild && !strings.HasSuffix(prefix, "#") {
					t.Errorf("%s: partition pattern %q", who, pattern)
				}
			}
		}
	}
}

// TestAllows: actions and partitions both decide, as IAM's StringLike on
// dynamodb:LeadingKeys does.
func TestAllows(t *testing.T) {
	p, _ := RoutePolicy("list-alerts")
	for _, tc := range []struct {
		action, pk string
		want       bool
	}{
		{"dynamodb:Query", "ALERTS", true},
		{"dynamodb:Query", "USER#usr_1", true},
		{"dynamodb:Query", "USER#", true},
		{"dynamodb:Query", "OWNER#usr_1", false},
		{"dynamodb:Query", "ALERTS#x", false},
		{"dynamodb:Query", "xUSER#usr_1", false},
		{"dynamodb:GetItem", "ALERTS", false},
	} {
		if got := p.Allows(tc.action, tc.pk); got != tc.want {
			t.Errorf("Allows(%s, %s) = %t, want %t", tc.action, tc.pk, got, tc.want)
		}
	}
	if got := p.Actions(); !slices.Equal(got, []string{"dynamodb:Query"}) {
		t.Errorf("Actions() = %v", got)
	}
}

// TestTunnelServiceWritesNoUserOrToken: the tunnel service reads users and
// tokens (its token checks) but may write neither, whatever its actions.
func TestTunnelServiceWritesNoUserOrToken(t *testing.T) {
	p := TunnelServicePolicy()
	if !slices.Equal(p.Actions(), TunnelService) {
		t.Errorf("the policy's actions %v, iam.TunnelService %v", p.Actions(), TunnelService)
	}
	for _, pk := range []string{"USER#usr_1", "TOKEN#abc", "USERNAMES", "TOKENID#tok_1", "ALERTS", "CACHE#x"} {
		for _, a := range TunnelService {
			if !slices.Contains(ReadActions, a) && p.Allows(a, pk) {
				t.Errorf("the tunnel service may %s on %s", a, pk)
			}
		}
	}
	for _, pk := range []string{"USER#usr_1", "TOKEN#abc", "TUNNELS", "OWNER#usr_1", "PING"} {
		if !p.Allows("dynamodb:GetItem", pk) {
			t.Errorf("the tunnel service may not read %s", pk)
		}
	}
	for _, pk := range []string{"TUNNELS", "OWNER#usr_1"} {
		if !p.Allows("dynamodb:UpdateItem", pk) {
			t.Errorf("the tunnel service may not update %s", pk)
		}
	}
}

// TestLike: IAM's StringLike, / and all.
func TestLike(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"CACHE#*", "CACHE#releases/acme/deck/1/5", true},
		{"CACHE#*", "CACHE#", true},
		{"CACHE#*", "CACHE", false},
		{"ALERTS", "ALERTS", true},
		{"ALERTS", "ALERTSX", false},
		{"A?C", "ABC", true},
		{"*#*", "OWNER#x", true},
		{"*#*", "OWNERx", false},
		{"", "", true},
	} {
		if got := like(tc.pattern, tc.s); got != tc.want {
			t.Errorf("like(%q, %q) = %t, want %t", tc.pattern, tc.s, got, tc.want)
		}
	}
}
