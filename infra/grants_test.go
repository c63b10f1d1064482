package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
)

// statement is one statement of a policy document.
type statement struct {
	Effect    string
	Action    []string
	NotAction []string
	Resource  []any
	Principal any
	Condition map[string]any
}

// parseStatements reads the statements of a policy document.
func parseStatements(document any) []statement {
	var out []statement
	for _, st := range list(property(document, "Statement")) {
		condition, _ := property(st, "Condition").(map[string]any)
		effect, _ := property(st, "Effect").(string)
		out = append(out, statement{
			Effect:    effect,
			Action:    strs(property(st, "Action")),
			NotAction: strs(property(st, "NotAction")),
			Resource:  list(property(st, "Resource")),
			Principal: property(st, "Principal"),
			Condition: condition,
		})
	}
	return out
}

// policy is the statements of one IAM policy and the roles it applies to.
type policy struct {
	id         string // the AWS::IAM::Policy, or the role of an inline policy
	roles      []string
	statements []statement
}

// policies are all the IAM policies of the template: AWS::IAM::Policy,
// AWS::IAM::ManagedPolicy, and roles' inline policies.
func (s *synthesis) policies() []policy {
	var out []policy
	for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"} {
		for _, id := range s.ids(typ) {
			p := s.Resources[id].Properties
			var roles []string
			for _, r := range list(p["Roles"]) {
				roles = append(roles, refID(r))
			}
			out = append(out, policy{id, roles, parseStatements(p["PolicyDocument"])})
		}
	}
	for _, id := range s.ids("AWS::IAM::Role") {
		for _, inline := range list(s.Resources[id].Properties["Policies"]) {
			out = append(out, policy{id, []string{id}, parseStatements(property(inline, "PolicyDocument"))})
		}
	}
	return out
}

// roleStatements are the statements of every policy that applies to role.
func (s *synthesis) roleStatements(role string) []statement {
	var out []statement
	for _, p := range s.policies() {
		if slices.Contains(p.roles, role) {
			out = append(out, p.statements...)
		}
	}
	return out
}

// TestNoWildcardActions: no IAM policy allows an action with a wildcard.
// (The keys' own policies give the account root kms:*, CDK's default that
// lets IAM policies govern the key; they are key policies, not IAM ones.)
func TestNoWildcardActions(t *testing.T) {
	for _, synth := range []struct {
		name string
		s    *synthesis
	}{{"default", synthDefault(t)}, {"https", synthHTTPS(t)}} {
		name, s := synth.name, synth.s
		for _, p := range s.policies() {
			for _, st := range p.statements {
				if st.Effect != "Allow" {
					continue
				}
				if len(st.NotAction) > 0 {
					t.Errorf("%s synth: policy %s allows NotAction %v on %v", name, p.id, st.NotAction, render(st.Resource))
				}
				for _, a := range st.Action {
					if strings.Contains(a, "*") {
						t.Errorf("%s synth: policy %s allows %s on %v", name, p.id, a, render(st.Resource))
					}
				}
			}
		}
	}
}

// grantee is a role and what it may do with the table and the keys.
type grantee struct {
	name        string     // for messages: the route, authorizer, the tunnel task role
	role        string     // logical id
	policy      iam.Policy // DynamoDB actions on the table on partitions, exactly
	credentials bool       // uses the credentials key
	// logGroup, for a function: its role may also write its own log group
	// and X-Ray traces, and nothing else.
	logGroup string
}

// functionGrantees are the authorizer and each route's function, with what
// shared/store/dynamo/iam and routes.All say they need.
func (s *synthesis) functionGrantees(t *testing.T) []grantee {
	t.Helper()
	functions := s.functionIDs(t)
	function := func(name string, policy iam.Policy, credentials bool) grantee {
		p := s.Resources[functions[name]].Properties
		role, _ := getAtt(p["Role"])
		return grantee{name, role, policy, credentials, refID(property(p, "LoggingConfig", "LogGroup"))}
	}
	out := []grantee{function(authorizerName, iam.AuthorizerPolicy(), false)}
	for _, r := range routes.All {
		policy, ok := iam.RoutePolicy(r.Name)
		if !ok {
			t.Errorf("route %s has no policy in shared/store/dynamo/iam", r.Name)
		}
		out = append(out, function(r.Name, policy, r.Credentials))
	}
	return out
}

// TestFunctionGrants: each function's role may make exactly the DynamoDB
// calls of its route on the table (and its index, for the routes that list
// a user's tokens), on the partitions of its route only
// (dynamodb:LeadingKeys), use the table's key only through DynamoDB, and
// the credentials key only if its route seals credentials. A route that
// only reads may only read; so may the authorizer, but for one write: a
// token's lastUsedAt (TouchToken), UpdateItem on TOKEN#* alone.
func TestFunctionGrants(t *testing.T) {
	s := synthDefault(t)
	for _, g := range s.functionGrantees(t) {
		t.Run(g.name, func(t *testing.T) {
			if g.role == "" {
				t.Fatalf("function %s has no role of its own", g.name)
			}
			if managed := s.Resources[g.role].Properties["ManagedPolicyArns"]; managed != nil {
				t.Errorf("%s: role %s carries managed policies %v", g.name, g.role, render(managed))
			}
			granted := checkGrants(t, s, g)
			r, isRoute := routes.ByName(g.name)
			if isRoute && r.Access == routes.Read {
				for _, a := range granted {
					if !slices.Contains(iam.ReadActions, a) {
						t.Errorf("%s only reads, yet may call %s", g.name, a)
					}
				}
			}
			if !isRoute {
				for _, a := range granted {
					if !slices.Contains(iam.ReadActions, a) && a != "dynamodb:UpdateItem" {
						t.Errorf("the authorizer reads and touches tokens, yet may call %s", a)
					}
				}
				for _, st := range s.roleStatements(g.role) {
					if slices.Contains(st.Action, "dynamodb:UpdateItem") && (!slices.Equal(st.Action, []string{"dynamodb:UpdateItem"}) || !slices.Equal(leadingKeys(st), []string{"TOKEN#*"})) {
						t.Errorf("the authorizer may %v on %v, want UpdateItem alone on TOKEN#* alone", st.Action, leadingKeys(st))
					}
				}
			}
		})
	}
}

// TestTunnelTaskGrants: the tunnel service's task role may make the
// service's DynamoDB calls and use the credentials key (tunnels keep
// sealed credentials).
func TestTunnelTaskGrants(t *testing.T) {
	s := synthDefault(t)
	id, task := s.only(t, "AWS::ECS::TaskDefinition")
	role, _ := getAtt(task.Properties["TaskRoleArn"])
	if role == "" {
		t.Fatalf("task definition %s has no task role", id)
	}
	checkGrants(t, s, grantee{name: "tunnel task role", role: role, policy: iam.TunnelServicePolicy(), credentials: true})
}

// TestTunnelTaskWritesNoUserOrToken: the tunnel service's role may read
// users and tokens (its token checks), and write nothing but tunnels and
// known hosts, and a token's lastUsedAt: every statement that writes has a
// LeadingKeys condition of TUNNELS and OWNER#* alone, or is UpdateItem
// alone on TOKEN#* alone (TouchToken).
func TestTunnelTaskWritesNoUserOrToken(t *testing.T) {
	s := synthDefault(t)
	_, task := s.only(t, "AWS::ECS::TaskDefinition")
	role, _ := getAtt(task.Properties["TaskRoleArn"])
	writes := 0
	for _, st := range s.roleStatements(role) {
		if !slices.ContainsFunc(st.Action, func(a string) bool { return strings.HasPrefix(a, "dynamodb:") && !slices.Contains(iam.ReadActions, a) }) {
			continue
		}
		writes++
		keys := leadingKeys(st)
		touch := slices.Equal(st.Action, []string{"dynamodb:UpdateItem"}) && slices.Equal(keys, []string{"TOKEN#*"})
		records := slices.Equal(st.Action, []string{"dynamodb:PutItem"}) && slices.Equal(keys, []string{"AUDIT#*"})
		if !touch && !records && !slices.Equal(keys, []string{"OWNER#*", "TUNNELS"}) {
			t.Errorf("the tunnel task role may %v on the partitions %v, want TUNNELS and OWNER#* only (or UpdateItem alone on TOKEN#*, PutItem alone on AUDIT#*)", st.Action, keys)
		}
	}
	if writes != 3 {
		t.Errorf("%d statements of the tunnel task role write the table, want 3 (tunnels and known hosts; the touch of tokens; its requests' audit records)", writes)
	}
}

// leadingKeys is the partitions of a statement's dynamodb:LeadingKeys
// condition (ForAllValues:StringLike), sorted; nil without one.
func leadingKeys(st statement) []string {
	keys := strs(property(st.Condition, "ForAllValues:StringLike", "dynamodb:LeadingKeys"))
	slices.Sort(keys)
	return keys
}

// TestOnlyGranteesTouchTheData: no role but the functions' and the tunnel
// task's has any statement on the table (its stream included) or a key;
// none but those of the routes that seal credentials, and the tunnel
// task's, on the credentials key.
func TestOnlyGranteesTouchTheData(t *testing.T) {
	s := synthDefault(t)
	table, _ := s.only(t, "AWS::DynamoDB::Table")
	tableKey, credentialsKey := s.keys(t)
	_, task := s.only(t, "AWS::ECS::TaskDefinition")
	taskRole, _ := getAtt(task.Properties["TaskRoleArn"])
	data, credentials := map[string]bool{taskRole: true}, map[string]bool{taskRole: true}
	for _, g := range s.functionGrantees(t) {
		data[g.role] = true
		credentials[g.role] = g.credentials
	}
	// audit-events reads the table's stream (TestAuditEventsGrants).
	data[s.auditEventsRole(t)] = true
	for _, p := range s.policies() {
		for _, st := range p.statements {
			for _, role := range p.roles {
				if refersTo(st.Resource, credentialsKey) && !credentials[role] {
					t.Errorf("policy %s gives role %s %v on the credentials key, which only credential routes and the tunnel service may use", p.id, role, st.Action)
				}
				if (refersTo(st.Resource, table) || refersTo(st.Resource, tableKey)) && !data[role] {
					t.Errorf("policy %s gives role %s %v on %v", p.id, role, st.Action, render(st.Resource))
				}
			}
		}
	}
}

// checkGrants checks what g's role may do and returns the DynamoDB actions
// it is allowed.
func checkGrants(t *testing.T, s *synthesis, g grantee) []string {
	t.Helper()
	table, _ := s.only(t, "AWS::DynamoDB::Table")
	tableKey, credentialsKey := s.keys(t)
	var dynamo, tableKeyActions, credentialsActions []string
	var dynamoStatements []iam.Statement
	var credentialsStatements int
	for _, st := range s.roleStatements(g.role) {
		if st.Effect != "Allow" {
			continue
		}
		only := func(id string) bool { return len(st.Resource) == 1 && isARN(st.Resource[0], id) }
		if refersTo(st.Resource, credentialsKey) {
			credentialsStatements++
		}
		// The table's key only through DynamoDB.
		via, wantVia := property(st.Condition, "StringEquals", "kms:ViaService"), "dynamodb."+s.cfg.Region+".amazonaws.com"
		if only(tableKey) && (via != wantVia || len(st.Condition) != 1) {
			t.Errorf("%s may %v with the table's key under condition %v, want StringEquals kms:ViaService %s", g.name, st.Action, render(st.Condition), wantVia)
		}
		// A DynamoDB statement is on the table's ARN alone, or on the
		// ARN of one index of it alone.
		index, onData := "", only(table)
		if len(st.Resource) == 1 {
			if name, ok := strings.CutPrefix(render(st.Resource[0]), "${"+table+".Arn}/index/"); ok && name != "" {
				index, onData = name, true
			}
		}
		if slices.ContainsFunc(st.Action, func(a string) bool { return strings.HasPrefix(a, "dynamodb:") }) {
			// Every DynamoDB statement holds to its partitions.
			if keys := leadingKeys(st); len(keys) == 0 || len(st.Condition) != 1 {
				t.Errorf("%s may %v under condition %v, want ForAllValues:StringLike dynamodb:LeadingKeys alone", g.name, st.Action, render(st.Condition))
			} else {
				dynamoStatements = append(dynamoStatements, iam.Statement{Actions: slices.Sorted(slices.Values(st.Action)), Partitions: keys, Index: index})
			}
		}
		for _, a := range st.Action {
			switch {
			case strings.HasPrefix(a, "dynamodb:"):
				if !onData {
					t.Errorf("%s may call %s on %v, want on the table's ARN alone, or an index's", g.name, a, render(st.Resource))
				}
				dynamo = append(dynamo, a)
			case strings.HasPrefix(a, "kms:") && only(tableKey):
				tableKeyActions = append(tableKeyActions, a)
			case strings.HasPrefix(a, "kms:") && only(credentialsKey):
				credentialsActions = append(credentialsActions, a)
			case g.logGroup != "" && (a == "logs:CreateLogStream" || a == "logs:PutLogEvents") && only(g.logGroup):
			case g.logGroup != "" && (a == "xray:PutTraceSegments" || a == "xray:PutTelemetryRecords") && len(st.Resource) == 1 && st.Resource[0] == "*":
			default:
				t.Errorf("%s may %s on %v", g.name, a, render(st.Resource))
			}
		}
	}

	slices.Sort(dynamo)
	dynamo = slices.Compact(dynamo)
	if want := g.policy.Actions(); !slices.Equal(dynamo, want) {
		t.Errorf("%s may call %v on the table, want exactly %v", g.name, dynamo, want)
	}
	// Statement for statement, the policy of shared/store/dynamo/iam.
	var wantStatements []iam.Statement
	for _, st := range g.policy {
		wantStatements = append(wantStatements, iam.Statement{Actions: slices.Sorted(slices.Values(st.Actions)), Partitions: slices.Sorted(slices.Values(st.Partitions)), Index: st.Index})
	}
	key := func(st iam.Statement) string {
		on := "the table"
		if st.Index != "" {
			on = "the index " + st.Index
		}
		return strings.Join(st.Actions, ",") + " on " + on + " on " + strings.Join(st.Partitions, ",")
	}
	got, wantKeys := make([]string, len(dynamoStatements)), make([]string, len(wantStatements))
	for i, st := range dynamoStatements {
		got[i] = key(st)
	}
	for i, st := range wantStatements {
		wantKeys[i] = key(st)
	}
	slices.Sort(got)
	slices.Sort(wantKeys)
	if !slices.Equal(got, wantKeys) {
		t.Errorf("%s's statements on the table:\n %v\nwant\n %v", g.name, got, wantKeys)
	}

	// Decrypting is enough to read; writing needs data keys too.
	slices.Sort(tableKeyActions)
	want := []string{"kms:Decrypt", "kms:DescribeKey"}
	if slices.ContainsFunc(g.policy.Actions(), func(a string) bool { return !slices.Contains(iam.ReadActions, a) }) {
		want = []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"}
	} else if slices.Contains(tableKeyActions, "kms:Encrypt") || slices.Contains(tableKeyActions, "kms:GenerateDataKey") {
		t.Errorf("%s only reads, yet may encrypt with the table's key: %v", g.name, tableKeyActions)
	}
	if !slices.Equal(tableKeyActions, want) {
		t.Errorf("%s may %v with the table's key, want %v", g.name, tableKeyActions, want)
	}

	// shared/secret's keyring makes and opens data keys, nothing else.
	slices.Sort(credentialsActions)
	switch {
	case !g.credentials && credentialsStatements > 0:
		t.Errorf("%s seals no credentials, yet may %v with the credentials key", g.name, credentialsActions)
	case g.credentials && (credentialsStatements != 1 || !slices.Equal(credentialsActions, []string{"kms:Decrypt", "kms:GenerateDataKey"})):
		t.Errorf("%s may %v with the credentials key in %d statements, want kms:GenerateDataKey and kms:Decrypt in one", g.name, credentialsActions, credentialsStatements)
	}
	return dynamo
}
