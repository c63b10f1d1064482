package auditbench

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB's metering of writes (its developer guide, "Read/write capacity
// mode" and "Item sizes and formats"): a standard write (PutItem,
// UpdateItem, DeleteItem, each request of a BatchWriteItem) costs one write
// request unit per KB of the item, rounded up; a transactional write (each
// item of a TransactWriteItems) costs two per KB, the prepare and the
// commit. An update is charged for the larger of the item before and after
// it, a delete for the item deleted.

const unitBytes = 1024

// units is the write request units of a write of an item of size bytes:
// per started KB, at least one (a delete of nothing, a condition on an
// absent item, still costs one).
func units(size int, transactional bool) int {
	u := max((size+unitBytes-1)/unitBytes, 1)
	if transactional {
		u *= 2
	}
	return u
}

// itemSize is the size of an item as DynamoDB counts it: for each
// attribute, its name's UTF-8 bytes and its value's size.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize is an attribute value's size: a string's UTF-8 bytes, a
// binary's bytes, a number's 1 byte per two significant digits plus 1, 1
// for a boolean or a null; a list or map takes 3 bytes, and 1 more per
// element beside the element's own size (a map's with its name); a set
// the sum of its elements'.
func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for name, e := range v.Value {
			n += 1 + len(name) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	}
	return 0
}

// numberSize is a number's size: its significant digits (sign, point and
// exponent left out, leading and trailing zeros trimmed), 1 byte per two,
// plus 1.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	digits := strings.Trim(strings.Replace(s, ".", "", 1), "0")
	return (len(digits)+1)/2 + 1
}
