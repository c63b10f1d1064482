package sshdeck

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestErrorCodeAndMessage(t *testing.T) {
	notFound := Errorf(NotFound, "host %d not found", 3)
	wrapped := fmt.Errorf("embedded: host: %w", notFound)
	internal := errors.New("disk on fire at /var/lib/x")
	for _, c := range []struct {
		err  error
		code Code
		msg  string
	}{
		{notFound, NotFound, "host 3 not found"},
		{wrapped, NotFound, "host 3 not found"},
		{internal, Internal, "internal error"},
		{fmt.Errorf("wrapped: %w", internal), Internal, "internal error"},
	} {
		if got := ErrorCode(c.err); got != c.code {
			t.Errorf("ErrorCode(%v) = %s, want %s", c.err, got, c.code)
		}
		if got := ErrorMessage(c.err); got != c.msg {
			t.Errorf("ErrorMessage(%v) = %q, want %q", c.err, got, c.msg)
		}
	}
	if ErrorCode(nil) != "" {
		t.Error("ErrorCode(nil) is not empty")
	}
}

func TestPrincipalContext(t *testing.T) {
	ctx := context.Background()
	if _, ok := PrincipalFromContext(ctx); ok {
		t.Fatal("principal in an empty context")
	}
	if _, ok := PrincipalFromContext(NewContextWithPrincipal(ctx, Principal{})); ok {
		t.Fatal("a principal without a user id counts as a caller")
	}
	p := Principal{UserID: "usr_1", TokenID: "tok_1", Scopes: UserScopes(true)}
	if got, ok := PrincipalFromContext(NewContextWithPrincipal(ctx, p)); !ok || !reflect.DeepEqual(got, p) || !got.Admin() {
		t.Fatalf("PrincipalFromContext = %+v, %t", got, ok)
	}
}
