package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"

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
// was wrong with it; unknown fields are ignored.
func DecodeJSON(body io.Reader, what string, v any) error {
	dec := json.NewDecoder(body)
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
