package dynamo_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
)

// Items in DynamoDB JSON ({"S": "x"}, {"N": "1"}, {"B": base64},
// {"BOOL": true}, {"NULL": true}, {"L": [...]}, {"M": {...}}), the form of
// testdata/schema1-items.json.

// jsonAV is the DynamoDB JSON of an attribute value, for encoding/json
// (which writes []byte as base64).
func jsonAV(av types.AttributeValue) any {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": v.Value}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": v.Value}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			l[i] = jsonAV(e)
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": jsonMap(v.Value)}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *types.AttributeValueMemberBS:
		return map[string]any{"BS": v.Value}
	}
	panic(fmt.Sprintf("unknown attribute value %T", av))
}

func jsonMap(m map[string]types.AttributeValue) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = jsonAV(v)
	}
	return out
}

// itemJSON is an item as one line of DynamoDB JSON, its attributes in name
// order (as encoding/json writes a map), for comparisons and messages.
func itemJSON(t *testing.T, item map[string]types.AttributeValue) string {
	t.Helper()
	data, err := json.Marshal(jsonMap(item))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// wireAV is one attribute value in DynamoDB JSON, as read: exactly one
// field is set.
type wireAV struct {
	S    *string
	N    *string
	B    []byte
	BOOL *bool
	NULL *bool
	L    []wireAV
	M    map[string]wireAV
	SS   []string
	NS   []string
	BS   [][]byte
}

func (w wireAV) value() (types.AttributeValue, error) {
	switch {
	case w.S != nil:
		return &types.AttributeValueMemberS{Value: *w.S}, nil
	case w.N != nil:
		return &types.AttributeValueMemberN{Value: *w.N}, nil
	case w.B != nil:
		return &types.AttributeValueMemberB{Value: w.B}, nil
	case w.BOOL != nil:
		return &types.AttributeValueMemberBOOL{Value: *w.BOOL}, nil
	case w.NULL != nil:
		return &types.AttributeValueMemberNULL{Value: *w.NULL}, nil
	case w.L != nil:
		l := make([]types.AttributeValue, len(w.L))
		for i, e := range w.L {
			v, err := e.value()
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case w.M != nil:
		m, err := wireItem(w.M)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case w.SS != nil:
		return &types.AttributeValueMemberSS{Value: w.SS}, nil
	case w.NS != nil:
		return &types.AttributeValueMemberNS{Value: w.NS}, nil
	case w.BS != nil:
		return &types.AttributeValueMemberBS{Value: w.BS}, nil
	}
	return nil, fmt.Errorf("an attribute value of no known type")
}

func wireItem(w map[string]wireAV) (map[string]types.AttributeValue, error) {
	item := make(map[string]types.AttributeValue, len(w))
	for name, e := range w {
		v, err := e.value()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		item[name] = v
	}
	return item, nil
}

// parseItems reads a JSON array of items in DynamoDB JSON.
func parseItems(data []byte) ([]map[string]types.AttributeValue, error) {
	var wire []map[string]wireAV
	if err := json.Unmarshal(data, &wire); err != nil {
		return nil, err
	}
	items := make([]map[string]types.AttributeValue, len(wire))
	for i, w := range wire {
		item, err := wireItem(w)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		items[i] = item
	}
	return items, nil
}

// scan returns every item of the table, sorted by pk then sk. The store
// never scans; the tests look at the whole table this way.
func scan(t *testing.T, srv *dynamotest.Server) []map[string]types.AttributeValue {
	t.Helper()
	var items []map[string]types.AttributeValue
	pages := dynamodb.NewScanPaginator(srv.Client, &dynamodb.ScanInput{TableName: &srv.Table})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, page.Items...)
	}
	slices.SortFunc(items, func(a, b map[string]types.AttributeValue) int {
		return cmp.Or(cmp.Compare(attr(a, "pk"), attr(b, "pk")), cmp.Compare(attr(a, "sk"), attr(b, "sk")))
	})
	return items
}
