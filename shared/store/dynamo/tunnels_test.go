package dynamo_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
)

// updates records the UpdateItems it is sent.
type updates struct {
	dynamo.API
	sent []*dynamodb.UpdateItemInput
}

func (u *updates) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	u.sent = append(u.sent, in)
	return u.API.UpdateItem(ctx, in, optFns...)
}

// TestPutTunnelRequest checks PutTunnel's one UpdateItem: its condition on
// the generation, no lease attribute named, and a REMOVE of the attributes
// the tunnel has none of, as a put would. minidyn ignores REMOVE, so the
// request is what is checked.
func TestPutTunnelRequest(t *testing.T) {
	ctx := t.Context()
	_, srv := start(t)
	api := &updates{API: srv.Client}
	s := dynamo.New(api, srv.Table)
	put := func(tn *sshdeck.Tunnel) *dynamodb.UpdateItemInput {
		t.Helper()
		api.sent = nil
		if err := s.PutTunnel(ctx, tn); err != nil {
			t.Fatal(err)
		}
		if len(api.sent) != 1 {
			t.Fatalf("PutTunnel sent %d UpdateItems, want 1", len(api.sent))
		}
		in := api.sent[0]
		for placeholder, name := range in.ExpressionAttributeNames {
			if strings.HasPrefix(name, "lease") {
				t.Errorf("PutTunnel names %s (%s): it must leave the lease alone", name, placeholder)
			}
		}
		return in
	}

	// Generation 1 is a create (CreateTunnel): a transaction with the
	// owner's count, not this UpdateItem.
	if err := s.PutTunnel(ctx, newTunnel("usr_a", "db", 1)); err != nil {
		t.Fatal(err)
	}
	in := put(newTunnel("usr_a", "db", 2))
	if expr := *in.UpdateExpression; strings.Contains(expr, "REMOVE") {
		t.Errorf("update of a tunnel with credentials and times: %s, want no REMOVE", expr)
	}

	next := newTunnel("usr_a", "db", 3)
	next.Sealed = sshdeck.SealedTunnelCredentials{}
	in = put(next)
	prev, _ := in.ExpressionAttributeValues[":prev"].(*types.AttributeValueMemberN)
	if cond := *in.ConditionExpression; cond != "#generation = :prev" || in.ExpressionAttributeNames["#generation"] != "generation" || prev == nil || prev.Value != "2" {
		t.Errorf("condition of generation 3: %s, %v", cond, in.ExpressionAttributeValues[":prev"])
	}
	if expr := *in.UpdateExpression; !strings.HasSuffix(expr, " REMOVE #sealed") || in.ExpressionAttributeNames["#sealed"] != "sealed" {
		t.Errorf("update of a tunnel without credentials: %s, %v; want it to REMOVE sealed", expr, in.ExpressionAttributeNames)
	}
	names := slices.Sorted(maps.Values(in.ExpressionAttributeNames))
	if got := strings.Join(names, " "); got != "createdAt generation generation name owner run sealed spec status sv updatedAt" {
		t.Errorf("attributes PutTunnel names: %s", got)
	}
}
