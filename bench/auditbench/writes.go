package auditbench

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/store/dynamo"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// writeCall is one write call the store made.
type writeCall struct {
	Op    string // PutItem, UpdateItem, DeleteItem, TransactWriteItems, BatchWriteItem
	Items []itemWrite
}

// Transactional reports whether DynamoDB meters the call's items as
// transactional writes.
func (c writeCall) Transactional() bool { return c.Op == "TransactWriteItems" }

// itemWrite is one item a write call writes, or checks.
type itemWrite struct {
	Kind string // Put, Update, Delete or ConditionCheck
	Key  map[string]types.AttributeValue
	// Item is a Put's whole item; the others' items are read back once
	// the request is over (sizeItems).
	Item map[string]types.AttributeValue
	// Size is the item's size in bytes, once known.
	Size int
}

// Units is what the item's write costs.
func (w itemWrite) Units(transactional bool) int { return units(w.Size, transactional) }

// Audit reports whether the item is an audit record.
func (w itemWrite) Audit() bool { return dynamo.AuditPartition(keyString(w.Key, schema.PartitionKey)) }

// Label names the item by the kinds of its keys ("OWNER/HOST"), or as an
// audit record.
func (w itemWrite) Label() string {
	if w.Audit() {
		return "audit record"
	}
	kind := func(attr string) string {
		k, _, _ := strings.Cut(keyString(w.Key, attr), "#")
		return k
	}
	return kind(schema.PartitionKey) + "/" + kind(schema.SortKey)
}

func keyString(key map[string]types.AttributeValue, attr string) string {
	if s, ok := key[attr].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// keyOf is the table key of a whole item.
func keyOf(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{schema.PartitionKey: item[schema.PartitionKey], schema.SortKey: item[schema.SortKey]}
}

// writeRecorder is the store's DynamoDB client, noting the items of every
// write call the store makes (after its auditing turned a commit point's
// write into a transaction with the record), so that their units can be
// computed. It changes no call.
type writeRecorder struct {
	dynamo.API
	mu     sync.Mutex
	writes []writeCall
}

func (r *writeRecorder) note(c writeCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, c)
}

// take returns the calls noted since the last take, and forgets them.
func (r *writeRecorder) take() []writeCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.writes
	r.writes = nil
	return w
}

func (r *writeRecorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.note(writeCall{Op: "PutItem", Items: []itemWrite{{Kind: "Put", Key: keyOf(in.Item), Item: in.Item}}})
	return r.API.PutItem(ctx, in, optFns...)
}

func (r *writeRecorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.note(writeCall{Op: "UpdateItem", Items: []itemWrite{{Kind: "Update", Key: in.Key}}})
	return r.API.UpdateItem(ctx, in, optFns...)
}

func (r *writeRecorder) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.note(writeCall{Op: "DeleteItem", Items: []itemWrite{{Kind: "Delete", Key: in.Key}}})
	return r.API.DeleteItem(ctx, in, optFns...)
}

func (r *writeRecorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c := writeCall{Op: "TransactWriteItems"}
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			c.Items = append(c.Items, itemWrite{Kind: "Put", Key: keyOf(it.Put.Item), Item: it.Put.Item})
		case it.Update != nil:
			c.Items = append(c.Items, itemWrite{Kind: "Update", Key: it.Update.Key})
		case it.Delete != nil:
			c.Items = append(c.Items, itemWrite{Kind: "Delete", Key: it.Delete.Key})
		case it.ConditionCheck != nil:
			c.Items = append(c.Items, itemWrite{Kind: "ConditionCheck", Key: it.ConditionCheck.Key})
		}
	}
	r.note(c)
	return r.API.TransactWriteItems(ctx, in, optFns...)
}

func (r *writeRecorder) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c := writeCall{Op: "BatchWriteItem"}
	for _, reqs := range in.RequestItems {
		for _, req := range reqs {
			switch {
			case req.PutRequest != nil:
				c.Items = append(c.Items, itemWrite{Kind: "Put", Key: keyOf(req.PutRequest.Item), Item: req.PutRequest.Item})
			case req.DeleteRequest != nil:
				c.Items = append(c.Items, itemWrite{Kind: "Delete", Key: req.DeleteRequest.Key})
			}
		}
	}
	r.note(c)
	return r.API.BatchWriteItem(ctx, in, optFns...)
}

// sizeItems sets the size of every item of calls: a Put's from the item
// it wrote; an update's, a condition's and a delete's from the item at
// its key now, read with client (which the caller reads after it has
// taken the request's counts). Updated items are read after the update,
// which for these routes' (counters, a user's token sequence, a file
// entry) is the larger of before and after, what DynamoDB charges; a
// deleted item is gone, and counted as the 1 unit of an item under 1 KB.
func sizeItems(ctx context.Context, client dynamo.API, table string, calls []writeCall) error {
	for i := range calls {
		for j := range calls[i].Items {
			it := &calls[i].Items[j]
			if it.Item != nil {
				it.Size = itemSize(it.Item)
				continue
			}
			out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: it.Key, ConsistentRead: aws.Bool(true)})
			if err != nil {
				return fmt.Errorf("read the %s item %s back for its size: %w", it.Kind, it.Label(), err)
			}
			it.Size = itemSize(out.Item)
		}
	}
	return nil
}
