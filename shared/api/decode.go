package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"

	"github.com/sshdeck/sshdeck/shared/hosts"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// MaxJSONBody is the largest JSON body (or multipart data part) accepted.
const MaxJSONBody = 1 << 20

// maxMultipartBody bounds a whole multipart body: the data part, the key
// file and room for part headers and boundaries.
const maxMultipartBody = MaxJSONBody + hosts.MaxKeySize + 64<<10

// decodeHostInput reads a host from a JSON body, or from a multipart body
// whose "data" part is the JSON and whose optional "key" file part is the
// private key (winning over data.key).
func decodeHostInput(w http.ResponseWriter, r *http.Request) (*hosts.Input, error) {
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		mediaType = ""
	}
	var in hosts.Input
	switch mediaType {
	case "application/json":
		return &in, decodeJSON(http.MaxBytesReader(w, r.Body, MaxJSONBody), "body", &in)
	case "multipart/form-data":
		if params["boundary"] == "" {
			return nil, sshdeck.Errorf(sshdeck.Invalid, "multipart body has no boundary")
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxMultipartBody)
		return &in, decodeMultipartHost(r, &in)
	}
	return nil, sshdeck.Errorf(sshdeck.UnsupportedMediaType, "Content-Type must be application/json or multipart/form-data")
}

// DecodeBody reads a JSON body (application/json only) into v.
func DecodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mediaType != "application/json" {
		return sshdeck.Errorf(sshdeck.UnsupportedMediaType, "Content-Type must be application/json")
	}
	return decodeJSON(http.MaxBytesReader(w, r.Body, MaxJSONBody), "body", v)
}

func decodeMultipartHost(r *http.Request, in *hosts.Input) error {
	mr, err := r.MultipartReader()
	if err != nil {
		return sshdeck.Errorf(sshdeck.Invalid, "malformed multipart body")
	}
	var key *string
	seen := map[string]bool{}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return bodyError(err, "malformed multipart body")
		}
		name := part.FormName()
		if (name == "data" || name == "key") && seen[name] {
			return sshdeck.Errorf(sshdeck.Invalid, "multipart body has more than one %s part", name)
		}
		seen[name] = true
		switch name {
		case "data":
			data, err := readPart(part, "data", MaxJSONBody)
			if err != nil {
				return err
			}
			if err := decodeJSON(bytes.NewReader(data), "data", in); err != nil {
				return err
			}
		case "key":
			data, err := readPart(part, "key", hosts.MaxKeySize)
			if err != nil {
				return err
			}
			// A browser sends an empty part for a file input left empty:
			// that is no key, not a cleared one.
			if len(data) > 0 {
				k := string(data)
				key = &k
			}
		}
		part.Close()
	}
	if !seen["data"] {
		return sshdeck.Errorf(sshdeck.Invalid, "multipart body has no data part (the host as a JSON string)")
	}
	if key != nil {
		in.Key = key
	}
	return nil
}

func readPart(part io.Reader, name string, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(part, max+1))
	if err != nil {
		return nil, bodyError(err, "malformed multipart body")
	}
	if int64(len(data)) > max {
		return nil, sshdeck.Errorf(sshdeck.TooLarge, "%s part is over %d KiB", name, max>>10)
	}
	return data, nil
}

// decodeJSON decodes one JSON object into v. Errors name the field and what
// was wrong with it; unknown fields are ignored.
func decodeJSON(body io.Reader, what string, v any) error {
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		return jsonError(err, what)
	}
	if err := dec.Decode(&json.RawMessage{}); err != io.EOF {
		if err != nil && !isSyntaxError(err) {
			return bodyError(err, what+" is not valid JSON")
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
	return bodyError(err, what+" is not valid JSON")
}

// bodyError reports a read error: too large, or the client's malformed body.
func bodyError(err error, msg string) error {
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
