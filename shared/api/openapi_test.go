package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sshdeck/sshdeck/internal/openapitest"
	"github.com/sshdeck/sshdeck/shared/api"
	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/sshkey"
	"github.com/sshdeck/sshdeck/shared/web"
)

// openAPIDocument is the project's OpenAPI document, from this package.
const openAPIDocument = "../../openapi.yaml"

// tunnelService is the x-sshdeck-service value of the operations served at
// tunnel_url by the tunnel service, whose tests check them against its
// handler (tunnel-service/tunnelapi).
const tunnelService = "tunnel"

// TestOpenAPIMatchesRouteTable: the document and routes.All describe the same
// operations, named alike, with the same access and authentication. The
// tunnel service's operations are not base_url routes and are left out.
func TestOpenAPIMatchesRouteTable(t *testing.T) {
	v := openapitest.Load(t, openAPIDocument)
	ops := v.Operations()
	doc := v.Doc()
	tunnel := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			// The mark may be on the operation or on its path.
			if op.Extensions["x-sshdeck-service"] == tunnelService || item.Extensions["x-sshdeck-service"] == tunnelService {
				key := method + " " + path
				tunnel[key] = true
				delete(ops, key)
			}
		}
	}
	if len(tunnel) == 0 {
		t.Errorf("openapi.yaml has no operation marked x-sshdeck-service: %s", tunnelService)
	}
	for _, r := range routes.All {
		key := r.Method + " " + r.Path
		if tunnel[key] {
			t.Errorf("route %s (%s) is marked x-sshdeck-service: %s in openapi.yaml", r.Name, key, tunnelService)
			continue
		}
		id, ok := ops[key]
		if !ok {
			t.Errorf("route %s (%s) is not in openapi.yaml", r.Name, key)
			continue
		}
		delete(ops, key)
		if id != r.Name {
			t.Errorf("%s: operationId %q, want the route's name %q", key, id, r.Name)
		}
		op := doc.Paths.Find(r.Path).GetOperation(r.Method)
		if got := op.Extensions["x-sshdeck-access"]; got != r.Access.String() {
			t.Errorf("%s: x-sshdeck-access %v, want %q", key, got, r.Access)
		}
		if scope, _ := op.Extensions["x-sshdeck-scope"].(string); scope != string(r.Scope) {
			t.Errorf("%s: x-sshdeck-scope %q, want %q", key, scope, r.Scope)
		}
		// A route with a scope answers a token without it 403.
		if r.Scope != "" && op.Responses.Status(http.StatusForbidden) == nil {
			t.Errorf("%s: no 403 response, which a token without %q gets", key, r.Scope)
		}
		security := doc.Security
		if op.Security != nil {
			security = *op.Security
		}
		if public := len(security) == 0; public != r.Public {
			t.Errorf("%s: security %v does not fit public %t", key, security, r.Public)
		}
	}
	for key, id := range ops {
		t.Errorf("openapi.yaml has operation %s (%s) that is not in routes.All", key, id)
	}
}

// TestOpenAPIKeyTypes: the KeyType enum is what sshkey accepts.
func TestOpenAPIKeyTypes(t *testing.T) {
	schema := openapitest.Load(t, openAPIDocument).Doc().Components.Schemas["KeyType"]
	if schema == nil {
		t.Fatal("openapi.yaml has no KeyType schema")
	}
	var enum []string
	for _, v := range schema.Value.Enum {
		enum = append(enum, fmt.Sprint(v))
	}
	if want := sshkey.KeyTypes(); !slices.Equal(enum, want) {
		t.Errorf("KeyType enum is %q, want sshkey.KeyTypes() %q", enum, want)
	}
}

// TestOpenAPIScopes: the Scope enum is sshdeck.AllScopes, in order.
func TestOpenAPIScopes(t *testing.T) {
	schema := openapitest.Load(t, openAPIDocument).Doc().Components.Schemas["Scope"]
	if schema == nil {
		t.Fatal("openapi.yaml has no Scope schema")
	}
	var enum []string
	for _, v := range schema.Value.Enum {
		enum = append(enum, fmt.Sprint(v))
	}
	if want := strings.Fields(sshdeck.JoinScopes(sshdeck.AllScopes, " ")); !slices.Equal(enum, want) {
		t.Errorf("Scope enum is %q, want sshdeck.AllScopes %q", enum, want)
	}
}

// TestOpenAPIErrorCodes: every code of the Error schema has its own status
// (only internal maps to 500).
func TestOpenAPIErrorCodes(t *testing.T) {
	schema := openapitest.Load(t, openAPIDocument).Doc().Components.Schemas["Error"]
	code := schema.Value.Properties["code"]
	if code == nil || len(code.Value.Enum) == 0 {
		t.Fatal("Error.code has no enum")
	}
	for _, v := range code.Value.Enum {
		c := sshdeck.Code(fmt.Sprint(v))
		if status := web.Status(c); status == http.StatusInternalServerError && c != sshdeck.Internal {
			t.Errorf("Error.code %q has no status of its own in the api package", c)
		}
	}
}

// TestOpenAPIWithoutStore checks the answers that need no store against
// the document: health, unknown paths, wrong methods, missing tokens.
func TestOpenAPIWithoutStore(t *testing.T) {
	v := openapitest.Load(t, openAPIDocument)
	up := api.New(api.Config{Ping: func(context.Context) error { return nil }}).Router()
	down := api.New(api.Config{Ping: func(context.Context) error { return errors.New("down") }}).Router()
	for _, tc := range []struct {
		handler        http.Handler
		method, target string
		status         int
	}{
		{up, "GET", "/healthz", http.StatusOK},
		{down, "GET", "/healthz", http.StatusServiceUnavailable},
		{up, "GET", "/nope", http.StatusNotFound},
		{up, "GET", "/ssh/db/host/1/extra", http.StatusNotFound},
		{up, "POST", "/healthz", http.StatusMethodNotAllowed},
		{up, "PATCH", "/ssh/db/host/1", http.StatusMethodNotAllowed},
		{up, "PATCH", "/ssh/db/host/abc", http.StatusMethodNotAllowed},
		{up, "GET", "/ssh/db/host", http.StatusUnauthorized},
		{up, "POST", "/ssh/db/host", http.StatusUnauthorized},
		{up, "GET", "/ssh/db/host/abc", http.StatusUnauthorized},
		{up, "PUT", "/ssh/db/host/1", http.StatusUnauthorized},
		{up, "DELETE", "/ssh/db/host/1", http.StatusUnauthorized},
	} {
		req := httptest.NewRequest(tc.method, tc.target, nil)
		rec := httptest.NewRecorder()
		tc.handler.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.target, rec.Code, tc.status)
		}
		v.Check(t, req, rec.Code, rec.Header(), rec.Body.Bytes())
	}
}
