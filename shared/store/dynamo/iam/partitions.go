package iam

import "slices"

// The partitions of the table (shared/store/dynamo/README.md, "Items"), as
// IAM's dynamodb:LeadingKeys condition matches them (StringLike: * is any
// run of characters). An owner's or a user's id is the caller's, which IAM
// does not know: a role gets the kind of partition (every OWNER#…), not one
// owner's.
const (
	ownerPartitions = "OWNER#*" // hosts, host-id counters, file-manager entries, known hosts
	userPartitions  = "USER#*"  // users, alert dismissals
	tokenPartitions = "TOKEN#*" // tokens by hash
	cachePartitions = "CACHE#*" // the releases feed's cache
	alertsPartition = "ALERTS"  // alerts
	tunnelPartition = "TUNNELS" // tunnels
	pingPartition   = "PING"    // the item Ping reads, which never exists
)

// Statement is one statement of a role's policy on the table: Actions,
// allowed on the items whose partition key matches one of Partitions (the
// statement's dynamodb:LeadingKeys condition, ForAllValues:StringLike).
type Statement struct {
	Actions    []string
	Partitions []string
}

// Policy is a role's statements on the table. A call is allowed when one
// statement has its action and a pattern matching its partition key.
type Policy []Statement

// Allows says whether the policy allows action on an item of partition pk.
func (p Policy) Allows(action, pk string) bool {
	for _, st := range p {
		if slices.Contains(st.Actions, action) && matches(st.Partitions, pk) {
			return true
		}
	}
	return false
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

	"list-hosts":  {ownerPartitions},
	"get-host":    {ownerPartitions},
	"create-host": {ownerPartitions},
	"update-host": {ownerPartitions},
	"delete-host": {ownerPartitions},

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
}

// RoutePolicy is what the Lambda function of the named route may do on the
// table: its actions (RouteActions) on its partitions. False for a name
// outside the route table.
func RoutePolicy(route string) (Policy, bool) {
	actions, ok := RouteActions(route)
	if !ok {
		return nil, false
	}
	return Policy{{Actions: actions, Partitions: slices.Clone(routePartitions[route])}}, true
}

// AuthorizerPolicy is what the REQUEST authorizer may do: read a token by
// its hash, then its user.
func AuthorizerPolicy() Policy {
	return Policy{{Actions: slices.Clone(Authorizer), Partitions: []string{tokenPartitions, userPartitions}}}
}

// TunnelServicePolicy is what the tunnel service's task role may do: read
// tunnels, known hosts, tokens and users (its token checks), and Ping; write
// tunnels and known hosts only. It can write no user or token item.
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
	}
}
