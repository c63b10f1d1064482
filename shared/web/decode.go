package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"unicode/utf8"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// MaxJSONBody is the largest JSON body (or multipart data part) accepted.
const MaxJSONBody = 1 << 20

// DecodeBody reads a JSON body (application/json only) into v.
func DecodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mediaType != "application/json" {
		return sshdeck.Errorf(sshdeck.UnsupportedMediaType, "Content-Type must be application/json")
	}
	return DecodeJSON(http.MaxBytesReader(w, r.Body, MaxJSONBody), "body", v)
}

// DecodeJSON decodes one JSON object into v; what names it in errors ("body",
// a multipart part's name). Errors name the field and what
// was wrong with it; unknown fields are ignored. A body that is not valid
// UTF-8, or whose strings escape half of a UTF-16 surrogate pair (\ud800
// alone), is Invalid: encoding/json would replace either with U+FFFD, and
// the service would store what the client did not send.
func DecodeJSON(body io.Reader, what string, v any) error {
	data, err := io.ReadAll(body)
	if err != nil {
		return BodyError(err, what+" could not be read")
	}
	if i := invalidUTF8(data); i >= 0 {
		return sshdeck.Errorf(sshdeck.Invalid, "%s is not valid UTF-8 (at byte %d)", what, i)
	}
	if i := loneSurrogate(data); i >= 0 {
		return sshdeck.Errorf(sshdeck.Invalid, "%s escapes half of a UTF-16 surrogate pair (at byte %d), which is no character", what, i)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return jsonError(err, what)
	}
	if err := dec.Decode(&json.RawMessage{}); err != io.EOF {
		if err != nil && !isSyntaxError(err) {
			return BodyError(err, what+" is not valid JSON")
		}
		return sshdeck.Errorf(sshdeck.Invalid, "%s has data after its JSON object", what)
	}
	return nil
}

func jsonError(err error, what string) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return sshdeck.Errorf(sshdeck.Invalid, "%s is not valid JSON (at byte %d)", what, syntax.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return sshdeck.Errorf(sshdeck.Invalid, "%s must be a JSON object", what)
	case errors.As(err, &typ):
		return sshdeck.Errorf(sshdeck.Invalid, "%s: expected %s, got %s", typ.Field, jsonType(typ.Type), typ.Value)
	case err == io.EOF:
		return sshdeck.Errorf(sshdeck.Invalid, "%s is empty; expected a JSON object", what)
	case err == io.ErrUnexpectedEOF:
		return sshdeck.Errorf(sshdeck.Invalid, "%s is truncated JSON", what)
	}
	return BodyError(err, what+" is not valid JSON")
}

// BodyError reports a read error: too large, or the client's malformed body.
func BodyError(err error, msg string) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return sshdeck.Errorf(sshdeck.TooLarge, "body is over %d KiB", tooLarge.Limit>>10)
	}
	return sshdeck.Errorf(sshdeck.Invalid, "%s", msg)
}

func isSyntaxError(err error) bool {
	var syntax *json.SyntaxError
	return errors.As(err, &syntax)
}

// jsonType names a Go type as the JSON type a client should send.
func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return fmt.Sprint(t)
}

// invalidUTF8 returns the offset of the first byte of data that is not
// valid UTF-8, or -1.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// loneSurrogate returns the offset of the first \uXXXX escape inside a
// JSON string of data that is half of a surrogate pair without its other
// half, or -1. data need not be valid JSON: the decoder reports that.
func loneSurrogate(data []byte) int {
	if !bytes.Contains(data, []byte(`\u`)) {
		return -1
	}
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(data):
			if data[i+1] != 'u' {
				i++ // a one-character escape
				continue
			}
			r, ok := hex4(data, i+2)
			if !ok {
				i++
				continue // the decoder reports it
			}
			switch {
			case 0xdc00 <= r && r <= 0xdfff:
				return i // a low half with no high half before it
			case 0xd800 <= r && r <= 0xdbff:
				low, ok := hex4(data, i+8)
				if i+7 >= len(data) || data[i+6] != '\\' || data[i+7] != 'u' || !ok || low < 0xdc00 || low > 0xdfff {
					return i
				}
				i += 11 // both halves
			default:
				i += 5
			}
		}
	}
	return -1
}

// hex4 reads the four hexadecimal digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
