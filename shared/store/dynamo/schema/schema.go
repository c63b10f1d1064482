// Package schema names the keys of sshdeck's DynamoDB table, its one index,
// its TTL attribute and the schema version every item carries. The store
// (shared/store/dynamo) and the CDK app (infra/) both declare the table from
// these names, so they cannot drift. It imports nothing, so that the CDK
// module can read it without the SDK.
package schema

const (
	// PartitionKey and SortKey are the table's string keys.
	PartitionKey = "pk"
	SortKey      = "sk"
	// Index is the one global secondary index (every attribute projected),
	// keyed by the strings IndexPartitionKey and IndexSortKey.
	Index             = "gsi1"
	IndexPartitionKey = "gsi1pk"
	IndexSortKey      = "gsi1sk"
	// TTL is the attribute (epoch seconds) after which DynamoDB deletes an
	// item: alerts, dismissals and cached feed pages carry it.
	TTL = "ttl"
	// SchemaVersion is the number attribute telling the layout of the
	// item's other attributes: every item the store writes carries the
	// version it wrote (shared/store/dynamo/README.md lists them), and an
	// item without it is of version 1. Whatever reads items other than
	// through the store (an export, a backfill) branches on it.
	SchemaVersion = "sv"
	// AuditPartitionPrefix begins the partition key of every audit record
	// (AUDIT#<yyyy-mm>): the CDK app's filter of the table's stream lets
	// only the inserts of such items reach the audit-events function.
	AuditPartitionPrefix = "AUDIT#"
)
