package embedded

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// The primitives of the binary records (hostRecord):
//
//	int     a signed varint (zigzag, as binary.AppendVarint)
//	count   an unsigned varint: a length, or the number of a list's items
//	string  its count of bytes, then the bytes; bytes likewise
//	bool    one byte, 0 or 1
//	time    the Unix seconds (int), then the nanoseconds (count, below
//	        1e9); read back in UTC. One int64 of Unix nanoseconds would not
//	        hold the zero time, which several fields use for "unset".
//
// No field has a tag or a name: a record's format byte says which fields
// follow, in which order.

func appendInt(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func appendCount(b []byte, n int) []byte { return binary.AppendUvarint(b, uint64(n)) }

func appendString(b []byte, s string) []byte { return append(appendCount(b, len(s)), s...) }

func appendBytes(b []byte, p []byte) []byte { return append(appendCount(b, len(p)), p...) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendTime(b []byte, t time.Time) []byte {
	return appendCount(appendInt(b, t.Unix()), t.Nanosecond())
}

// decoder reads the primitives of one record. The record is in bbolt's
// memory map, valid only during the transaction: the decoder copies it once
// as text and cuts every string out of that copy, so that nothing decoded
// refers to the map and a record costs a few allocations rather than one
// per string. Byte fields are copied one by one: callers may change them.
//
// A decoder never panics on a corrupt or truncated record: the first
// problem is kept in err, every read after it returns a zero value, and
// end reports it. Errors give positions and sizes, never what is stored.
type decoder struct {
	data []byte // the record, in the memory map: read, never kept
	text string // data copied: the strings are cut from it
	off  int
	err  error
}

func newDecoder(data []byte) decoder {
	return decoder{data: data, text: string(data)}
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("at byte %d: %s", d.off, fmt.Sprintf(format, args...))
	}
}

// end reports the first problem, or bytes left over after the last field.
func (d *decoder) end() error {
	if d.err == nil && d.off != len(d.data) {
		d.fail("%d bytes after the last field", len(d.data)-d.off)
	}
	return d.err
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.data) {
		d.fail("the record ends early")
		return 0
	}
	c := d.data[d.off]
	d.off++
	return c
}

func (d *decoder) int64() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.data[d.off:])
	if n <= 0 {
		d.fail("malformed or truncated varint")
		return 0
	}
	d.off += n
	return v
}

// int reads an int of Go's int size: 64 bits on every platform sshdeck
// ships on, but a 32-bit build must not wrap a large value silently.
func (d *decoder) int() int {
	v := d.int64()
	if int64(int(v)) != v {
		d.fail("integer out of range")
		return 0
	}
	return int(v)
}

func (d *decoder) uint64() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.data[d.off:])
	if n <= 0 {
		d.fail("malformed or truncated varint")
		return 0
	}
	d.off += n
	return v
}

// count reads a count of items that take at least min bytes each. A count
// the rest of the record cannot hold is corrupt: checking it here keeps a
// bad count from allocating gigabytes.
func (d *decoder) count(min int) int {
	n := d.uint64()
	if rest := uint64(len(d.data) - d.off); n > rest/uint64(min) {
		d.fail("a count past the end of the record (%d bytes left)", rest)
		return 0
	}
	return int(n)
}

func (d *decoder) string() string {
	n := d.count(1)
	s := d.text[d.off : d.off+n]
	d.off += n
	return s
}

// bytes returns a copy, nil for none: a nil credential is an empty one.
func (d *decoder) bytes() []byte {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	p := bytes.Clone(d.data[d.off : d.off+n])
	d.off += n
	return p
}

func (d *decoder) bool() bool {
	switch c := d.byte(); c {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("a bool that is neither 0 nor 1")
		return false
	}
}

func (d *decoder) time() time.Time {
	sec := d.int64()
	nsec := d.uint64()
	if nsec >= uint64(time.Second) {
		d.fail("a time's nanoseconds are a second or more")
		return time.Time{}
	}
	if d.err != nil {
		return time.Time{}
	}
	// The zero time comes back as time.Time{} itself: Unix(-62135596800, 0)
	// in UTC is it.
	return time.Unix(sec, int64(nsec)).UTC()
}
