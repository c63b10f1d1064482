// Package lambdahttp serves an http.Handler as a Lambda function behind an
// API Gateway REST API: it turns each v1 proxy event into a request with
// aws-lambda-go-api-proxy, carrying the Lambda deadline, the API Gateway
// request id and the caller the authorizer allowed into r.Context(), where
// the handlers of shared/api find them.
package lambdahttp

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// Handler is the Lambda entry point of one http.Handler.
type Handler struct {
	adapter *httpadapter.HandlerAdapter
}

// New returns the entry point serving h.
func New(h http.Handler) *Handler {
	return &Handler{adapter: httpadapter.New(fromGateway(h))}
}

// Handle answers one proxy event; it is what lambda.Start is given.
func (h *Handler) Handle(ctx context.Context, event events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	return h.adapter.ProxyWithContext(ctx, event)
}

// fromGateway moves what API Gateway says about a request into its context:
// the request id (X-Request-Id and the logs then match API Gateway's own
// logs) and the caller from the authorizer context. Only API Gateway can
// invoke the function, so the context is trusted; an event without a caller
// reaches the handler without one and is answered 401.
func fromGateway(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gw, ok := core.GetAPIGatewayContextFromContext(r.Context())
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		if gw.RequestID != "" {
			ctx = web.NewContextWithRequestID(ctx, gw.RequestID)
		}
		if p, ok := auth.PrincipalFromAuthorizer(gw.Authorizer); ok {
			ctx = sshdeck.NewContextWithPrincipal(ctx, p)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
