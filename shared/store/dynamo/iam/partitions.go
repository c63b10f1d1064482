package iam

import (
	"slices"

	"github.com/sshdeck/sshdeck/shared/routes"
)

// The partitions of the table (shared/store/dynamo/README.md, "Items"), as
// IAM's dynamodb:LeadingKeys condition matches them (StringLike: * is any
// run of characters). An owner's or a user's id is the caller's, which IAM
// does not know: a role gets the kind of partition (every OWNER#…), not one
// owner's.
const (
	ownerPartitions     = "OWNER#*"     // hosts, host-id counters, file-manager entries, known hosts
	userPartitions      = "USER#*"      // users, their live tokens' listings, alert dismissals; in TokenIndex, a user's tokens
	userNamesPartition  = "USERNAMES"   // users by name
	tokenPartitions     = "TOKEN#*"     // tokens by hash
	tokenIDPartitions   = "TOKENID#*"   // a token's id, pointing at its hash
	loginPartitions     = "LOGIN#*"     // login secrets: password hashes, sealed TOTP secrets
	loginFailPartitions = "LOGINFAIL#*" // windows of failed logins
	cachePartitions     = "CACHE#*"     // the releases feed's cache
	alertsPartition     = "ALERTS"      // alerts
	tunnelPartition     = "TUNNELS"     // tunnels
	pingPartition       = "PING"        // the item Ping reads, which never exists
	auditPartitions     = "AUDIT#*"     // audit records, by month
	// In TokenIndex (gsi1), an actor's audit records.
	auditActorPartitions = "AUDITBY#*"
)

// Statement is one statement of a role's policy on the table: Actions,
// allowed on the items whose partition key matches one of Partitions (the
// statement's dynamodb:LeadingKeys condition, ForAllValues:StringLike).
type Statement struct {
	Actions    []string
	Partitions []string
	// Index is the global secondary index the statement is on (its
	// resource the table's ARN followed by /index/<Index>), "" for the
	// table itself. A grant on the table covers no index, and one on an
	// index no item of the table. On an index the partitions are of the
	// index's partition key (gsi1pk), the one a Query of it names.
	Index string
}

// Policy is a role's statements on the table and its index. A call is
// allowed when one statement on what it reads (the table, or the index it
// names) has its action and a pattern matching its partition key.
type Policy []Statement

// Allows says whether the policy allows action on an item of the table's
// partition pk.
func (p Policy) Allows(action, pk string) bool { return p.AllowsOn("", action, pk) }

// AllowsOn says whether the policy allows action on partition pk of the
// index ("" for the table).
func (p Policy) AllowsOn(index, action, pk string) bool {
	for _, st := range p {
		if st.Index == index && slices.Contains(st.Actions, action) && matches(st.Partitions, pk) {
			return true
		}
	}
	return false
}

// Grants says whether some statement of the policy on the index ("" for
// the table) has the action, on whatever partitions.
func (p Policy) Grants(index, action string) bool {
	for _, st := range p {
		if st.Index == index && slices.Contains(st.Actions, action) {
			return true
		}
	}
	return false
}

// Indexes is every index the policy names, sorted, without duplicates.
func (p Policy) Indexes() []string {
	var all []string
	for _, st := range p {
		if st.Index != "" {
			all = append(all, st.Index)
		}
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// Actions is every action of the policy, sorted, without duplicates.
func (p Policy) Actions() []string {
	var all []string
	for _, st := range p {
		all = append(all, st.Actions...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// matches says whether pk matches one of the patterns as IAM's StringLike
// does: * is any run of characters (/ included), ? any one.
func matches(patterns []string, pk string) bool {
	for _, p := range patterns {
		if like(p, pk) {
			return true
		}
	}
	return false
}

// like is StringLike on one pattern.
func like(pattern, s string) bool {
	// The classic greedy match with one backtrack point: the last *.
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			mark++
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// routePartitions is, per route of routes.All, the partitions its calls
// touch (shared/store/dynamo/README.md, "Calls per route").
var routePartitions = map[string][]string{
	"healthz": {pingPartition},

	"list-hosts":   {ownerPartitions},
	"get-host":     {ownerPartitions},
	"export-hosts": {ownerPartitions},
	// A host's save writes the owner's tunnels too (shared/hosts,
	// tunnels.go): TUNNELS, every owner's, as LeadingKeys cannot tell
	// one owner's sort keys from another's; the store scopes each call.
	"create-host":  {ownerPartitions, tunnelPartition},
	"update-host":  {ownerPartitions, tunnelPartition},
	"delete-host":  {ownerPartitions, tunnelPartition},
	"import-hosts": {ownerPartitions, tunnelPartition},

	"list-recent-files":  {ownerPartitions},
	"add-recent-file":    {ownerPartitions},
	"delete-recent-file": {ownerPartitions},
	"list-shortcuts":     {ownerPartitions},
	"add-shortcut":       {ownerPartitions},
	"delete-shortcut":    {ownerPartitions},

	// The alerts, and the caller's dismissals (USER#<caller>).
	"list-alerts":   {alertsPartition, userPartitions},
	"dismiss-alert": {alertsPartition, userPartitions},
	"publish-alert": {alertsPartition},
	"delete-alert":  {alertsPartition},

	"releases-feed": {cachePartitions},

	// The accounts' routes. Login secrets (LOGIN#*) are the business of
	// these alone: the routes that log in, change or show them.
	//
	// login: the failure windows of the name and the address, the user
	// by name, their login secrets, and the token it issues (at its
	// hash, its id, its listing and the user's tokenSeq in USER#<id>).
	"login":           {loginFailPartitions, userNamesPartition, loginPartitions, userPartitions, tokenPartitions, tokenIDPartitions},
	"get-me":          {userPartitions, loginPartitions},
	"change-password": {userPartitions, loginFailPartitions, loginPartitions, tokenPartitions, tokenIDPartitions},
	"create-totp":     {userPartitions, loginPartitions},
	"enable-totp":     {userPartitions, loginFailPartitions, loginPartitions},
	"disable-totp":    {userPartitions, loginFailPartitions, loginPartitions},
	"list-users":      {userNamesPartition, loginPartitions},
	"create-user":     {userNamesPartition, userPartitions, loginPartitions},
	// The user at its id and its name; disabling revokes its tokens
	// (TOKENID#, TOKEN#, the listings in USER#).
	"update-user": {userPartitions, userNamesPartition, loginPartitions, tokenPartitions, tokenIDPartitions},
	"list-tokens": {userPartitions},
	// The caller (USER#) and the token it issues.
	"create-token": {userPartitions, tokenPartitions, tokenIDPartitions},
	// The token's id, the token, and its listing in USER#<owner>.
	"delete-token": {tokenIDPartitions, tokenPartitions, userPartitions},

	// The audit trail: everyone's by month (an admin), one actor's in the
	// index (routeIndexPartitions).
	"list-audit":   {auditPartitions},
	"export-audit": {auditPartitions},
}

// auditRecords is the statement of every audited route (routes.Route.
// Audited): the Put of its request's audit record, alone or in the
// transaction of its change, and nothing else of AUDIT#*: no role but the
// readers of the trail reads it, and none changes or deletes a record
// (DynamoDB's TTL does, past SSHDECK_AUDIT_DAYS).
func auditRecords() Statement {
	return Statement{Actions: []string{putItem}, Partitions: []string{auditPartitions}}
}

// routeIndexPartitions are the index partitions a route of
// routeIndexQueries queries: USER#<userId>, the gsi1pk of a user's tokens,
// and AUDITBY#<actor>, of an actor's audit records.
var routeIndexPartitions = map[string][]string{
	"change-password": {userPartitions},
	"list-tokens":     {userPartitions},
	"update-user":     {userPartitions},
	"list-audit":      {auditActorPartitions},
	"export-audit":    {auditActorPartitions},
}

// RoutePolicy is what the Lambda function of the named route may do: its
// actions (RouteActions) on its partitions of the table, and, for a route
// that lists a user's tokens (routeIndexQueries), Query on TokenIndex's
// partitions of users. False for a name outside the route table.
func RoutePolicy(route string) (Policy, bool) {
	actions, ok := RouteActions(route)
	if !ok {
		return nil, false
	}
	p := Policy{{Actions: actions, Partitions: slices.Clone(routePartitions[route])}}
	if slices.Contains(routeIndexQueries, route) {
		p = append(p, Statement{Actions: []string{query}, Partitions: slices.Clone(routeIndexPartitions[route]), Index: TokenIndex})
	}
	if r, _ := routes.ByName(route); r.Audited() {
		p = append(p, auditRecords())
	}
	return p, true
}

// AuthorizerPolicy is what the REQUEST authorizer may do: read a token by
// its hash, then its user; and write the token's lastUsedAt (TouchToken),
// an UpdateItem of TOKEN#<hash>: its one write, on tokens alone.
func AuthorizerPolicy() Policy {
	var reads, writes []string
	for _, a := range Authorizer {
		if slices.Contains(ReadActions, a) {
			reads = append(reads, a)
		} else {
			writes = append(writes, a)
		}
	}
	return Policy{
		{Actions: reads, Partitions: []string{tokenPartitions, userPartitions}},
		{Actions: writes, Partitions: []string{tokenPartitions}},
	}
}

// TunnelServicePolicy is what the tunnel service's task role may do: read
// tunnels, known hosts, the hosts a connect request names by id (GetItem of
// OWNER#*, with the known hosts), tokens and users (its token checks), and
// Ping; write
// tunnels and known hosts; and, of tokens, their lastUsedAt (its token
// checks' TouchToken: UpdateItem of TOKEN#<hash>). It can write no user, and
// no token but by that UpdateItem.
func TunnelServicePolicy() Policy {
	var reads, writes []string
	for _, a := range TunnelService {
		if slices.Contains(ReadActions, a) {
			reads = append(reads, a)
		} else {
			writes = append(writes, a)
		}
	}
	return Policy{
		{Actions: reads, Partitions: []string{pingPartition, tunnelPartition, ownerPartitions, tokenPartitions, userPartitions}},
		{Actions: writes, Partitions: []string{tunnelPartition, ownerPartitions}},
		{Actions: []string{updateItem}, Partitions: []string{tokenPartitions}},
		auditRecords(),
	}
}

// AuditEventsPolicy is what the consumer of the table's stream
// (functions/audit-events) may do on the table and its index: nothing. It
// reads the audit records from the stream's events, whose read the CDK app
// grants on the stream alone, and puts them on the event bus.
func AuditEventsPolicy() Policy { return Policy{} }
