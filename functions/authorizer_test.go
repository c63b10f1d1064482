package functions

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/app"
	"github.com/sshdeck/sshdeck/shared/auth"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
)

// TestAuthorizerEvents replays events/authorizer/*.json through the
// authorizer function's entry point over DynamoDB: the valid token is
// allowed on the whole stage with the caller in the context; the others get
// the one error API Gateway turns into 401. Its log never holds a token.
func TestAuthorizerEvents(t *testing.T) {
	c := startCloud(t)
	seed(t, c.store, c.sealer)
	ctx := context.Background()
	userID := readEvent(t, "get-host").RequestContext.Authorizer[auth.ContextUserID].(string)
	now := time.Now().UTC().Truncate(time.Millisecond)
	must(t, c.store.CreateToken(ctx, &sshdeck.Token{ID: "tok_expired", UserID: userID, Name: "expired",
		Hash: auth.HashToken(eventToken(t, "expired")), CreatedAt: now.Add(-48 * time.Hour), ExpiresAt: now.Add(-24 * time.Hour)}))
	must(t, c.store.CreateToken(ctx, &sshdeck.Token{ID: "tok_revoked", UserID: userID, Name: "revoked",
		Hash: auth.HashToken(eventToken(t, "revoked")), CreatedAt: now}))
	if _, err := c.store.RevokeToken(ctx, "tok_revoked", now); err != nil {
		t.Fatal(err)
	}

	logs := captureStdout(t)
	authorizer, err := app.Authorizer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.dynamo.ResetCalls()
	c.kms.ResetCalls()

	resp, err := authorizer.Handle(ctx, readAuthorizerEvent(t, "valid"))
	if err != nil {
		t.Fatalf("valid token: %v", err)
	}
	// What API Gateway reads: the JSON of the answer.
	got, _ := json.Marshal(resp)
	want := `{"principalId":"` + userID + `","policyDocument":{"Version":"2012-10-17","Statement":[{"Action":["execute-api:Invoke"],"Effect":"Allow","Resource":["arn:aws:execute-api:eu-west-1:123456789012:k3x9w2v7qa/prod/*"]}]},` +
		`"context":{"scopes":"hosts:read hosts:write files:read files:write alerts:read tunnels:read tunnels:write tokens","tokenId":"tok_valid","userId":"` + userID + `"}}`
	if string(got) != want {
		t.Fatalf("valid token:\n got  %s\n want %s", got, want)
	}
	for _, name := range []string{"unknown", "expired", "revoked", "missing"} {
		if _, err := authorizer.Handle(ctx, readAuthorizerEvent(t, name)); err == nil || err.Error() != "Unauthorized" {
			t.Errorf("%s token: got %v, want the error Unauthorized", name, err)
		}
	}

	// The authorizer's role: GetItem on tokens and users, nothing of KMS.
	c.dynamo.CheckPolicy(t, "authorizer", iam.AuthorizerPolicy())
	if calls := c.kms.AllCalls(); len(calls) != 0 {
		t.Errorf("the authorizer made KMS calls %v; its role allows none", calls)
	}

	out := logs()
	if n := strings.Count(out, `"msg":"authorizer"`); n != 5 {
		t.Errorf("%d authorizer log lines for 5 events:\n%s", n, out)
	}
	for _, name := range []string{"valid", "unknown", "expired", "revoked"} {
		if token := eventToken(t, name); strings.Contains(out, token) || strings.Contains(out, auth.HashToken(token)) {
			t.Errorf("the log holds the %s token:\n%s", name, out)
		}
	}
}

// captureStdout sends what the process writes to stdout (where a function
// logs) into a pipe until the returned function is called, which returns it.
func captureStdout(t *testing.T) func() string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		done <- b.String()
	}()
	restore := func() { os.Stdout = saved; w.Close() }
	t.Cleanup(func() {
		if os.Stdout == w {
			restore()
			<-done
		}
	})
	return func() string {
		restore()
		return <-done
	}
}
