package auth

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

const methodARN = "arn:aws:execute-api:eu-west-1:123456789012:k3x9w2v7qa/prod/GET/ssh/db/host/1"

func authorizerEvent(headers map[string]string, multi map[string][]string) events.APIGatewayCustomAuthorizerRequestTypeRequest {
	return events.APIGatewayCustomAuthorizerRequestTypeRequest{
		Type: "REQUEST", MethodArn: methodARN, Headers: headers, MultiValueHeaders: multi,
		RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{RequestID: "req-1"},
	}
}

func TestAuthorizerAllowsWholeStageWithCaller(t *testing.T) {
	_, authn, admin, _ := setup(t)
	ctx := context.Background()
	u, _ := admin.AddUser(ctx, "ops", true)
	bearer, tok, _ := admin.CreateToken(ctx, "ops", "", 0)
	var logs bytes.Buffer
	a := NewAuthorizer(authn, slog.New(slog.NewJSONHandler(&logs, nil)))

	// API Gateway passes header names as the client wrote them.
	for _, ev := range []events.APIGatewayCustomAuthorizerRequestTypeRequest{
		authorizerEvent(map[string]string{"Authorization": "Bearer " + bearer}, nil),
		authorizerEvent(map[string]string{"authorization": "Bearer " + bearer}, nil),
		authorizerEvent(nil, map[string][]string{"AUTHORIZATION": {"Bearer " + bearer}}),
	} {
		resp, err := a.Handle(ctx, ev)
		if err != nil {
			t.Fatalf("Handle: %v", err)
		}
		st := resp.PolicyDocument.Statement
		if resp.PrincipalID != u.ID || len(st) != 1 || st[0].Effect != "Allow" ||
			strings.Join(st[0].Action, ",") != "execute-api:Invoke" ||
			strings.Join(st[0].Resource, ",") != "arn:aws:execute-api:eu-west-1:123456789012:k3x9w2v7qa/prod/*" {
			t.Fatalf("response %+v", resp)
		}
		p, ok := PrincipalFromAuthorizer(resp.Context)
		if want := (sshdeck.Principal{UserID: u.ID, TokenID: tok.ID, Scopes: sshdeck.UserScopes(true)}); !ok || !reflect.DeepEqual(p, want) {
			t.Fatalf("context %v gives %+v, %t", resp.Context, p, ok)
		}
	}
	if strings.Contains(logs.String(), bearer) || strings.Contains(logs.String(), HashToken(bearer)) {
		t.Fatalf("the log holds the token: %s", logs.String())
	}
	if !strings.Contains(logs.String(), `"decision":"allow"`) {
		t.Fatalf("no decision logged: %s", logs.String())
	}
}

func TestAuthorizerDeniesWithUnauthorized(t *testing.T) {
	_, authn, admin, _ := setup(t)
	ctx := context.Background()
	admin.AddUser(ctx, "ops", false)
	revoked, tok, _ := admin.CreateToken(ctx, "ops", "", 0)
	admin.RevokeToken(ctx, tok.ID)
	unknown, _ := NewToken()
	var logs bytes.Buffer
	a := NewAuthorizer(authn, slog.New(slog.NewJSONHandler(&logs, nil)))
	for name, header := range map[string]string{
		"missing": "", "malformed": "Bearer nope", "basic": "Basic b3BzOm9wcw==",
		"unknown": "Bearer " + unknown, "revoked": "Bearer " + revoked,
	} {
		_, err := a.Handle(ctx, authorizerEvent(map[string]string{"Authorization": header}, nil))
		// The exact message is what makes API Gateway answer 401.
		if err == nil || err.Error() != "Unauthorized" {
			t.Fatalf("%s: got %v, want the error Unauthorized", name, err)
		}
	}
	// Two Authorization headers are 401, even when one holds a valid
	// token, as web.Authorization answers where the services check tokens.
	valid, _, _ := admin.CreateToken(ctx, "ops", "", 0)
	for _, multi := range []map[string][]string{
		{"Authorization": {"Bearer " + valid, "Bearer " + unknown}},
		{"Authorization": {"Bearer " + valid}, "authorization": {"Bearer " + valid}},
	} {
		headers := map[string]string{"Authorization": "Bearer " + valid}
		if _, err := a.Handle(ctx, authorizerEvent(headers, multi)); err == nil || err.Error() != "Unauthorized" {
			t.Fatalf("two headers %v: got %v, want the error Unauthorized", multi, err)
		}
	}
	for _, secret := range []string{revoked, unknown, valid} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("the log holds a token: %s", logs.String())
		}
	}
}

func TestAuthorizerFailuresAreNotDenials(t *testing.T) {
	store, authn, admin, _ := setup(t)
	ctx := context.Background()
	admin.AddUser(ctx, "ops", false)
	bearer, _, _ := admin.CreateToken(ctx, "ops", "", 0)
	a := NewAuthorizer(authn, slog.New(slog.DiscardHandler))

	ev := authorizerEvent(map[string]string{"Authorization": "Bearer " + bearer}, nil)
	ev.MethodArn = "not-an-arn"
	if _, err := a.Handle(ctx, ev); err == nil || errors.Is(err, ErrUnauthorized) {
		t.Fatalf("bad method ARN: %v", err)
	}
	// A store that fails must not look like a bad token (401): API Gateway
	// answers 500 for any other error, and the client may retry.
	store.Close()
	if _, err := a.Handle(ctx, authorizerEvent(map[string]string{"Authorization": "Bearer " + bearer}, nil)); err == nil || errors.Is(err, ErrUnauthorized) {
		t.Fatalf("closed store: %v", err)
	}
}

func TestPrincipalFromAuthorizer(t *testing.T) {
	for _, tt := range []struct {
		ctx  map[string]any
		want sshdeck.Principal
		ok   bool
	}{
		{map[string]any{"userId": "usr_1", "tokenId": "tok_1", "scopes": "admin hosts:read", "principalId": "usr_1"},
			sshdeck.Principal{UserID: "usr_1", TokenID: "tok_1", Scopes: []sshdeck.Scope{sshdeck.ScopeHostsRead, sshdeck.ScopeAdmin}}, true},
		{map[string]any{"userId": "usr_1", "scopes": "hosts:read root"}, sshdeck.Principal{UserID: "usr_1"}, true},
		{map[string]any{"userId": "usr_1", "admin": "true"}, sshdeck.Principal{UserID: "usr_1", Scopes: []sshdeck.Scope{}}, true},
		{map[string]any{"userId": "usr_1"}, sshdeck.Principal{UserID: "usr_1", Scopes: []sshdeck.Scope{}}, true},
		{map[string]any{"principalId": "usr_1"}, sshdeck.Principal{}, false},
		{map[string]any{"userId": 7}, sshdeck.Principal{}, false},
		{nil, sshdeck.Principal{}, false},
	} {
		if got, ok := PrincipalFromAuthorizer(tt.ctx); !reflect.DeepEqual(got, tt.want) || ok != tt.ok {
			t.Fatalf("PrincipalFromAuthorizer(%v) = %+v, %t; want %+v, %t", tt.ctx, got, ok, tt.want, tt.ok)
		}
	}
}
