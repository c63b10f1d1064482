package iam

import (
	"slices"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/routes"
)

// TestEveryRouteHasPartitions: every route's policy names the partitions
// it may touch on the table, those of TokenIndex for a route that queries
// it (users' for the tokens, actors' for the audit trail), and the Put of
// audit records for an audited route; every list here belongs to a route.
func TestEveryRouteHasPartitions(t *testing.T) {
	for _, r := range routes.All {
		p, ok := RoutePolicy(r.Name)
		want := 1
		index := slices.Contains(routeIndexQueries, r.Name)
		if index {
			want++
		}
		if r.Audited() {
			want++
		}
		if !ok || len(p) != want || p[0].Index != "" || len(p[0].Partitions) == 0 || len(p[0].Actions) == 0 {
			t.Errorf("route %s: policy %v", r.Name, p)
			continue
		}
		indexPartition := userPartitions
		if strings.HasSuffix(r.Name, "-audit") {
			indexPartition = auditActorPartitions
		}
		if index && (p[1].Index != TokenIndex || !slices.Equal(p[1].Actions, []string{query}) || !slices.Equal(p[1].Partitions, []string{indexPartition})) {
			t.Errorf("route %s: its statement on the index is %+v, want Query of %s on %s", r.Name, p[1], TokenIndex, indexPartition)
		}
		if got := p.Indexes(); !index && len(got) != 0 {
			t.Errorf("route %s names the indexes %v", r.Name, got)
		}
		if last := p[len(p)-1]; r.Audited() != (slices.Equal(last.Actions, []string{putItem}) && slices.Equal(last.Partitions, []string{auditPartitions})) {
			t.Errorf("route %s (audited %t): its last statement is %+v", r.Name, r.Audited(), last)
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
	policies := map[string]Policy{"authorizer": AuthorizerPolicy(), "tunnel service": TunnelServicePolicy(), "audit-events": AuditEventsPolicy()}
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
// tokens (its token checks) but may write no user, and of a token only its
// lastUsedAt (TouchToken: UpdateItem), whatever its actions.
func TestTunnelServiceWritesNoUserOrToken(t *testing.T) {
	p := TunnelServicePolicy()
	if !slices.Equal(p.Actions(), TunnelService) {
		t.Errorf("the policy's actions %v, iam.TunnelService %v", p.Actions(), TunnelService)
	}
	for _, pk := range []string{"USER#usr_1", "TOKEN#abc", "USERNAMES", "TOKENID#tok_1", "LOGIN#usr_1", "LOGINFAIL#name:x", "ALERTS", "CACHE#x"} {
		for _, a := range TunnelService {
			if !slices.Contains(ReadActions, a) && p.Allows(a, pk) && (a != updateItem || pk != "TOKEN#abc") {
				t.Errorf("the tunnel service may %s on %s", a, pk)
			}
		}
	}
	if !p.Allows(updateItem, "TOKEN#abc") {
		t.Error("the tunnel service may not touch a token (UpdateItem of TOKEN#<hash>)")
	}
	if got := p.Indexes(); len(got) != 0 {
		t.Errorf("the tunnel service may read the indexes %v", got)
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

// TestLoginSecretsOnlyForAccounts: no role but the functions of the routes
// of logins and users (/auth/…, /users…) reaches LOGIN#* (password
// hashes, sealed TOTP secrets); only login and the routes that take a
// password or a TOTP code (which count failures under the name's lockout)
// reach LOGINFAIL#*.
func TestLoginSecretsOnlyForAccounts(t *testing.T) {
	counting := []string{"login", "change-password", "enable-totp", "disable-totp"}
	policies := map[string]Policy{"authorizer": AuthorizerPolicy(), "tunnel service": TunnelServicePolicy(), "audit-events": AuditEventsPolicy()}
	accounts := map[string]bool{}
	for _, r := range routes.All {
		policies[r.Name], _ = RoutePolicy(r.Name)
		accounts[r.Name] = strings.HasPrefix(r.Path, "/auth/") || r.Path == "/users" || strings.HasPrefix(r.Path, "/users/")
	}
	for who, p := range policies {
		for _, a := range p.Actions() {
			if p.Allows(a, "LOGIN#usr_1") && !accounts[who] {
				t.Errorf("%s may %s on LOGIN#usr_1", who, a)
			}
			if p.Allows(a, "LOGINFAIL#name:x") && !slices.Contains(counting, who) {
				t.Errorf("%s may %s on LOGINFAIL#name:x", who, a)
			}
		}
	}
	for _, name := range counting {
		if p := policies[name]; !p.Allows("dynamodb:UpdateItem", "LOGINFAIL#name:x") || !p.Allows("dynamodb:GetItem", "LOGINFAIL#name:x") {
			t.Errorf("%s may not count a failure (GetItem and UpdateItem of LOGINFAIL#<key>)", name)
		}
	}
}

// TestIndex: a statement on TokenIndex allows nothing on the table, nor
// one on the table anything on the index.
func TestIndex(t *testing.T) {
	p, _ := RoutePolicy("list-tokens")
	for _, tc := range []struct {
		index, action, pk string
		want              bool
	}{
		{TokenIndex, "dynamodb:Query", "USER#usr_1", true},
		{TokenIndex, "dynamodb:Query", "TOKEN#h", false},
		{"", "dynamodb:Query", "USER#usr_1", false},
		{"", "dynamodb:GetItem", "USER#usr_1", true},
		{TokenIndex, "dynamodb:GetItem", "USER#usr_1", false},
		{"other", "dynamodb:Query", "USER#usr_1", false},
	} {
		if got := p.AllowsOn(tc.index, tc.action, tc.pk); got != tc.want {
			t.Errorf("AllowsOn(%q, %s, %s) = %t, want %t", tc.index, tc.action, tc.pk, got, tc.want)
		}
	}
	if !p.Grants(TokenIndex, "dynamodb:Query") || p.Grants("", "dynamodb:Query") || p.Grants(TokenIndex, "dynamodb:GetItem") {
		t.Errorf("Grants of %v", p)
	}
	if got := p.Indexes(); !slices.Equal(got, []string{TokenIndex}) {
		t.Errorf("Indexes() = %v", got)
	}
}

// TestAuditEventsTouchesNoItem: the stream's consumer may make no call on
// the table or its index.
func TestAuditEventsTouchesNoItem(t *testing.T) {
	p := AuditEventsPolicy()
	if len(p) != 0 || len(p.Actions()) != 0 || p.Allows("dynamodb:GetItem", "AUDIT#2026-01") {
		t.Errorf("AuditEventsPolicy() = %+v, want nothing", p)
	}
}
