package api

import (
	"bytes"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/sshdeck/sshdeck/shared/check"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// FuzzDecodeHostInput: the host body decoder, JSON and multipart, then the
// host's checks. Whatever the body, it answers a host or an error of the
// client's codes (never Internal, which would be a 500), and a host that
// passes its checks holds no invalid UTF-8, no control character outside a
// key, an ip that is an address, and jump hosts of positive ids, each
// once. mode chooses the body: 0 JSON, 1 a
// multipart body with a as the data part and b as the key file, 2 b as a
// multipart body of boundary "B" as it is. Seeds:
// testdata/fuzz/FuzzDecodeHostInput.
func FuzzDecodeHostInput(f *testing.F) {
	f.Fuzz(func(t *testing.T, mode uint8, a string, b []byte) {
		var body []byte
		var contentType string
		switch mode % 3 {
		case 0:
			body, contentType = []byte(a), "application/json"
		case 1:
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			mw.WriteField("data", a)
			if len(b) > 0 {
				fw, _ := mw.CreateFormFile("key", "id_ed25519")
				fw.Write(b)
			}
			mw.Close()
			body, contentType = buf.Bytes(), mw.FormDataContentType()
		case 2:
			body, contentType = b, "multipart/form-data; boundary=B"
		}
		r := httptest.NewRequest("POST", "/ssh/db/host", bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		in, err := decodeHostInput(httptest.NewRecorder(), r)
		if err == nil {
			err = in.Validate()
		}
		if err != nil {
			switch sshdeck.ErrorCode(err) {
			case sshdeck.Invalid, sshdeck.TooLarge, sshdeck.UnsupportedMediaType:
			default:
				t.Fatalf("error %v (code %s), want the client's", err, sshdeck.ErrorCode(err))
			}
			return
		}
		if err := check.Address("ip", in.IP); err != nil {
			t.Fatalf("ip %q passed: %v", in.IP, err)
		}
		seen := map[int64]bool{}
		for _, hop := range in.JumpHosts {
			if hop.HostID < 1 || seen[hop.HostID] {
				t.Fatalf("jumpHosts %v passed", in.JumpHosts)
			}
			seen[hop.HostID] = true
		}
		texts := append([]string{in.Name, in.IP, in.Username, in.Folder, in.DefaultPath}, in.Tags...)
		for _, tc := range in.TunnelConnections {
			texts = append(texts, tc.EndpointHost)
		}
		for _, p := range []*string{in.Password, in.KeyPassword, in.AuthType, in.KeyType} {
			if p != nil {
				texts = append(texts, *p)
			}
		}
		for _, s := range texts {
			if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
				t.Fatalf("a field holds %q", s)
			}
		}
		if in.Key != nil && (!utf8.ValidString(*in.Key) || strings.IndexFunc(*in.Key, func(r rune) bool {
			return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t'
		}) >= 0) {
			t.Fatalf("key holds %q", *in.Key)
		}
	})
}
