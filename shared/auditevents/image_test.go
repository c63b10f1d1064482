package auditevents

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestItem: the types an audit item holds convert to the SDK's, each to
// its own; every other type is refused, by the attribute's name and the
// type's, without its value.
func TestItem(t *testing.T) {
	image := map[string]events.DynamoDBAttributeValue{
		"pk":      events.NewStringAttribute("AUDIT#2026-01"),
		"empty":   events.NewStringAttribute(""),
		"ttl":     events.NewNumberAttribute("1802649600"),
		"sv":      events.NewNumberAttribute("8"),
		"ok":      events.NewBooleanAttribute(true),
		"no":      events.NewBooleanAttribute(false),
		"nothing": events.NewNullAttribute(),
	}
	got, err := Item(image)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]types.AttributeValue{
		"pk":      &types.AttributeValueMemberS{Value: "AUDIT#2026-01"},
		"empty":   &types.AttributeValueMemberS{Value: ""},
		"ttl":     &types.AttributeValueMemberN{Value: "1802649600"},
		"sv":      &types.AttributeValueMemberN{Value: "8"},
		"ok":      &types.AttributeValueMemberBOOL{Value: true},
		"no":      &types.AttributeValueMemberBOOL{Value: false},
		"nothing": &types.AttributeValueMemberNULL{Value: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Item = %#v, want %#v", got, want)
	}
	if got, err := Item(nil); err != nil || len(got) != 0 {
		t.Errorf("Item(nil) = %v, %v; want an empty item", got, err)
	}

	const secret = "hunter2-value"
	for _, c := range []struct {
		value events.DynamoDBAttributeValue
		want  string
	}{
		{events.NewBinaryAttribute([]byte(secret)), "B (binary)"},
		{events.NewBinarySetAttribute([][]byte{[]byte(secret)}), "BS (binary set)"},
		{events.NewStringSetAttribute([]string{secret}), "SS (string set)"},
		{events.NewNumberSetAttribute([]string{"1"}), "NS (number set)"},
		// A list or map is refused whole, whatever it holds: an audit
		// item has none, so nothing inside one is read.
		{events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute(secret)}), "L (list)"},
		{events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"password": events.NewStringAttribute(secret)}), "M (map)"},
		{events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"inner": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewBinaryAttribute([]byte(secret))}),
		}), "M (map)"},
	} {
		_, err := Item(map[string]events.DynamoDBAttributeValue{"id": events.NewStringAttribute("aud_1"), "extra": c.value})
		if err == nil {
			t.Errorf("%s: no error", c.want)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "attribute extra: "+c.want+",") || strings.Contains(msg, secret) {
			t.Errorf("%s: error %q, want it to name attribute extra and type %s, and not the value", c.want, msg, c.want)
		}
	}

	// Of several such attributes, the first by name, every time.
	twoBad := map[string]events.DynamoDBAttributeValue{
		"zz": events.NewListAttribute(nil), "aa": events.NewMapAttribute(nil), "mm": events.NewStringAttribute("fine"),
	}
	for range 20 {
		if _, err := Item(twoBad); err == nil || !strings.HasPrefix(err.Error(), "attribute aa: M (map)") {
			t.Fatalf("two refused attributes: %v, want attribute aa's error", err)
		}
	}
}
