package dynamotest

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestCalls(t *testing.T) {
	s := Start(t)
	if calls := s.Calls(); len(calls) != 0 {
		t.Fatalf("calls after Start: %v, want none", calls)
	}
	key := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "p"}, "sk": &types.AttributeValueMemberS{Value: "s"},
	}
	for range 2 {
		if _, err := s.Client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &s.Table, Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	calls := s.Calls()
	if len(calls) != 1 || calls["GetItem"] != 2 {
		t.Fatalf("calls: got %v, want GetItem:2", calls)
	}
	calls["GetItem"] = 99 // a copy
	s.ResetCalls()
	if calls := s.Calls(); len(calls) != 0 {
		t.Fatalf("calls after ResetCalls: %v, want none", calls)
	}
}
