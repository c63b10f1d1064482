package dynamo

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// Every kind of item is written and read by hand, beside the kind's store
// methods (users.go, hostitem.go, tunnelitem.go, ...): the attributes' names
// and types are the store's own, spelled out there, so that renaming a
// field of a domain type, or the json tag the API shows it by, changes
// nothing in the table. Nor is there reflection: it made decoding a page of
// hosts several times slower (BenchmarkDecodeHosts).

// schemaVersion is the layout of the items the store writes, in the
// attribute sv of every item. An item without sv is of version 1, written
// before there was one; README.md says what each version changed. The
// store reads every version up to its own: it writes the newest, and a
// whole-item write (a put, or an update that SETs every attribute) turns
// an old item into a new one. An update of some attributes leaves sv as it
// was, so it may only write attributes whose layout is the same in every
// version the store reads.
const schemaVersion = 2

// attrSchemaVersion is the attribute holding an item's schema version.
const attrSchemaVersion = schema.SchemaVersion

// newAttrs returns the attributes of a new item: its schema version, and
// room for n more.
func newAttrs(n int) map[string]types.AttributeValue {
	a := make(map[string]types.AttributeValue, n+1)
	a[attrSchemaVersion] = num(schemaVersion)
	return a
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func boolean(b bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: b} }

// stamp is a time as items hold it: UTC RFC 3339 to the nanosecond, trailing
// zeros dropped (so the text's order is not time order: no key or condition
// compares it; see sortableTime).
func stamp(t time.Time) types.AttributeValue { return str(t.UTC().Format(time.RFC3339Nano)) }

// putTime sets a[name] to t, and leaves a zero time out: a token that never
// expires has no expiresAt, an unrevoked one no revokedAt (which
// RevokeToken's if_not_exists relies on), a shortcut no lastOpened.
func putTime(a map[string]types.AttributeValue, name string, t time.Time) {
	if !t.IsZero() {
		a[name] = stamp(t)
	}
}

// putNum sets a[name] to n, and leaves 0 out: for attributes added after
// their items, whose absence reads as 0.
func putNum(a map[string]types.AttributeValue, name string, n int64) {
	if n != 0 {
		a[name] = num(n)
	}
}

// putBytes sets a[name] to b as Binary, and leaves an empty b out: nil and
// []byte{} both mean no credential (or no value), and minidyn, which the
// tests run on, refuses an empty binary.
func putBytes(a map[string]types.AttributeValue, name string, b []byte) {
	if len(b) > 0 {
		a[name] = &types.AttributeValueMemberB{Value: b}
	}
}

// putMap sets a[name] to the map m, and leaves an empty one out, as
// putStrings and putMaps do an empty list: they cost bytes for nothing, and
// minidyn answers an empty list or map in a way the SDK decodes as another
// attribute's value.
func putMap(a map[string]types.AttributeValue, name string, m map[string]types.AttributeValue) {
	if len(m) > 0 {
		a[name] = &types.AttributeValueMemberM{Value: m}
	}
}

// putStrings sets a[name] to the strings as a List of String (not a String
// Set, which would refuse duplicates and lose the order), leaving none out.
func putStrings(a map[string]types.AttributeValue, name string, ss []string) {
	if len(ss) == 0 {
		return
	}
	l := make([]types.AttributeValue, len(ss))
	for i, s := range ss {
		l[i] = str(s)
	}
	a[name] = &types.AttributeValueMemberL{Value: l}
}

// putMaps sets a[name] to a List of the Maps each element encodes to,
// leaving an empty list out.
func putMaps[T any](a map[string]types.AttributeValue, name string, es []T, encode func(*T) map[string]types.AttributeValue) {
	if len(es) == 0 {
		return
	}
	l := make([]types.AttributeValue, len(es))
	for i := range es {
		l[i] = &types.AttributeValueMemberM{Value: encode(&es[i])}
	}
	a[name] = &types.AttributeValueMemberL{Value: l}
}

// decoding is the reading of one item: its schema version and the first
// attribute that did not decode.
type decoding struct {
	version int
	err     error
}

// errUnknownSchema is an item of a schema version past the store's (or
// below 1): its attributes may mean what this store cannot tell. Such an
// item comes of a newer store writing before every reader could read it
// (README.md).
var errUnknownSchema = fmt.Errorf("its schema version is not one this store reads (1 to %d)", schemaVersion)

// decode starts reading an item: the fields of its top level. Its schema
// version is 1 without sv.
func decode(item map[string]types.AttributeValue) (fields, *decoding) {
	d := &decoding{version: 1}
	f := fields{m: item, d: d}
	if _, ok := item[attrSchemaVersion]; ok {
		v := f.int64(attrSchemaVersion)
		if v < 1 || v > schemaVersion {
			d.err = errUnknownSchema
		}
		d.version = int(v)
	}
	return f, d
}

// done returns the item's error, naming the kind of item and the attribute
// only: a decoder's own message may quote the value, which may be a
// credential or a user's data.
func (d *decoding) done(kind string) error {
	if d.err == nil {
		return nil
	}
	return fmt.Errorf("an item does not decode as a %s: %w", kind, d.err)
}

// fields reads the attributes of an item or of a map in it. Each getter
// returns the zero value for an absent attribute or a NULL (schema 1 wrote a
// nil list or binary as NULL, schema 2 leaves it out: both mean empty), and
// notes an attribute of another type as the item's error.
type fields struct {
	m map[string]types.AttributeValue
	d *decoding
}

func (f fields) fail(name, want string) {
	if f.d.err == nil {
		f.d.err = fmt.Errorf("attribute %s is not %s", name, want)
	}
}

// absent is a getter's end when the attribute av is not of the type it
// wants: no error when av is absent or NULL (the zero value), else a
// failure of the attribute.
func (f fields) absent(av types.AttributeValue, name, want string) {
	switch av.(type) {
	case nil, *types.AttributeValueMemberNULL:
		return
	}
	f.fail(name, want)
}

func (f fields) str(name string) string {
	av := f.m[name]
	if v, ok := av.(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	f.absent(av, name, "a string")
	return ""
}

func (f fields) int64(name string) int64 {
	av := f.m[name]
	if v, ok := av.(*types.AttributeValueMemberN); ok {
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			f.fail(name, "a whole number of 64 bits")
		}
		return n
	}
	f.absent(av, name, "a number")
	return 0
}

func (f fields) int(name string) int {
	n := f.int64(name)
	if int64(int(n)) != n {
		f.fail(name, "a whole number of an int's size")
		return 0
	}
	return int(n)
}

func (f fields) bool(name string) bool {
	av := f.m[name]
	if v, ok := av.(*types.AttributeValueMemberBOOL); ok {
		return v.Value
	}
	f.absent(av, name, "a boolean")
	return false
}

// bytes returns a Binary as it is: the item's map is the SDK's own, made
// for this read, so the caller gets bytes no one else holds.
func (f fields) bytes(name string) []byte {
	av := f.m[name]
	if v, ok := av.(*types.AttributeValueMemberB); ok {
		if len(v.Value) == 0 {
			return nil
		}
		return v.Value
	}
	f.absent(av, name, "a binary")
	return nil
}

// time reads a time written by stamp (RFC 3339, any zone, fractional
// seconds optional); absent is the zero time.
func (f fields) time(name string) time.Time {
	av := f.m[name]
	if v, ok := av.(*types.AttributeValueMemberS); ok {
		t, err := time.Parse(time.RFC3339Nano, v.Value)
		if err != nil {
			f.fail(name, "an RFC 3339 time")
		}
		return t
	}
	f.absent(av, name, "a time")
	return time.Time{}
}

// strings reads a List of String; absent is nil.
func (f fields) strings(name string) []string {
	return listOf(f, name, "a list of strings", func(s *types.AttributeValueMemberS) string { return s.Value })
}

// nested returns the fields of a Map; absent is a map of no attributes.
func (f fields) nested(name string) fields {
	av := f.m[name]
	if v, ok := av.(*types.AttributeValueMemberM); ok {
		return fields{m: v.Value, d: f.d}
	}
	f.absent(av, name, "a map")
	return fields{d: f.d}
}

// listOfMaps reads a List of Maps, each element by decode; absent is nil.
func listOfMaps[T any](f fields, name string, decode func(fields) T) []T {
	return listOf(f, name, "a list of maps", func(m *types.AttributeValueMemberM) T { return decode(fields{m: m.Value, d: f.d}) })
}

// listOf reads a List whose elements are all of type E, each turned into
// a T by conv; absent (or empty) is nil, an element of another type the
// item's error (what says what the list should hold).
func listOf[E types.AttributeValue, T any](f fields, name, what string, conv func(E) T) []T {
	av := f.m[name]
	l, ok := av.(*types.AttributeValueMemberL)
	if !ok {
		f.absent(av, name, "a list")
		return nil
	}
	if len(l.Value) == 0 {
		return nil
	}
	out := make([]T, len(l.Value))
	for i, e := range l.Value {
		v, ok := e.(E)
		if !ok {
			f.fail(name, what)
			return nil
		}
		out[i] = conv(v)
	}
	return out
}

// decoded returns v, or the item's error and no v when an attribute did not
// decode.
func decoded[T any](v *T, d *decoding, kind string) (*T, error) {
	if err := d.done(kind); err != nil {
		return nil, err
	}
	return v, nil
}
