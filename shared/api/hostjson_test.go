package api

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// encodingJSON is what web.WriteJSON writes for v, without its newline.
func encodingJSON(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// awkward are strings encoding/json escapes, or must not.
var awkward = []string{
	"", "plain", `quote " and \ backslash`, "<html> & 'apostrophes'", "\x00\x01\x1f\x7f",
	"\b\f\n\r\t", "é ü 日本 🙂", "\u2028\u2029", "bad \xff\xfe utf-8 \xc3", "\xed\xa0\x80 surrogate",
	"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
}

func randomRecord(r *rand.Rand) *hosts.Record {
	str := func() string { return awkward[r.IntN(len(awkward))] }
	rec := &hosts.Record{
		ID: r.Int64(),
		HostConfig: sshdeck.HostConfig{
			Name: str(), IP: str(), Port: r.IntN(65536), Username: str(), Folder: str(),
			Pin: r.IntN(2) == 0, AuthType: sshdeck.AuthType(str()), KeyType: str(),
			EnableTerminal: r.IntN(2) == 0, EnableTunnel: r.IntN(2) == 0, EnableFileManager: r.IntN(2) == 0,
			DefaultPath: str(),
		},
		Credentials: sshdeck.Credentials{Password: str(), Key: str(), KeyPassword: str()},
		CreatedAt:   time.Unix(r.Int64N(1<<35), r.Int64N(1e9)).UTC(),
		UpdatedAt:   time.Unix(r.Int64N(1<<35), r.Int64N(1e9)/1e6*1e6).UTC(),
	}
	if n := r.IntN(4); n > 0 {
		rec.Tags = make([]string, n-1) // nil, [] or some
		for i := range rec.Tags {
			rec.Tags[i] = str()
		}
	}
	if n := r.IntN(4); n > 0 {
		rec.TunnelConnections = make([]sshdeck.TunnelConnection, n-1)
		for i := range rec.TunnelConnections {
			rec.TunnelConnections[i] = sshdeck.TunnelConnection{
				SourcePort: r.IntN(65536), EndpointPort: r.IntN(65536), EndpointHost: str(),
				MaxRetries: r.IntN(1001), RetryInterval: r.IntN(3601), AutoStart: r.IntN(2) == 0,
			}
		}
	}
	if n := r.IntN(4); n > 0 {
		rec.JumpHosts = make([]sshdeck.JumpHost, n-1)
		for i := range rec.JumpHosts {
			rec.JumpHosts[i] = sshdeck.JumpHost{HostID: r.Int64() - r.Int64()}
		}
	}
	return rec
}

// TestAppendHostIsJSON: appendHost writes encoding/json's bytes for every
// field of a record, escapes, nil and empty lists and times included.
func TestAppendHostIsJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		rec := randomRecord(r)
		if got, want := appendHost(nil, rec), encodingJSON(t, rec); !bytes.Equal(got, want) {
			t.Fatalf("appendHost wrote\n%s\nencoding/json\n%s", got, want)
		}
	}
}

// FuzzAppendHost: any string in any field is written as encoding/json
// writes it.
func FuzzAppendHost(f *testing.F) {
	for i, s := range awkward {
		f.Add(s, s, int64(i))
	}
	f.Add("", "", int64(-1<<63))
	f.Fuzz(func(t *testing.T, a, b string, hop int64) {
		rec := &hosts.Record{ID: 1, HostConfig: sshdeck.HostConfig{Name: a, Tags: []string{b, a}, JumpHosts: []sshdeck.JumpHost{{HostID: hop}, {HostID: 1}}}, Credentials: sshdeck.Credentials{Key: b}}
		if got, want := appendHost(nil, rec), encodingJSON(t, rec); !bytes.Equal(got, want) {
			t.Fatalf("appendHost wrote\n%q\nencoding/json\n%q", got, want)
		}
	})
}

// BenchmarkAppendHost: a host as the benchmarks store them (a password,
// two tags, a tunnel connection, no jump hosts), by appendHost and by
// encoding/json.
func BenchmarkAppendHost(b *testing.B) {
	rec := &hosts.Record{
		ID: 123,
		HostConfig: sshdeck.HostConfig{
			Name: "web-123", IP: "10.0.1.123", Port: 22, Username: "deploy", Folder: "prod/eu",
			Tags: []string{"prod", "eu"}, AuthType: sshdeck.AuthPassword, KeyType: "auto",
			EnableTerminal: true, EnableTunnel: true, EnableFileManager: true, DefaultPath: "/",
			TunnelConnections: []sshdeck.TunnelConnection{{SourcePort: 8080, EndpointPort: 80, EndpointHost: "db", MaxRetries: 3, RetryInterval: 5}},
			JumpHosts:         []sshdeck.JumpHost{},
		},
		Credentials: sshdeck.Credentials{Password: "correct horse battery staple"},
		CreatedAt:   time.Date(2026, 11, 24, 12, 0, 0, 123e6, time.UTC),
		UpdatedAt:   time.Date(2026, 11, 24, 12, 0, 1, 0, time.UTC),
	}
	b.Run("appendHost", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendHost(buf[:0], rec)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			enc.Encode(rec)
		}
	})
}
