// Package iam is the DynamoDB IAM actions each part of sshdeck needs on its
// table, as data rather than prose: the CDK app (infra/) grants every Lambda
// function, the authorizer and the tunnel service exactly these, and the
// tests that replay the functions, the store's call counts and the tunnel
// service over dynamotest check that every call they see needs only what
// its caller is granted. A new call without its action thus fails a test
// here, not a request in AWS (AccessDeniedException).
//
// The actions are on the table, but for the routes that list a user's
// tokens (the store's Tokens, a Query of the index gsi1: list-tokens, and
// RevokeUserTokens in change-password and update-user), which also get
// Query on the index (routeIndexQueries, TokenIndex). The authorizer and
// the tunnel service never read the index. The consumer of the table's
// stream (functions/audit-events) touches neither: it reads the stream. shared/store/dynamo/README.md
// explains each list, call by call.
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
	// once for an owner of before the counts, a Query counting). Then the
	// host's tunnels (shared/hosts, tunnels.go): the owner's tunnels
	// (Query), each tunnelConnection's tunnel read (GetItem) and created
	// (CreateTunnel: a transaction of its Put and the Update of the
	// owner's count of tunnels), a tunnel naming the host restarted
	// (PutTunnel: UpdateItem).
	"create-host": {getItem, putItem, query, updateItem},
	// Host, then UpdateHost (PutItem; GetItem again when refused). Then
	// the tunnels as create-host, and besides: a removed item's tunnel
	// deleted (DeleteTunnel: a transaction of its Delete and the Update
	// of the count), the routes of the tunnels' sources read (GetItem).
	"update-host": {deleteItem, getItem, putItem, query, updateItem},
	// Host (its name tells the tunnels that name it), DeleteHost: a
	// transaction of the host's Delete and the Update of the owner's
	// count, then its entries by Query and BatchWriteItem. Then its
	// tunnels deleted (a transaction as update-host's), the owner's
	// tunnels listed (Query) and those through it restarted (GetItem,
	// UpdateItem).
	"delete-host": {batchWriteItem, deleteItem, getItem, query, updateItem},
	// import-hosts: the caller's host names (Hosts, Query) for an
	// ssh_config's hops, Host per hop of a chain outside the import
	// (GetItem), NextHostIDs (UpdateItem), CreateHosts: a transaction of
	// the hosts' Puts and the Update of the owner's count of hosts; when
	// that is refused, a GetItem of the counter (and, once for an owner of
	// before the counts, a Query counting).
	"import-hosts": {getItem, putItem, query, updateItem},
	// export-hosts: Hosts, a page at a time.
	"export-hosts": {query},

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

	// The accounts' routes (shared/accounts). Failures, AddFailure and
	// the lockout are per key of LOGINFAIL#<key>: a failed attempt, and
	// one the lockout refuses, counts on each key of the attempt.
	//
	// login: Failures of the name and of the address (GetItem each);
	// UserByName and LoginSecrets (GetItem each); a failure counted by
	// AddFailure (UpdateItem, + PutItem when the window had ended) on
	// each key; with TOTP, PutLoginSecrets of the spent step (PutItem,
	// also a rehash of a hash of older parameters); the token by
	// CreateTokenWithin: the user (GetItem), the count of live tokens
	// (Query), then a transaction of the token's three Puts and the
	// Update of the user's tokenSeq.
	"login": {getItem, putItem, query, updateItem},
	// User, LoginSecrets (whether TOTP is on, whether a password is set).
	"get-me": {getItem},
	// User, Failures of the name (GetItem); LoginSecrets, then
	// PutLoginSecrets (PutItem); a wrong current password counted by
	// AddFailure (UpdateItem, + PutItem); then RevokeUserTokens: the
	// listed tokens (Query; the index's Query is in routeIndexQueries),
	// and per token Token (two GetItem) and a transaction of the token's
	// Update and the Delete of its listing (a refused one reads the
	// token again: GetItem).
	"change-password": {deleteItem, getItem, putItem, query, updateItem},
	// User, LoginSecrets (GetItem), PutLoginSecrets of the sealed pending
	// secret (PutItem).
	"create-totp": {getItem, putItem},
	// User, Failures of the name, LoginSecrets (GetItem);
	// PutLoginSecrets (PutItem: disable-totp twice, the spent step then
	// the secret gone); a wrong code counted by AddFailure (UpdateItem,
	// + PutItem).
	"enable-totp":  {getItem, putItem, updateItem},
	"disable-totp": {getItem, putItem, updateItem},
	// Users (Query of USERNAMES), LoginSecrets of each (GetItem).
	"list-users": {getItem, query},
	// CreateUser: a transaction of the Puts of the name and the user;
	// PutLoginSecrets (PutItem).
	"create-user": {putItem},
	// User (GetItem); per flag UserByName and UpdateUser: GetItem, then a
	// transaction of the Updates of the user and its name; disabling,
	// RevokeUserTokens as in change-password (Query, GetItem, Update,
	// Delete); LoginSecrets of the answer (GetItem).
	"update-user": {deleteItem, getItem, query, updateItem},
	// User (GetItem); the tokens are gsi1's Query (routeIndexQueries).
	"list-tokens": {getItem},
	// User (GetItem), then CreateTokenWithin as in login (GetItem,
	// Query, a transaction of three Puts and an Update).
	"create-token": {getItem, putItem, query, updateItem},
	// Token (two GetItem: the id, then the token), then RevokeToken:
	// Token again and a transaction of the token's Update and the Delete
	// of its listing (refused, a GetItem of the token).
	"delete-token": {deleteItem, getItem, updateItem},

	// AuditRecords: a Query of the month partitions (everyone's), or of
	// gsi1 (one actor's, routeIndexQueries), a page at a time.
	"list-audit":   {query},
	"export-audit": {query},
}

// TokenIndex is the table's global secondary index, gsi1
// (shared/store/dynamo/schema.Index): a user's tokens by creation time,
// under gsi1pk USER#<userId>.
const TokenIndex = "gsi1"

// routeIndexQueries are the routes whose function queries TokenIndex: the
// store's Tokens, which list-tokens answers and RevokeUserTokens reads
// (the tokens of before the listing items, and revoked ones too), in
// change-password and update-user. Each gets Query on the index alone,
// on the index partitions of users (routeIndexPartitions).
var routeIndexQueries = []string{"change-password", "export-audit", "list-audit", "list-tokens", "update-user"}

// RouteActions returns the DynamoDB actions ("dynamodb:GetItem") that the
// Lambda function of the named route needs on the table, sorted, without
// duplicates; false for a name outside the route table. The slice is the
// caller's own. A route of routeIndexQueries also has Query on TokenIndex,
// which RoutePolicy adds.
func RouteActions(route string) ([]string, bool) {
	actions, ok := routeActions[route]
	return slices.Clone(actions), ok
}

// Authorizer is what the REQUEST authorizer needs on the table: it reads a
// token by its hash, then its user (TokenByHash, User: GetItem), and on a
// read of a token whose lastUsedAt is a minute old or more writes it
// (TouchToken: UpdateItem of TOKEN#<hash>, which AuthorizerPolicy allows
// there alone). Do not modify it.
var Authorizer = []string{getItem, updateItem}

// TunnelService is what the tunnel service's task role needs on the table:
// reads of tunnels, known hosts, the hosts a connect request names by id
// (sourceHostId, endpointHostId, and the hosts of the source's route),
// tokens and users, the owner's count of tunnels, and Ping (GetItem); the
// lists and counts (Query); every tunnel
// write, the lease's and the count's included, and its token checks'
// TouchToken (UpdateItem); a new known host and a new tunnel (PutItem, the
// tunnel in a transaction with its count); a tunnel deleted or forgotten
// (DeleteItem, in a transaction with the count). Do not modify it.
var TunnelService = []string{deleteItem, getItem, putItem, query, updateItem}

// ReadActions are the actions that only read. ConditionCheckItem reads
// too, but only inside a write transaction, so it is not one of them: a
// route that only reads needs nothing else. Do not modify it.
var ReadActions = []string{batchGetItem, getItem, query}
