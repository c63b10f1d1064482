// Package iam is the DynamoDB IAM actions each part of sshdeck needs on its
// table, as data rather than prose: the CDK app (infra/) grants every Lambda
// function, the authorizer and the tunnel service exactly these, and the
// tests that replay the functions, the store's call counts and the tunnel
// service over dynamotest check that every call they see needs only what
// its caller is granted. A new call without its action thus fails a test
// here, not a request in AWS (AccessDeniedException).
//
// The actions are on the table only: no route, nor the authorizer or the
// tunnel service, reads the index gsi1 (only the store's Tokens does, which
// none of them calls). shared/store/dynamo/README.md explains each list,
// call by call.
//
// It imports nothing but the standard library (its tests read
// shared/routes), so that the CDK module can read it without compiling the
// AWS SDK: TestImports keeps it so.
package iam

import "slices"

// The actions, as IAM names them. A TransactWriteItems needs the action of
// each of its items (ConditionCheckItem, PutItem, UpdateItem, DeleteItem);
// a BatchWriteItem needs BatchWriteItem, whatever its requests.
const (
	batchGetItem       = "dynamodb:BatchGetItem"
	batchWriteItem     = "dynamodb:BatchWriteItem"
	conditionCheckItem = "dynamodb:ConditionCheckItem"
	deleteItem         = "dynamodb:DeleteItem"
	getItem            = "dynamodb:GetItem"
	putItem            = "dynamodb:PutItem"
	query              = "dynamodb:Query"
	updateItem         = "dynamodb:UpdateItem"
)

// routeActions is, per route of routes.All, what its function needs over
// every path of its code: the "IAM actions" column of the README's table
// "Calls per route". Each list is sorted, without duplicates.
var routeActions = map[string][]string{
	"healthz":    {getItem}, // Ping
	"list-hosts": {query},   // Hosts
	"get-host":   {getItem}, // Host
	// NextHostID (UpdateItem), CreateHost: a transaction of the host's
	// Put, the Put of its count of shortcuts and the Update of the owner's
	// count of hosts; when that is refused, a GetItem of the counter (and,
	// once for an owner of before the counts, a Query counting).
	"create-host": {getItem, putItem, query, updateItem},
	// Host, then UpdateHost (PutItem; GetItem again when refused).
	"update-host": {getItem, putItem},
	// DeleteHost, after Host with If-Match: a transaction of the host's
	// Delete and the Update of the owner's count, then its entries by
	// Query and BatchWriteItem; a refused versioned delete reads the host.
	"delete-host": {batchWriteItem, deleteItem, getItem, query, updateItem},

	"list-recent-files": {getItem, query}, // Host, Files
	// PutRecentFile: a transaction of a ConditionCheck of the host and an
	// Update of the entry, then the trim (Query, BatchWriteItem when full).
	"add-recent-file":    {batchWriteItem, conditionCheckItem, query, updateItem},
	"delete-recent-file": {deleteItem, getItem}, // Host, DeleteFile
	"list-shortcuts":     {getItem, query},      // Host, Files
	// AddShortcut: a transaction of a ConditionCheck of the host, a Put of
	// the entry and the Update of the host's count of shortcuts; when that
	// is refused, a GetItem of the counter (and of the entry at the limit;
	// once for a host of before the counts, a Query counting).
	"add-shortcut": {conditionCheckItem, getItem, putItem, query, updateItem},
	// Host, DeleteFile: a transaction of the entry's Delete and the Update
	// of the host's count.
	"delete-shortcut": {deleteItem, getItem, updateItem},

	"list-alerts":   {query},          // Alerts, Dismissals
	"dismiss-alert": {putItem, query}, // Alerts, DismissAlert
	"publish-alert": {putItem},        // CreateAlert
	"delete-alert":  {deleteItem},     // DeleteAlert

	// CacheEntry, CountBelow (the deployment's calls to GitHub this
	// minute) and PutCacheEntry.
	"releases-feed": {getItem, putItem, updateItem},
}

// RouteActions returns the DynamoDB actions ("dynamodb:GetItem") that the
// Lambda function of the named route needs on the table, sorted, without
// duplicates; false for a name outside the route table. The slice is the
// caller's own.
func RouteActions(route string) ([]string, bool) {
	actions, ok := routeActions[route]
	return slices.Clone(actions), ok
}

// Authorizer is what the REQUEST authorizer needs on the table: it reads a
// token by its hash, then its user (TokenByHash, User). Do not modify it.
var Authorizer = []string{getItem}

// TunnelService is what the tunnel service's task role needs on the table:
// reads of tunnels, known hosts, tokens and users, the owner's count of
// tunnels, and Ping (GetItem); the lists and counts (Query); every tunnel
// write, the lease's and the count's included (UpdateItem); a new known
// host and a new tunnel (PutItem, the tunnel in a transaction with its
// count); a tunnel deleted or forgotten (DeleteItem, in a transaction with
// the count). Do not modify it.
var TunnelService = []string{deleteItem, getItem, putItem, query, updateItem}

// ReadActions are the actions that only read. ConditionCheckItem reads
// too, but only inside a write transaction, so it is not one of them: a
// route that only reads needs nothing else. Do not modify it.
var ReadActions = []string{batchGetItem, getItem, query}
