package api

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sshdeck/sshdeck/shared/hosts"
)

// appendHost appends rec as JSON: the bytes encoding/json writes for it (with
// HTML left unescaped, as web.WriteJSON does), field for field, without
// reflection. It is kept only for speed, behind one seam (list-hosts, the
// one route that encodes many hosts): reflection was ~0.7 µs of the ~1.5 µs
// each host of a 1000-host list costs (BenchmarkAppendHost in
// hostjson_test.go: go test -run '^$' -bench AppendHost ./shared/api).
// TestAppendHostIsJSON and FuzzAppendHost hold it to encoding/json's bytes,
// so a field added to hosts.Record and not here fails them.
func appendHost(b []byte, rec *hosts.Record) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, rec.ID, 10)
	b = appendField(b, "name", rec.Name)
	b = appendField(b, "ip", rec.IP)
	b = append(b, `,"port":`...)
	b = strconv.AppendInt(b, int64(rec.Port), 10)
	b = appendField(b, "username", rec.Username)
	b = appendField(b, "folder", rec.Folder)
	b = append(b, `,"tags":`...)
	if rec.Tags == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, tag := range rec.Tags {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, tag)
		}
		b = append(b, ']')
	}
	b = appendBool(b, "pin", rec.Pin)
	b = appendField(b, "authType", string(rec.AuthType))
	b = appendField(b, "keyType", rec.KeyType)
	b = appendBool(b, "enableTerminal", rec.EnableTerminal)
	b = appendBool(b, "enableTunnel", rec.EnableTunnel)
	b = appendBool(b, "enableFileManager", rec.EnableFileManager)
	b = appendField(b, "defaultPath", rec.DefaultPath)
	b = append(b, `,"tunnelConnections":`...)
	if rec.TunnelConnections == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, tc := range rec.TunnelConnections {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"sourcePort":`...)
			b = strconv.AppendInt(b, int64(tc.SourcePort), 10)
			b = append(b, `,"endpointPort":`...)
			b = strconv.AppendInt(b, int64(tc.EndpointPort), 10)
			b = appendField(b, "endpointHost", tc.EndpointHost)
			b = append(b, `,"maxRetries":`...)
			b = strconv.AppendInt(b, int64(tc.MaxRetries), 10)
			b = append(b, `,"retryInterval":`...)
			b = strconv.AppendInt(b, int64(tc.RetryInterval), 10)
			b = appendBool(b, "autoStart", tc.AutoStart)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"jumpHosts":`...)
	if rec.JumpHosts == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, hop := range rec.JumpHosts {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"hostId":`...)
			b = strconv.AppendInt(b, hop.HostID, 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendField(b, "identityFile", rec.IdentityFile)
	b = appendField(b, "password", rec.Password)
	b = appendField(b, "key", rec.Key)
	b = appendField(b, "keyPassword", rec.KeyPassword)
	b = appendTime(b, "createdAt", rec.CreatedAt)
	b = appendTime(b, "updatedAt", rec.UpdatedAt)
	return append(b, '}')
}

// appendField appends ,"name":"value"; names are plain ASCII.
func appendField(b []byte, name, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

func appendBool(b []byte, name string, v bool) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendBool(b, v)
}

// appendTime appends the time as time.Time's MarshalJSON does (RFC 3339
// with nanoseconds, trailing zeros dropped). The service's times are UTC
// and within years 0-9999, where MarshalJSON does not fail.
func appendTime(b []byte, name string, t time.Time) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':', '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json does
// without HTML escaping: quote, backslash and control characters escaped
// (\b \f \n \r \t by name, the others as \u00XX), invalid UTF-8 replaced by
// \ufffd, and U+2028 and U+2029 escaped, since JavaScript reads them as
// line ends.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
