package dynamotest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// minidyn has no streams. What DynamoDB Streams would hand a Lambda
// function of the table is made here from the items themselves, read back
// from the server: the changes in the order the test says they happened,
// each with its keys, its images as the stream's view type NEW_IMAGE
// carries them (a new image for INSERT and MODIFY, none for REMOVE) and a
// sequence number greater than the one before.

// Change is one change of an item, as its stream record tells it.
type Change struct {
	// Name is the record's eventName: INSERT, MODIFY or REMOVE.
	Name string
	// Item is the item after the change (its keys alone for a REMOVE).
	Item map[string]types.AttributeValue
}

// StreamRegion and StreamARN are the region and stream of the records
// StreamEvent makes.
const (
	StreamRegion = "eu-west-1"
	StreamARN    = "arn:aws:dynamodb:eu-west-1:123456789012:table/sshdeck/stream/2026-01-01T00:00:00.000"
)

// StreamEvent is the event of a batch of the table's stream holding
// changes, in their order: the JSON Lambda sends a function, decoded as
// aws-lambda-go decodes it. Record i has the sequence number
// SequenceNumber(i).
func StreamEvent(changes ...Change) (events.DynamoDBEvent, error) {
	var ev events.DynamoDBEvent
	for i, c := range changes {
		keys, err := StreamImage(map[string]types.AttributeValue{
			schema.PartitionKey: c.Item[schema.PartitionKey], schema.SortKey: c.Item[schema.SortKey],
		})
		if err != nil {
			return ev, fmt.Errorf("change %d: keys: %w", i, err)
		}
		record := events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Now().Truncate(time.Second)},
			Keys:                        keys,
			SequenceNumber:              SequenceNumber(i),
			StreamViewType:              string(events.DynamoDBStreamViewTypeNewImage),
		}
		if c.Name != string(events.DynamoDBOperationTypeRemove) {
			if record.NewImage, err = StreamImage(c.Item); err != nil {
				return ev, fmt.Errorf("change %d: new image: %w", i, err)
			}
		}
		b, _ := json.Marshal(record.NewImage)
		record.SizeBytes = int64(len(b))
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{
			AWSRegion: StreamRegion, Change: record, EventID: fmt.Sprintf("%032x", i+1), EventName: c.Name,
			EventSource: "aws:dynamodb", EventVersion: "1.1", EventSourceArn: StreamARN,
		})
	}
	// Through JSON, as Lambda hands it over.
	b, err := json.Marshal(ev)
	if err != nil {
		return ev, err
	}
	var out events.DynamoDBEvent
	return out, json.Unmarshal(b, &out)
}

// SequenceNumber is the sequence number of StreamEvent's record i:
// DynamoDB's are decimal strings of 21 digits or more, increasing within a
// shard.
func SequenceNumber(i int) string { return fmt.Sprintf("4%020d", i+1) }

// StreamImage is an item as a stream record's image holds it: every
// attribute of every DynamoDB type, in aws-lambda-go's values.
func StreamImage(item map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	image := make(map[string]events.DynamoDBAttributeValue, len(item))
	for name, av := range item {
		v, err := streamValue(av)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		image[name] = v
	}
	return image, nil
}

func streamValue(av types.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value), nil
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value), nil
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value), nil
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value), nil
	case *types.AttributeValueMemberL:
		list := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			var err error
			if list[i], err = streamValue(e); err != nil {
				return list[i], fmt.Errorf("item %d: %w", i, err)
			}
		}
		return events.NewListAttribute(list), nil
	case *types.AttributeValueMemberM:
		m, err := StreamImage(v.Value)
		return events.NewMapAttribute(m), err
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("%T is no DynamoDB type", av)
}

// Partition returns the items of one partition of the table, in sort key
// order, as DynamoDB holds them. Its Queries are counted like any call:
// read before ResetCalls.
func (s *Server) Partition(ctx context.Context, pk string) ([]map[string]types.AttributeValue, error) {
	in := &dynamodb.QueryInput{
		TableName:                 &s.Table,
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": schema.PartitionKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
		ConsistentRead:            aws.Bool(true),
	}
	var items []map[string]types.AttributeValue
	for {
		out, err := s.Client.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
