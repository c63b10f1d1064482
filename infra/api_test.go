package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/sshdeck/sshdeck/shared/routes"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// functionIDs maps each function's name (its Description is "sshdeck
// <name>": a route's name, authorizer or audit-events) to its logical id.
func (s *synthesis) functionIDs(t *testing.T) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, id := range s.ids("AWS::Lambda::Function") {
		description, _ := s.Resources[id].Properties["Description"].(string)
		name, ok := strings.CutPrefix(description, "sshdeck ")
		if !ok {
			t.Errorf("function %s is described %q, not \"sshdeck <name>\"", id, description)
			continue
		}
		if other, dup := ids[name]; dup {
			t.Errorf("functions %s and %s are both described %q", other, id, description)
		}
		ids[name] = id
	}
	return ids
}

// resourcePath is the path of an API Gateway resource, rebuilt from the
// PathPart of it and each of its parents up to the API's root.
func (s *synthesis) resourcePath(id any) string {
	if api, attribute := getAtt(id); attribute == "RootResourceId" && s.Resources[api].Type == "AWS::ApiGateway::RestApi" {
		return ""
	}
	r, ok := s.Resources[refID(id)]
	if !ok || r.Type != "AWS::ApiGateway::Resource" {
		return "<not a resource: " + render(id) + ">"
	}
	part, _ := r.Properties["PathPart"].(string)
	return s.resourcePath(r.Properties["ParentId"]) + "/" + part
}

// method is an AWS::ApiGateway::Method as the route tests see it.
type method struct {
	id, httpMethod, path string
	integration          string // its type and HTTP method: AWS_PROXY POST for a function
	function             string // the logical id of the function it integrates
	props                map[string]any
}

func (s *synthesis) methods(t *testing.T) []method {
	t.Helper()
	var methods []method
	for _, id := range s.ids("AWS::ApiGateway::Method") {
		p := s.Resources[id].Properties
		m := method{id: id, props: p, path: s.resourcePath(p["ResourceId"])}
		m.httpMethod, _ = p["HttpMethod"].(string)
		if m.path == "" {
			m.path = "/"
		}
		integration := property(p, "Integration")
		m.integration = render(property(integration, "Type")) + " " + render(property(integration, "IntegrationHttpMethod"))
		for _, target := range getAtts(property(integration, "Uri")) {
			if s.Resources[target].Type == "AWS::Lambda::Function" {
				m.function = target
			}
		}
		methods = append(methods, m)
	}
	return methods
}

// TestOneFunctionAndMethodPerRoute: each route of routes.All is one method
// at its path, which invokes the route's own function; nothing else is.
// The functions are the routes', the authorizer and audit-events.
func TestOneFunctionAndMethodPerRoute(t *testing.T) {
	s := synthDefault(t)
	must(t, "Lambda functions", func() {
		s.template.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(len(functionNames())))
	})
	functions := s.functionIDs(t)
	methods := s.methods(t)
	for _, r := range routes.All {
		var found []method
		for _, m := range methods {
			if m.httpMethod == r.Method && m.path == r.Path {
				found = append(found, m)
			}
		}
		if len(found) != 1 {
			t.Errorf("route %s: %d methods %s %s, want 1", r.Name, len(found), r.Method, r.Path)
			continue
		}
		m := found[0]
		if m.integration != "AWS_PROXY POST" {
			t.Errorf("route %s: %s %s integration is %s, want AWS_PROXY POST (a Lambda proxy)", r.Name, r.Method, r.Path, m.integration)
		}
		if m.function == "" || m.function != functions[r.Name] {
			t.Errorf("route %s: %s %s invokes function %q, want %q (described \"sshdeck %s\")", r.Name, r.Method, r.Path, m.function, functions[r.Name], r.Name)
		}
	}
	for _, m := range methods {
		if !slices.ContainsFunc(routes.All, func(r routes.Route) bool { return r.Method == m.httpMethod && r.Path == m.path }) {
			t.Errorf("method %s %s (%s) is no route of routes.All", m.httpMethod, m.path, m.id)
		}
	}
	// Only the stage may invoke a function, not the console's test button.
	for _, id := range s.ids("AWS::Lambda::Permission") {
		if source := render(s.Resources[id].Properties["SourceArn"]); strings.Contains(source, "test-invoke-stage") {
			t.Errorf("permission %s lets API Gateway's test button invoke %v", id, render(s.Resources[id].Properties["FunctionName"]))
		}
	}
}

// TestMethodsUseTheAuthorizerExceptPublicRoutes: a token is needed for
// every route but the public ones of the route table (Public: GET
// /healthz, POST /auth/login), which have no authorizer at all.
func TestMethodsUseTheAuthorizerExceptPublicRoutes(t *testing.T) {
	s := synthDefault(t)
	authorizer, _ := s.only(t, "AWS::ApiGateway::Authorizer")
	public := 0
	for _, m := range s.methods(t) {
		typ := m.props["AuthorizationType"]
		// A method of no route (TestOneFunctionAndMethodPerRoute fails)
		// needs a token all the same.
		r, ok := routeOf(m)
		if ok && r.Public {
			public++
			if typ != "NONE" || m.props["AuthorizerId"] != nil {
				t.Errorf("public route %s (%s %s): AuthorizationType %v, AuthorizerId %v; want NONE and none", r.Name, m.httpMethod, m.path, typ, render(m.props["AuthorizerId"]))
			}
			continue
		}
		if typ != "CUSTOM" || refID(m.props["AuthorizerId"]) != authorizer {
			t.Errorf("route %s (%s %s): AuthorizationType %v, AuthorizerId %v; want CUSTOM and the authorizer %s", r.Name, m.httpMethod, m.path, typ, render(m.props["AuthorizerId"]), authorizer)
		}
	}
	// The contract's public routes, and no other.
	var got []string
	for _, r := range routes.All {
		if r.Public {
			got = append(got, r.Method+" "+r.Path)
		}
	}
	if want := []string{"GET /healthz", "POST /auth/login"}; !slices.Equal(got, want) || public != len(want) {
		t.Errorf("public routes %v (%d methods without the authorizer), want %v", got, public, want)
	}
}

func routeOf(m method) (routes.Route, bool) {
	for _, r := range routes.All {
		if r.Method == m.httpMethod && r.Path == m.path {
			return r, true
		}
	}
	return routes.Route{Name: m.httpMethod + " " + m.path}, false
}

func TestAuthorizer(t *testing.T) {
	s := synthDefault(t)
	id, authorizer := s.only(t, "AWS::ApiGateway::Authorizer")
	p := authorizer.Properties
	if p["Type"] != "REQUEST" || p["IdentitySource"] != "method.request.header.Authorization" {
		t.Errorf("authorizer %s: Type %v, IdentitySource %v; want REQUEST on method.request.header.Authorization", id, p["Type"], p["IdentitySource"])
	}
	// A revoked token, or a disabled user's, works at most API Gateway's
	// cache of the answer and then the authorizer's own cache of the
	// token: API.md's 60 s in all.
	if ttl := p["AuthorizerResultTtlInSeconds"]; ttl != float64(authorizerCacheTTL) || authorizerCacheTTL != 30 {
		t.Errorf("authorizer %s caches its answers %v s, want 30", id, ttl)
	}
	if own := authCacheTTL(t); time.Duration(authorizerCacheTTL)*time.Second+own > time.Minute {
		t.Errorf("API Gateway's %d s and the authorizer's own cache of %v (auth.CacheTTL) let a revoked token work more than 60 s", authorizerCacheTTL, own)
	}
	fn := s.functionIDs(t)[authorizerName]
	if targets := getAtts(p["AuthorizerUri"]); fn == "" || !slices.Equal(targets, []string{fn}) {
		t.Errorf("authorizer %s invokes %v, want the function described \"sshdeck authorizer\" (%s)", id, targets, fn)
	}
}

// authCacheTTL is shared/auth's CacheTTL, the authorizer's own cache of a
// token, read from its source: this module links no package of the
// functions' but the route table and the stdlib-only ones (shared/auth
// would bring the Lambda runtime and x/crypto into it). The constant is
// type-checked as the compiler does; the file's other imports are left
// unresolved, which its constant does not need.
func authCacheTTL(t *testing.T) time.Duration {
	t.Helper()
	path := filepath.Join("..", "shared", "auth", "authenticator.go")
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil), Error: func(error) {}}
	pkg, _ := conf.Check("auth", fset, []*ast.File{f}, nil)
	c, ok := pkg.Scope().Lookup("CacheTTL").(*types.Const)
	if !ok {
		t.Fatalf("%s has no constant CacheTTL", path)
	}
	ns, exact := constant.Int64Val(c.Val())
	if !exact || ns <= 0 {
		t.Fatalf("%s: CacheTTL is %v", path, c.Val())
	}
	return time.Duration(ns)
}

// TestLoginThrottle: POST /auth/login has a throttle of its own (context
// loginThrottleRate and loginThrottleBurst), with the stage's logging and
// metrics, and never a body logged; the stage's throttle holds for every
// other method.
func TestLoginThrottle(t *testing.T) {
	for _, tc := range []struct {
		name        string
		s           *synthesis
		rate, burst float64
	}{{"default", synthDefault(t), 10, 20}, {"https (loginThrottleRate=3, loginThrottleBurst=4)", synthHTTPS(t), 3, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			must(t, "the login method's settings", func() {
				tc.s.template.HasResourceProperties(jsii.String("AWS::ApiGateway::Stage"), map[string]any{
					"MethodSettings": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectEquals(&map[string]any{
						"HttpMethod": "POST", "ResourcePath": "/~1auth~1login",
						"ThrottlingRateLimit": tc.rate, "ThrottlingBurstLimit": tc.burst,
						"LoggingLevel": "ERROR", "DataTraceEnabled": false, "MetricsEnabled": true,
					})}),
				})
			})
			_, stage := tc.s.only(t, "AWS::ApiGateway::Stage")
			var methods []string
			for _, setting := range list(stage.Properties["MethodSettings"]) {
				methods = append(methods, render(property(setting, "HttpMethod"))+" "+render(property(setting, "ResourcePath")))
			}
			slices.Sort(methods)
			if want := []string{"* /*", "POST /~1auth~1login"}; !slices.Equal(methods, want) {
				t.Errorf("the stage's method settings are for %v, want %v (the stage's, login's)", methods, want)
			}
		})
	}
}

// contractCodes are the error codes of the contract (openapi.yaml's Error).
var contractCodes = []sshdeck.Code{
	sshdeck.Invalid, sshdeck.Unauthorized, sshdeck.Forbidden, sshdeck.NotFound, sshdeck.MethodNotAllowed,
	sshdeck.Conflict, sshdeck.PreconditionFailed, sshdeck.TooLarge, sshdeck.UnsupportedMediaType,
	sshdeck.RateLimited, sshdeck.Upstream, sshdeck.Internal,
}

// TestGatewayResponsesSpeakTheContract: what API Gateway answers on its own
// has the contract's error body, {"error": sentence, "code": code}.
func TestGatewayResponsesSpeakTheContract(t *testing.T) {
	s := synthDefault(t)
	ids := s.ids("AWS::ApiGateway::GatewayResponse")
	if len(ids) == 0 {
		t.Fatal("no gateway responses")
	}
	for _, id := range ids {
		p := s.Resources[id].Properties
		typ := p["ResponseType"]
		body, err := errorBody(property(p, "ResponseTemplates", "application/json"))
		if err != nil {
			t.Errorf("gateway response %v (%s): %v", typ, id, err)
			continue
		}
		if !slices.Contains(contractCodes, sshdeck.Code(body.Code)) {
			t.Errorf("gateway response %v (%s): code %q is not one of the contract's %v", typ, id, body.Code, contractCodes)
		}
		if ct := property(p, "ResponseParameters", "gatewayresponse.header.Content-Type"); ct != "'application/json; charset=utf-8'" {
			t.Errorf("gateway response %v (%s): Content-Type %v, want 'application/json; charset=utf-8'", typ, id, ct)
		}
	}
}

// TestAuthorizerDenialIs401Bearer: no token, an unknown one, or the
// authorizer's Deny are all 401 unauthorized with WWW-Authenticate: Bearer
// (API Gateway would say 403 to a Deny).
func TestAuthorizerDenialIs401Bearer(t *testing.T) {
	s := synthDefault(t)
	for _, typ := range []string{"UNAUTHORIZED", "ACCESS_DENIED"} {
		var found int
		for _, id := range s.ids("AWS::ApiGateway::GatewayResponse") {
			p := s.Resources[id].Properties
			if p["ResponseType"] != typ {
				continue
			}
			found++
			if p["StatusCode"] != "401" {
				t.Errorf("gateway response %s (%s): status %v, want 401", typ, id, p["StatusCode"])
			}
			if h := property(p, "ResponseParameters", "gatewayresponse.header.WWW-Authenticate"); h != "'Bearer'" {
				t.Errorf("gateway response %s (%s): WWW-Authenticate %v, want 'Bearer'", typ, id, h)
			}
			body, err := errorBody(property(p, "ResponseTemplates", "application/json"))
			if err != nil || body.Code != string(sshdeck.Unauthorized) {
				t.Errorf("gateway response %s (%s): body %+v (%v), want code unauthorized", typ, id, body, err)
			}
		}
		if found != 1 {
			t.Errorf("%d gateway responses of type %s, want 1", found, typ)
		}
	}
}

type contractError struct{ Error, Code string }

// errorBody parses a gateway response's template as the contract's error
// body. $context.error.messageString stands unquoted where a string goes:
// API Gateway puts a quoted string there.
func errorBody(template any) (contractError, error) {
	var e contractError
	text, ok := template.(string)
	if !ok {
		return e, fmt.Errorf("application/json template is %v, not a string", template)
	}
	text = strings.ReplaceAll(text, "$context.error.messageString", `"x"`)
	var fields map[string]any
	if err := json.Unmarshal([]byte(text), &fields); err != nil {
		return e, fmt.Errorf("template %s is not JSON: %v", text, err)
	}
	e.Error, _ = fields["error"].(string)
	e.Code, _ = fields["code"].(string)
	if len(fields) != 2 || e.Error == "" || e.Code == "" {
		return e, fmt.Errorf("template %s is not {\"error\": sentence, \"code\": code}", text)
	}
	return e, nil
}

// TestStage: base_url's stage is traced, access-logged and throttled, and
// never logs a body (bodies hold passwords and keys).
func TestStage(t *testing.T) {
	for _, tc := range []struct {
		name        string
		s           *synthesis
		rate, burst float64
	}{{"default", synthDefault(t), 50, 100}, {"https (throttleRate=7, throttleBurst=9)", synthHTTPS(t), 7, 9}} {
		t.Run(tc.name, func(t *testing.T) {
			id, stage := tc.s.only(t, "AWS::ApiGateway::Stage")
			p := stage.Properties
			if p["StageName"] != stageName || p["TracingEnabled"] != true {
				t.Errorf("stage %s: StageName %v, TracingEnabled %v; want v1 and true", id, p["StageName"], p["TracingEnabled"])
			}
			if dest := getAtts(property(p, "AccessLogSetting", "DestinationArn")); len(dest) != 1 || tc.s.Resources[dest[0]].Type != "AWS::Logs::LogGroup" {
				t.Errorf("stage %s: access logs go to %v, want a log group", id, render(property(p, "AccessLogSetting", "DestinationArn")))
			}
			must(t, "stage "+id, func() {
				tc.s.template.HasResourceProperties(jsii.String("AWS::ApiGateway::Stage"), map[string]any{
					"MethodSettings": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
						"HttpMethod": "*", "ResourcePath": "/*",
						"DataTraceEnabled": false, "ThrottlingRateLimit": tc.rate, "ThrottlingBurstLimit": tc.burst,
					})}),
				})
			})
			for _, setting := range list(p["MethodSettings"]) {
				if property(setting, "DataTraceEnabled") == true {
					t.Errorf("stage %s logs request and response bodies (DataTraceEnabled) on %v", id, render(setting))
				}
			}
		})
	}
}

// TestStreamingRoutes: a route marked Stream (list-hosts) is integrated
// with responseTransferMode STREAM through Lambda's
// response-streaming-invocations (InvokeWithResponseStream), with the
// stream's timeout on the integration and on the function; every other
// route is buffered through .../invocations within API Gateway's 29 s.
func TestStreamingRoutes(t *testing.T) {
	s := synthDefault(t)
	functions := s.functionIDs(t)
	streams := 0
	for _, m := range s.methods(t) {
		r, ok := routeOf(m)
		if !ok {
			continue
		}
		integration := property(m.props, "Integration")
		uri := render(property(integration, "Uri"))
		mode := property(integration, "ResponseTransferMode")
		timeout := property(integration, "TimeoutInMillis")
		fnTimeout := s.Resources[functions[r.Name]].Properties["Timeout"]
		if r.Stream {
			streams++
			if mode != "STREAM" || !strings.Contains(uri, "/2021-11-15/functions/") || !strings.HasSuffix(uri, "/response-streaming-invocations") ||
				timeout != float64(streamTimeout*1000) || fnTimeout != float64(streamTimeout) {
				t.Errorf("route %s streams, yet its integration is %v %s (timeout %v), its function's timeout %v", r.Name, mode, uri, timeout, fnTimeout)
			}
			continue
		}
		if (mode != nil && mode != "BUFFERED") || !strings.HasSuffix(uri, "/invocations") || strings.Contains(uri, "response-streaming") ||
			timeout != nil || fnTimeout != float64(functionTimeout) {
			t.Errorf("route %s buffers, yet its integration is %v %s (timeout %v), its function's timeout %v", r.Name, mode, uri, timeout, fnTimeout)
		}
	}
	if want := len(slices.DeleteFunc(slices.Clone(routes.All), func(r routes.Route) bool { return !r.Stream })); streams != want || want == 0 {
		t.Errorf("%d streaming methods, want %d (routes marked Stream)", streams, want)
	}
}
