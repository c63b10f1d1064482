package sshconfig

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// FuzzParse: Parse never panics and fails only with Invalid (or TooLarge);
// its reports are in line order, within the file; and whatever it
// accepts, Write writes and Parse reads back equal, with nothing skipped.
// Seeds (the realistic file, every form of every keyword, broken lines):
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, in string) {
		c, err := Parse(strings.NewReader(in))
		if err != nil {
			switch sshdeck.ErrorCode(err) {
			case sshdeck.TooLarge:
			case sshdeck.Invalid:
				if !strings.HasPrefix(sshdeck.ErrorMessage(err), "line ") {
					t.Fatalf("Parse: %v names no line", err)
				}
			default:
				t.Fatalf("Parse: %v, want Invalid", err)
			}
			return
		}
		lines := strings.Count(in, "\n") + 1
		last := 0
		for _, s := range c.Skipped {
			if s.Line < last || s.Line < 1 || s.Line > lines || s.Reason == "" {
				t.Fatalf("report %+v out of order or of the file (%d lines)", s, lines)
			}
			last = s.Line
		}
		var b bytes.Buffer
		if err := Write(&b, c.Hosts); err != nil {
			t.Fatalf("Parse accepted hosts Write refuses: %v\n%+v", err, c.Hosts)
		}
		back, err := Parse(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("Parse of what Write wrote: %v\n%s", err, b.String())
		}
		if !reflect.DeepEqual(withoutLines(back.Hosts), withoutLines(c.Hosts)) || back.Skipped != nil {
			t.Fatalf("read back %+v %+v\nwant %+v\nwritten:\n%s", back.Hosts, back.Skipped, c.Hosts, b.String())
		}
	})
}

// FuzzRoundTrip: hosts made from the fuzzer's bytes, with any character
// in any field, are either refused by Write (Invalid, nothing written) or
// read back by Parse equal, with nothing skipped, and written again to the
// same bytes. Seeds: testdata/fuzz/FuzzRoundTrip.
func FuzzRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		pick := func(n int) int {
			if len(data) == 0 {
				return 0
			}
			v := int(data[0]) % n
			data = data[1:]
			return v
		}
		hosts := gen{pick: pick, nasty: true}.hosts(1 + pick(3))
		var b bytes.Buffer
		if err := Write(&b, hosts); err != nil {
			if sshdeck.ErrorCode(err) != sshdeck.Invalid || b.Len() != 0 {
				t.Fatalf("Write: %v after %d bytes, want Invalid and nothing written", err, b.Len())
			}
			return
		}
		c, err := Parse(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("Parse of what Write wrote: %v\n%s", err, b.String())
		}
		if !reflect.DeepEqual(withoutLines(c.Hosts), withoutLines(hosts)) || c.Skipped != nil {
			t.Fatalf("read back %+v %+v\nwant %+v\nwritten:\n%s", c.Hosts, c.Skipped, hosts, b.String())
		}
		var again bytes.Buffer
		if err := Write(&again, c.Hosts); err != nil || !bytes.Equal(again.Bytes(), b.Bytes()) {
			t.Fatalf("second Write differs (%v)", err)
		}
	})
}
