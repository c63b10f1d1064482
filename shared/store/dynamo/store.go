// Package dynamo is the sshdeck.Store over one DynamoDB table (single-table
// design). README.md beside this file describes the items, their keys, the
// access patterns, the conditional writes and the calls each route makes.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// API is the part of *dynamodb.Client the store uses. In IAM terms a
// TransactWriteItems is the PutItem, UpdateItem and ConditionCheckItem of its
// items, so a role needs at most GetItem, PutItem, UpdateItem, DeleteItem,
// ConditionCheckItem, Query and BatchWriteItem (README.md lists them per
// route).
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Store is the sshdeck.Store over a DynamoDB table made by CreateTable (or
// the CDK stack that reproduces its schema).
type Store struct {
	client API
	table  string
	// pageSize caps the items of one Query page; 0 leaves DynamoDB's 1 MB
	// pages. Tests lower it to exercise pagination with a few items.
	pageSize int32
	// backoff is the first wait before resending unprocessed batch writes;
	// 0 is batchBackoff. Tests lower it to run out of attempts quickly.
	backoff time.Duration
}

var _ sshdeck.Store = (*Store)(nil)

// NewClient returns a DynamoDB client from an AWS configuration. A non-empty
// endpoint replaces DynamoDB's with an emulator (AWS_ENDPOINT_URL_DYNAMODB,
// such as minidyn in the tests), whose answers carry no CRC32 to check.
func NewClient(cfg aws.Config, endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.DisableValidateResponseChecksum = true
		}
	})
}

// New returns the store over the table. Its calls go through auditing
// (audit.go): the writes that are audited requests' changes carry the
// requests' records.
func New(client API, table string) *Store {
	return &Store{client: &auditing{API: client, table: table}, table: table}
}

// Close does nothing: the client holds no resource of the store's own.
func (s *Store) Close() error { return nil }

// pingKey is the key of an item that never exists: no partition of items.go
// is named PING.
var pingKey = key{pk: "PING", sk: "PING"}

// Ping reads an absent item: cheap (an eventually consistent read of nothing)
// and needing only the GetItem right that every function has.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: pingKey.attrs()})
	return wrap("ping", err)
}

// getItem reads the item at k with a strongly consistent read: nil when
// there is none.
func (s *Store) getItem(ctx context.Context, k key) (map[string]types.AttributeValue, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            k.attrs(),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// query runs in, page after page (following LastEvaluatedKey), and decodes
// every item with decode.
func query[T any](ctx context.Context, s *Store, in *dynamodb.QueryInput, decode func(map[string]types.AttributeValue) (T, error)) ([]T, error) {
	return queryLimit(ctx, s, in, 0, decode)
}

// queryLimit is query stopping at limit items (0: all). DynamoDB's Limit
// counts the items a page reads, so each page asks for what is left.
func queryLimit[T any](ctx context.Context, s *Store, in *dynamodb.QueryInput, limit int, decode func(map[string]types.AttributeValue) (T, error)) ([]T, error) {
	in.TableName = &s.table
	out := []T{}
	for {
		in.Limit = nil
		if want := int32(limit - len(out)); limit > 0 && (s.pageSize == 0 || want < s.pageSize) {
			in.Limit = &want
		} else if s.pageSize > 0 {
			in.Limit = &s.pageSize
		}
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		out = slices.Grow(out, len(page.Items))
		for _, item := range page.Items {
			v, err := decode(item)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		if len(page.LastEvaluatedKey) == 0 || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// exists reports whether an item has the key: a strongly consistent GetItem
// that returns the key only.
func (s *Store) exists(ctx context.Context, k key) (bool, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                &s.table,
		Key:                      k.attrs(),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#pk"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	if err != nil {
		return false, err
	}
	return out.Item != nil, nil
}

// prefixQuery is a strongly consistent query of the sort keys of partition
// pk that begin with prefix. Callers may add a projection, naming its
// attributes in ExpressionAttributeNames.
func prefixQuery(pk, prefix string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(pk), ":prefix": str(prefix),
		},
		ConsistentRead: aws.Bool(true),
	}
}

// count returns how many items in matches, page after page: Select COUNT
// reads the items (and costs their read units) but returns none. (minidyn
// ignores Select and answers the items too; Count is right either way.)
func (s *Store) count(ctx context.Context, in *dynamodb.QueryInput) (int, error) {
	in.TableName = &s.table
	in.Select = types.SelectCount
	if s.pageSize > 0 {
		in.Limit = &s.pageSize
	}
	n := 0
	pages := dynamodb.NewQueryPaginator(s.client, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		n += int(page.Count)
	}
	return n, nil
}

// putNew is a put of the item only if no item has its key.
func (s *Store) putNew(item map[string]types.AttributeValue) *types.Put {
	return &types.Put{
		TableName:                &s.table,
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}
}

// putIfAbsent puts item only if no item has its key (one PutItem), and
// reports whether one had.
func (s *Store) putIfAbsent(ctx context.Context, item map[string]types.AttributeValue) (exists bool, err error) {
	put := s.putNew(item)
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                put.TableName,
		Item:                     put.Item,
		ConditionExpression:      put.ConditionExpression,
		ExpressionAttributeNames: put.ExpressionAttributeNames,
	})
	if conditionFailed(err) {
		return true, nil
	}
	return false, err
}

// conditionFailed reports whether a single-item write failed its condition.
func conditionFailed(err error) bool {
	_, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
	return ok
}

// wrap leaves coded errors alone: their message is meant for the caller.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*sshdeck.Error](err); ok {
		return err
	}
	return fmt.Errorf("dynamo: %s: %w", op, err)
}
