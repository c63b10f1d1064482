package lambdahttp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/web"
)

// seen is what a handler found in its request.
type seen struct {
	Method, Path, Query, Auth, Body, RequestID, UserID string
	Scopes                                             string
	HasCaller, HasDeadline                             bool
}

func echo(w http.ResponseWriter, r *http.Request) {
	p, ok := sshdeck.PrincipalFromContext(r.Context())
	_, deadline := r.Context().Deadline()
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTeapot)
	json.NewEncoder(w).Encode(seen{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.Query().Get("limit"), Auth: r.Header.Get("Authorization"),
		Body: string(body), RequestID: web.RequestID(r.Context()), UserID: p.UserID, Scopes: sshdeck.JoinScopes(p.Scopes, " "),
		HasCaller: ok, HasDeadline: deadline,
	})
}

func handle(t *testing.T, ctx context.Context, ev events.APIGatewayProxyRequest) seen {
	t.Helper()
	resp, err := New(http.HandlerFunc(echo)).Handle(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTeapot || http.Header(resp.MultiValueHeaders).Get("Content-Type") != "application/json" {
		t.Fatalf("response %d %v", resp.StatusCode, resp.MultiValueHeaders)
	}
	var s seen
	if err := json.Unmarshal([]byte(resp.Body), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEventBecomesRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the Lambda deadline
	defer cancel()
	got := handle(t, ctx, events.APIGatewayProxyRequest{
		HTTPMethod:                      "PUT",
		Path:                            "/ssh/db/host/7",
		MultiValueHeaders:               map[string][]string{"Authorization": {"Bearer x"}},
		MultiValueQueryStringParameters: map[string][]string{"limit": {"5"}},
		Body:                            base64.StdEncoding.EncodeToString([]byte("--b\r\n")),
		IsBase64Encoded:                 true,
		RequestContext: events.APIGatewayProxyRequestContext{
			RequestID:  "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
			Authorizer: map[string]any{"principalId": "usr_1", "userId": "usr_1", "scopes": "hosts:read admin", "integrationLatency": 12},
		},
	})
	want := seen{Method: "PUT", Path: "/ssh/db/host/7", Query: "5", Auth: "Bearer x", Body: "--b\r\n",
		RequestID: "c6af9ac6-7b61-11e6-9a41-93e8deadbeef", UserID: "usr_1", Scopes: "hosts:read admin", HasCaller: true, HasDeadline: true}
	if got != want {
		t.Fatalf("handler saw\n %+v\nwant\n %+v", got, want)
	}
}

// TestNoAuthorizerNoCaller: a public route's event (or a misconfigured
// method) carries no authorizer context, so the handler finds no caller.
func TestNoAuthorizerNoCaller(t *testing.T) {
	got := handle(t, context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: "GET", Path: "/healthz",
		RequestContext: events.APIGatewayProxyRequestContext{RequestID: "r-1"},
	})
	if got.HasCaller || got.RequestID != "r-1" {
		t.Fatalf("handler saw %+v", got)
	}
}
