package auditevents

import (
	"fmt"
	"sort"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item converts a stream record's image (aws-lambda-go's attribute values,
// as Lambda hands them over) to the SDK's, which the store's decoders read.
// It converts the types an audit item holds, S, N, BOOL and NULL; any
// other is an error naming the attribute and its type, never its value (an
// item in an audit partition that holds one was not written by the store).
// Attributes are taken in name order, so that the error of an image with
// several such attributes is always the same one.
func Item(image map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	names := make([]string, 0, len(image))
	for name := range image {
		names = append(names, name)
	}
	sort.Strings(names)
	item := make(map[string]types.AttributeValue, len(image))
	for _, name := range names {
		av, err := attributeValue(image[name])
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		item[name] = av
	}
	return item, nil
}

func attributeValue(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	}
	return nil, fmt.Errorf("%s, a type no audit item holds", typeName(v.DataType()))
}

// typeName is DynamoDB's name of a type Item refuses.
func typeName(t events.DynamoDBDataType) string {
	if name, ok := typeNames[t]; ok {
		return name
	}
	return fmt.Sprintf("type %d of aws-lambda-go", t)
}

var typeNames = map[events.DynamoDBDataType]string{
	events.DataTypeBinary:    "B (binary)",
	events.DataTypeBinarySet: "BS (binary set)",
	events.DataTypeList:      "L (list)",
	events.DataTypeMap:       "M (map)",
	events.DataTypeNumberSet: "NS (number set)",
	events.DataTypeStringSet: "SS (string set)",
}
