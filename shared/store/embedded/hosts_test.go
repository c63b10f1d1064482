package embedded

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// TestUpdateHostEmpties: an update empties a host's lists and every
// credential at once, which the conformance cases leave out (the DynamoDB
// store's engine in tests cannot).
func TestUpdateHostEmpties(t *testing.T) {
	ctx := t.Context()
	s, _ := openTemp(t)
	defer s.Close()
	h := &sshdeck.Host{Owner: "alice", ID: 1, Version: 1, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	h.Tags = []string{"a"}
	h.TunnelConnections = []sshdeck.TunnelConnection{{SourcePort: 1, EndpointPort: 2, EndpointHost: "h"}}
	h.JumpHosts = []sshdeck.JumpHost{{HostID: 2}}
	h.Sealed = sshdeck.SealedCredentials{Password: []byte{1}, Key: []byte{2}, KeyPassword: []byte{3}}
	if err := s.CreateHost(ctx, h, 1000); err != nil {
		t.Fatal(err)
	}
	emptied := &sshdeck.Host{Owner: "alice", ID: 1, Version: 2, CreatedAt: h.CreatedAt, UpdatedAt: time.Now()}
	if err := s.UpdateHost(ctx, emptied); err != nil {
		t.Fatal(err)
	}
	h, err := s.Host(ctx, "alice", 1)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != 2 || len(h.Tags) != 0 || len(h.TunnelConnections) != 0 || len(h.JumpHosts) != 0 || h.Sealed.Password != nil || h.Sealed.Key != nil || h.Sealed.KeyPassword != nil {
		t.Fatalf("host after an update emptying it: %+v", h)
	}
}

// TestDecodeHostCorrupt: every truncation of a record, a byte too many, an
// unknown format and counts past the end are errors, never panics or huge
// allocations.
func TestDecodeHostCorrupt(t *testing.T) {
	good := hostRecordOf(goldenHost()).appendTo(nil)
	var r hostRecord
	if err := r.decode(good); err != nil {
		t.Fatalf("the golden host: %v", err)
	}
	for n := range len(good) {
		if err := new(hostRecord).decode(good[:n]); err == nil {
			t.Errorf("the first %d of %d bytes decode", n, len(good))
		}
	}
	for name, data := range map[string][]byte{
		"a byte after the end": append(slices.Clone(good), 0),
		"format 4":             append([]byte{4}, good[1:]...),
		// Format 1 has no jump hosts: format 3's bytes read as format 1
		// leave the list's bytes over; format 2 has no identity file.
		"format 3 as format 1": append([]byte{hostFormat1}, good[1:]...),
		"format 3 as format 2": append([]byte{hostFormat2}, good[1:]...),
		"JSON":                 []byte(`{"owner":"alice","id":1}`),
		"a huge owner":         {hostFormat, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"a huge tag count":     hostRecordOf(&sshdeck.Host{}).appendTo(nil)[:10],
	} {
		if err := new(hostRecord).decode(data); err == nil {
			t.Errorf("%s: decodes", name)
		}
	}
}

// hugeTagCount is a host without fields but a count of 2^32 tags.
func hugeTagCount() []byte {
	empty := hostRecordOf(&sshdeck.Host{}).appendTo(nil)
	// The format byte, then 8 empty strings or zero ints, then the tags.
	if empty[9] != 0 {
		panic("the tags are not at byte 9")
	}
	return append(append(slices.Clone(empty[:9]), 0x80, 0x80, 0x80, 0x80, 0x10), empty[10:]...)
}

// FuzzDecodeHost: no input makes decode panic, and what decodes encodes
// to a record that decodes the same.
func FuzzDecodeHost(f *testing.F) {
	f.Add(hostRecordOf(goldenHost()).appendTo(nil))
	f.Add(hostRecordOf(benchHost("alice", 7)).appendTo(nil))
	f.Add(hostRecordOf(&sshdeck.Host{}).appendTo(nil))
	f.Add([]byte{hostFormat})
	for _, old := range []string{"host-format1.bin", "host-format2.bin"} {
		if data, err := os.ReadFile(filepath.Join("testdata", "golden", old)); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"owner":"alice","id":1,"version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r hostRecord
		if err := r.decode(data); err != nil {
			return
		}
		again := r.appendTo(nil)
		var r2 hostRecord
		if err := r2.decode(again); err != nil {
			t.Fatalf("a decoded record does not decode once encoded: %v", err)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("decode, encode, decode: %+v, then %+v", r, r2)
		}
	})
}
