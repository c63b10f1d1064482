package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// ErrUnauthorized is what the authorizer returns for a bad token. API Gateway
// answers 401 (its UNAUTHORIZED gateway response) only for an error whose
// message is exactly "Unauthorized"; any other error is a 500, which is what
// a store failure should be.
var ErrUnauthorized = errors.New("Unauthorized")

// The keys of the authorizer context: API Gateway passes them to every
// function in requestContext.authorizer, with their values as strings.
const (
	ContextUserID  = "userId"
	ContextTokenID = "tokenId"
	// ContextScopes holds the token's effective scopes joined by spaces,
	// as OAuth writes them: each function checks its route's scope
	// there, since the cached policy allows the whole stage.
	ContextScopes = "scopes"
)

// Authorizer answers the REQUEST authorizer events of the REST API.
type Authorizer struct {
	authn *Authenticator
	log   *slog.Logger
}

// NewAuthorizer returns an Authorizer over an Authenticator (whose cache
// spares the store while the container lives) that logs one line per event.
func NewAuthorizer(authn *Authenticator, log *slog.Logger) *Authorizer {
	return &Authorizer{authn: authn, log: log}
}

// Handle allows a valid token with a policy over the whole stage (API Gateway
// caches the answer per token and reuses it for every route) and the caller
// in the context; it returns ErrUnauthorized for any bad token. Neither the
// log nor an error ever holds the token.
func (a *Authorizer) Handle(ctx context.Context, event events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
	requestID := event.RequestContext.RequestID
	resource, err := stageResource(event.MethodArn)
	if err != nil {
		a.log.LogAttrs(ctx, slog.LevelError, "authorizer", slog.String("request_id", requestID), slog.String("error", err.Error()))
		return events.APIGatewayCustomAuthorizerResponse{}, err
	}
	p, err := a.authn.Authenticate(ctx, authorizationHeader(event))
	if sshdeck.ErrorCode(err) == sshdeck.Unauthorized {
		a.log.LogAttrs(ctx, slog.LevelInfo, "authorizer", slog.String("request_id", requestID),
			slog.String("decision", "deny"), slog.String("reason", sshdeck.ErrorMessage(err)))
		return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
	}
	if err != nil {
		a.log.LogAttrs(ctx, slog.LevelError, "authorizer", slog.String("request_id", requestID), slog.String("error", err.Error()))
		return events.APIGatewayCustomAuthorizerResponse{}, fmt.Errorf("authorizer: %w", err)
	}
	a.log.LogAttrs(ctx, slog.LevelInfo, "authorizer", slog.String("request_id", requestID),
		slog.String("decision", "allow"), slog.String("user", p.UserID))
	return events.APIGatewayCustomAuthorizerResponse{
		PrincipalID: p.UserID,
		PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{
			Version: "2012-10-17",
			Statement: []events.IAMPolicyStatement{{
				Action:   []string{"execute-api:Invoke"},
				Effect:   "Allow",
				Resource: []string{resource},
			}},
		},
		Context: map[string]any{
			ContextUserID:  p.UserID,
			ContextTokenID: p.TokenID,
			ContextScopes:  sshdeck.JoinScopes(p.Scopes, " "),
		},
	}, nil
}

// authorizationHeader finds the header whatever its case: API Gateway passes
// header names as the client sent them. Two Authorization headers give a
// value that is no token ("" : 401), as web.Authorization answers both
// services when they check tokens themselves.
func authorizationHeader(event events.APIGatewayCustomAuthorizerRequestTypeRequest) string {
	n := 0
	for name, vs := range event.MultiValueHeaders {
		if strings.EqualFold(name, "Authorization") {
			n += len(vs)
		}
	}
	if n > 1 {
		return ""
	}
	for name, v := range event.Headers {
		if strings.EqualFold(name, "Authorization") {
			return v
		}
	}
	for name, vs := range event.MultiValueHeaders {
		if strings.EqualFold(name, "Authorization") && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

// stageResource turns the ARN of the invoked method,
// arn:aws:execute-api:REGION:ACCOUNT:API/STAGE/VERB/PATH, into one covering
// every method of the stage, so that the cached policy holds for all routes.
func stageResource(methodARN string) (string, error) {
	parts := strings.SplitN(methodARN, "/", 3)
	if len(parts) < 3 || !strings.HasPrefix(parts[0], "arn:") || parts[1] == "" {
		return "", fmt.Errorf("authorizer: method ARN %q is not an execute-api method ARN", methodARN)
	}
	return parts[0] + "/" + parts[1] + "/*", nil
}

// PrincipalFromAuthorizer reads the caller from requestContext.authorizer
// of a proxy event, as the Allow answer of Handle put it there. A context
// without scopes (or with one this code does not know) grants none.
func PrincipalFromAuthorizer(authorizer map[string]any) (sshdeck.Principal, bool) {
	userID, _ := authorizer[ContextUserID].(string)
	if userID == "" {
		return sshdeck.Principal{}, false
	}
	tokenID, _ := authorizer[ContextTokenID].(string)
	joined, _ := authorizer[ContextScopes].(string)
	scopes, err := sshdeck.ParseScopes(strings.Fields(joined))
	if err != nil {
		scopes = nil
	}
	return sshdeck.Principal{UserID: userID, TokenID: tokenID, Scopes: scopes}, true
}
