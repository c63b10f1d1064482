// Package openapitest checks HTTP responses against the project's OpenAPI
// document (openapi.yaml), so that every handler test also proves the
// document right: an undocumented status, a missing required header or a
// body that does not match its schema fails the test.
package openapitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// eventStream is the media type of Server-Sent Events. kin-openapi has no
// decoder for it: its body is validated as a string against the schema,
// then as events by checkEvents.
const eventStream = "text/event-stream"

// ndjson is the media type of newline-delimited JSON (the audit export):
// validated as a string, then line by line by checkLines.
const ndjson = "application/x-ndjson"

func init() {
	openapi3filter.RegisterBodyDecoder(eventStream, openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder(ndjson, openapi3filter.PlainBodyDecoder)
}

// Validator checks requests' responses against openapi.yaml.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	// unrouted is what a request outside the document may get: 404 when
	// no path matches, 405 when the path matches but the method does not.
	unrouted *openapi3.Operation
}

// Load loads the document at path, validates it (doc.Validate) and returns
// its Validator. It fails t at once when either step fails.
func Load(t testing.TB, path string) *Validator {
	t.Helper()
	ctx := context.Background()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		t.Fatalf("openapitest: load %s: %v", path, err)
		return nil
	}
	if err := doc.Validate(ctx); err != nil {
		t.Fatalf("openapitest: %s is not a valid OpenAPI document: %v", path, err)
		return nil
	}
	errSchema := doc.Components.Schemas["Error"]
	if errSchema == nil {
		t.Fatalf("openapitest: %s has no components.schemas.Error", path)
		return nil
	}
	// Route on paths alone: tests send requests to httptest hosts, not to the
	// document's servers, nor to a path's own servers (the tunnel service's
	// paths have theirs). The copy shares every operation with doc.
	routed := *doc
	routed.Servers = nil
	routed.Paths = openapi3.NewPaths()
	for p, item := range doc.Paths.Map() {
		unserved := *item
		unserved.Servers = nil
		routed.Paths.Set(p, &unserved)
	}
	router, err := gorillamux.NewRouter(&routed)
	if err != nil {
		t.Fatalf("openapitest: route %s: %v", path, err)
		return nil
	}
	return &Validator{doc: doc, router: router, unrouted: unroutedOperation(errSchema)}
}

// unroutedOperation describes the answers to a request the document has no
// operation for: an Error body with X-Request-Id, and Allow on a 405.
func unroutedOperation(errSchema *openapi3.SchemaRef) *openapi3.Operation {
	requestID := &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
		Required: true,
		Schema:   openapi3.NewStringSchema().WithMinLength(1).NewRef(),
	}}}
	allow := &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
		Required: true,
		Schema:   openapi3.NewArraySchema().WithItems(openapi3.NewStringSchema()).WithMinItems(1).NewRef(),
	}}}
	response := func(description string, headers openapi3.Headers) *openapi3.ResponseRef {
		r := openapi3.NewResponse().WithDescription(description).WithJSONSchemaRef(errSchema)
		r.Headers = headers
		return &openapi3.ResponseRef{Value: r}
	}
	op := openapi3.NewOperation()
	op.Responses = openapi3.NewResponses(
		openapi3.WithStatus(http.StatusNotFound, response("no such path",
			openapi3.Headers{"X-Request-Id": requestID})),
		openapi3.WithStatus(http.StatusMethodNotAllowed, response("no such method on the path",
			openapi3.Headers{"X-Request-Id": requestID, "Allow": allow})),
	)
	return op
}

// Check fails t when resp (status, headers, body) is not allowed for req by
// the document: undocumented path/method/status, missing required header,
// body not matching the schema. Only the response is validated: req may be
// deliberately malformed (a bad id, a bad body); its body is not read.
//
// A request whose path is not in the document must get 404, and one whose
// path is but whose method is not must get 405 with Allow, both with an
// Error body. HEAD is checked as GET without a body, as net/http serves it.
func (v *Validator) Check(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := v.check(req, status, header, body); err != nil {
		t.Errorf("openapitest: %s %s answered %d: %v\nbody: %s", req.Method, req.URL.Path, status, err, body)
	}
}

func (v *Validator) check(req *http.Request, status int, header http.Header, body []byte) error {
	ctx := context.Background()
	// The router needs the path and method only; never touch req's body.
	r := &http.Request{Method: req.Method, URL: &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath}, Header: http.Header{}}
	options := &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	}
	// Say where and why, without dumping the schema and the value.
	options.WithCustomSchemaErrorFunc(schemaError)
	if r.Method == http.MethodHead {
		r.Method = http.MethodGet
		options.ExcludeResponseBody = true
	}
	route, params, err := v.router.FindRoute(r)
	switch {
	case errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed):
		want := http.StatusNotFound
		if errors.Is(err, routers.ErrMethodNotAllowed) {
			want = http.StatusMethodNotAllowed
		}
		if status != want {
			return errors.New("the document has no operation " + req.Method + " " + req.URL.Path +
				": want status " + strconv.Itoa(want) + " with an Error body")
		}
		route = &routers.Route{Spec: v.doc, Path: req.URL.Path, Method: r.Method, Operation: v.unrouted}
	case err != nil:
		return err
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: params,
			Route:      route,
			Options:    options,
		},
		Status:  status,
		Header:  header,
		Options: options,
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, input); err != nil {
		return err
	}
	// kin-openapi decodes the first JSON value of a body and ignores what
	// follows it: a JSON body must be one JSON value and nothing else.
	if !options.ExcludeResponseBody && isJSON(header.Get("Content-Type")) && !json.Valid(body) {
		return errors.New("response body is not one valid JSON value")
	}
	if !options.ExcludeResponseBody && isEventStream(header.Get("Content-Type")) {
		return v.checkEvents(route.Operation, status, header.Get("Content-Type"), body)
	}
	if !options.ExcludeResponseBody && mediaType(header.Get("Content-Type")) == ndjson {
		return v.checkLines(route.Operation, status, header.Get("Content-Type"), body)
	}
	return nil
}

// checkLines checks an NDJSON body: every line is one JSON value valid
// against the schema its media type's x-sshdeck-lines names (required).
func (v *Validator) checkLines(op *openapi3.Operation, status int, contentType string, body []byte) error {
	var name string
	if resp := op.Responses.Status(status); resp != nil && resp.Value != nil {
		if mt := resp.Value.Content.Get(contentType); mt != nil {
			name, _ = mt.Extensions["x-sshdeck-lines"].(string)
		}
	}
	schema := v.doc.Components.Schemas[name]
	if schema == nil || schema.Value == nil {
		return fmt.Errorf("ndjson: the media type names no schema of components.schemas in x-sshdeck-lines (%q)", name)
	}
	n := 0
	for line := range strings.Lines(string(body)) {
		n++
		if !strings.HasSuffix(line, "\n") {
			return fmt.Errorf("ndjson: line %d does not end the body with a newline", n)
		}
		var value any
		if err := json.Unmarshal([]byte(line), &value); err != nil {
			return fmt.Errorf("ndjson: line %d is not one JSON value: %v", n, err)
		}
		if err := schema.Value.VisitJSON(value, v.schemaOptions()...); err != nil {
			return fmt.Errorf("ndjson: line %d doesn't match schema %q: %v", n, name, err)
		}
	}
	return nil
}

// schemaOptions are the options of validating a response's value against
// a schema.
func (v *Validator) schemaOptions() []openapi3.SchemaValidationOption {
	opts := []openapi3.SchemaValidationOption{openapi3.VisitAsResponse(), openapi3.MultiErrors(),
		openapi3.SetSchemaErrorMessageCustomizer(schemaError)}
	if v.doc.IsOpenAPI31OrLater() {
		opts = append(opts, openapi3.EnableJSONSchema2020())
	}
	return opts
}

// checkEvents checks a text/event-stream body: every line is a field
// (event, data, id, retry) or a comment, and every complete event (ended by
// an empty line; a stream read in part may end inside one) whose type the
// media type's x-sshdeck-events maps to a schema name has, as its data, a
// JSON value valid against components.schemas[name]. With that map, an
// event type it does not name is an error.
func (v *Validator) checkEvents(op *openapi3.Operation, status int, contentType string, body []byte) error {
	var schemas map[string]any
	if resp := op.Responses.Status(status); resp != nil && resp.Value != nil {
		if mt := resp.Value.Content.Get(contentType); mt != nil {
			schemas, _ = mt.Extensions["x-sshdeck-events"].(map[string]any)
		}
	}
	opts := v.schemaOptions()
	event, data, n := "", []string(nil), 0
	for line := range strings.Lines(string(body)) {
		if !strings.HasSuffix(line, "\n") {
			break // the stream was cut inside an event
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "": // a comment, or the empty line that ends an event
			if line != "" || data == nil {
				continue
			}
			n++
			if event == "" {
				event = "message"
			}
			if err := v.checkEvent(schemas, n, event, strings.Join(data, "\n"), opts); err != nil {
				return err
			}
			event, data = "", nil
		case "event":
			event = value
		case "data":
			data = append(data, value)
		case "id", "retry":
		default:
			return fmt.Errorf("event stream: line %q is not a field (event, data, id, retry) or a comment", line)
		}
	}
	return nil
}

func (v *Validator) checkEvent(schemas map[string]any, n int, event, data string, opts []openapi3.SchemaValidationOption) error {
	if schemas == nil {
		return nil
	}
	name, _ := schemas[event].(string)
	if name == "" {
		return fmt.Errorf("event stream: event %d is of type %q, which the document does not list in x-sshdeck-events", n, event)
	}
	schema := v.doc.Components.Schemas[name]
	if schema == nil || schema.Value == nil {
		return fmt.Errorf("event stream: x-sshdeck-events names schema %q, which components.schemas does not have", name)
	}
	var value any
	if err := json.Unmarshal([]byte(data), &value); err != nil {
		return fmt.Errorf("event stream: event %d (%s): data is not one JSON value: %v", n, event, err)
	}
	if err := schema.Value.VisitJSON(value, opts...); err != nil {
		return fmt.Errorf("event stream: event %d (%s): data doesn't match schema %q: %v", n, event, name, err)
	}
	return nil
}

func schemaError(err *openapi3.SchemaError) string {
	reason := err.Reason
	if reason == "" {
		reason = "does not match schema keyword " + strconv.Quote(err.SchemaField)
	}
	return "at /" + strings.Join(err.JSONPointer(), "/") + ": " + reason
}

func isEventStream(contentType string) bool { return mediaType(contentType) == eventStream }

func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}

func isJSON(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mediaType == "application/json" || strings.HasSuffix(mediaType, "+json"))
}

// Operations returns "METHOD PATH" → operationId for every operation in the
// document, e.g. "GET /ssh/db/host/{id}" → "get-host".
func (v *Validator) Operations() map[string]string {
	ops := map[string]string{}
	for path, item := range v.doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops[method+" "+path] = op.OperationID
		}
	}
	return ops
}

// Doc returns the loaded document, for tests that look at more than the
// operations (extensions, enums). Do not change it.
func (v *Validator) Doc() *openapi3.T { return v.doc }
