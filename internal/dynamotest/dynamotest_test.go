package dynamotest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
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

// TestActions: each call is noted as the IAM actions it needs, a
// transaction's item by item, and the index a Query names; ResetCalls
// forgets them.
func TestActions(t *testing.T) {
	s := Start(t)
	if actions, indexes := s.Actions(), s.Indexes(); len(actions) != 0 || len(indexes) != 0 {
		t.Fatalf("after Start: actions %v, indexes %v; want none (the table's creation is not one)", actions, indexes)
	}
	ctx := t.Context()
	key := func(sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "p"}, "sk": &types.AttributeValueMemberS{Value: sk}}
	}
	if _, err := s.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: key("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: &s.Table, Key: key("a"), ConditionExpression: aws.String("attribute_exists(pk)")}},
		{Put: &types.Put{TableName: &s.Table, Item: key("b")}},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: &s.Table, Key: key("b")}},
	}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:PutItem"}
	if got := s.Actions(); !slices.Equal(got, want) {
		t.Errorf("actions: got %v, want %v", got, want)
	}
	if got := s.Calls(); got["TransactWriteItems"] != 1 || got["TransactGetItems"] != 1 || got["PutItem"] != 1 {
		t.Errorf("calls: got %v, want one each of PutItem, TransactWriteItems, TransactGetItems", got)
	}
	if got := s.Indexes(); len(got) != 0 {
		t.Errorf("indexes: got %v before any Query of one", got)
	}

	// The transaction's Put is there: minidyn read the body after record.
	if out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key("b")}); err != nil || out.Item == nil {
		t.Fatalf("the transaction's item: %v, %v", out, err)
	}
	if _, err := s.Client.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.Table, IndexName: aws.String("gsi1"),
		KeyConditionExpression:    aws.String("gsi1pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "p"}},
	}); err != nil {
		t.Fatal(err)
	}
	if got := s.Indexes(); !slices.Equal(got, []string{"gsi1"}) {
		t.Errorf("indexes: got %v, want [gsi1]", got)
	}
	want = []string{"dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query"}
	if got := s.Actions(); !slices.Equal(got, want) {
		t.Errorf("actions: got %v, want %v", got, want)
	}

	// CheckGranted fails on the index, and on the action not granted.
	rec := &recorder{TB: t}
	s.CheckGranted(rec, "a route", want)
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "gsi1") {
		t.Errorf("CheckGranted of every action: %q, want one error naming gsi1", rec.errors)
	}
	rec.errors = nil
	s.ResetCalls()
	if _, err := s.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: &s.Table, Key: key("b")}},
		{Update: &types.Update{TableName: &s.Table, Key: key("a"), UpdateExpression: aws.String("SET n = :n"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "1"}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	s.CheckGranted(rec, "a route", []string{"dynamodb:UpdateItem"})
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "[dynamodb:DeleteItem]") {
		t.Errorf("CheckGranted of UpdateItem after a Delete and an Update: %q, want one error naming DeleteItem", rec.errors)
	}

	s.ResetCalls()
	if actions, indexes := s.Actions(), s.Indexes(); len(actions) != 0 || len(indexes) != 0 {
		t.Errorf("after ResetCalls: actions %v, indexes %v; want none", actions, indexes)
	}
}

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestLeadingKeys: each call is noted with the partition keys it touches,
// by action (a Query's from its key condition, a transaction's and a
// batch's item by item), and CheckPolicy fails on a partition the policy
// does not allow for the action.
func TestLeadingKeys(t *testing.T) {
	s := Start(t)
	ctx := t.Context()
	key := func(pk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "s"}}
	}
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	calls := []func() error{
		func() error {
			_, err := s.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: key("OWNER#a")})
			return err
		},
		func() error {
			_, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key("USER#u")})
			return err
		},
		func() error {
			_, err := s.Client.Query(ctx, &dynamodb.QueryInput{TableName: &s.Table,
				KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :p)"),
				ExpressionAttributeNames:  map[string]string{"#pk": "pk", "#sk": "sk"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str("ALERTS"), ":p": str("ALERT#")}})
			return err
		},
		func() error {
			_, err := s.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{ConditionCheck: &types.ConditionCheck{TableName: &s.Table, Key: key("OWNER#a"), ConditionExpression: aws.String("attribute_exists(pk)")}},
				{Put: &types.Put{TableName: &s.Table, Item: key("OWNER#b")}},
			}})
			return err
		},
		func() error {
			_, err := s.Client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
				s.Table: {{DeleteRequest: &types.DeleteRequest{Key: key("OWNER#c")}}, {PutRequest: &types.PutRequest{Item: key("TOKEN#t")}}},
			}})
			return err
		},
	}
	for _, call := range calls {
		if err := call(); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]string{
		"dynamodb:PutItem":            {"OWNER#a", "OWNER#b"},
		"dynamodb:GetItem":            {"USER#u"},
		"dynamodb:Query":              {"ALERTS"},
		"dynamodb:ConditionCheckItem": {"OWNER#a"},
		"dynamodb:BatchWriteItem":     {"OWNER#c", "TOKEN#t"},
	}
	got := s.LeadingKeys()
	if len(got) != len(want) {
		t.Errorf("leading keys %v, want %v", got, want)
	}
	for a, pks := range want {
		if !slices.Equal(got[a], pks) {
			t.Errorf("%s: leading keys %v, want %v", a, got[a], pks)
		}
	}

	all := []string{"dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query"}
	rec := &recorder{TB: t}
	s.CheckPolicy(rec, "a role", iam.Policy{{Actions: all, Partitions: []string{"OWNER#*", "USER#*", "ALERTS", "TOKEN#*"}}})
	if len(rec.errors) != 0 {
		t.Errorf("CheckPolicy of every partition: %q", rec.errors)
	}
	s.CheckPolicy(rec, "a role", iam.Policy{
		{Actions: []string{"dynamodb:GetItem", "dynamodb:Query"}, Partitions: []string{"OWNER#*", "USER#*", "ALERTS", "TOKEN#*"}},
		{Actions: []string{"dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:PutItem"}, Partitions: []string{"OWNER#*"}},
	})
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], `dynamodb:BatchWriteItem on the partition "TOKEN#t"`) {
		t.Errorf("CheckPolicy with writes on OWNER# only: %q, want one error naming the BatchWriteItem on TOKEN#t", rec.errors)
	}
}

// TestIndexLeadingKeys: a Query of the index is noted with the index's
// partition key (gsi1pk), apart from the table's calls, and CheckPolicy
// holds it to a statement on that index: none, a statement on the table
// alone, or one on other partitions of the index, fail.
func TestIndexLeadingKeys(t *testing.T) {
	s := Start(t)
	ctx := t.Context()
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	if _, err := s.Client.Query(ctx, &dynamodb.QueryInput{TableName: &s.Table, IndexName: aws.String("gsi1"),
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :p)"),
		ExpressionAttributeNames:  map[string]string{"#pk": "gsi1pk", "#sk": "gsi1sk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str("USER#u"), ":p": str("TOKEN#")}}); err != nil {
		t.Fatal(err)
	}
	if got := s.IndexLeadingKeys("gsi1"); len(got) != 1 || !slices.Equal(got["dynamodb:Query"], []string{"USER#u"}) {
		t.Errorf("index leading keys %v, want Query on USER#u", got)
	}
	if got := s.LeadingKeys(); len(got) != 0 {
		t.Errorf("table leading keys %v after a Query of the index alone", got)
	}
	query := []string{"dynamodb:Query"}
	for _, tc := range []struct {
		name   string
		policy iam.Policy
		want   string // in the one error; "" for none
	}{
		{"on the index", iam.Policy{{Actions: query, Partitions: []string{"USER#*"}, Index: "gsi1"}}, ""},
		{"on the table alone", iam.Policy{{Actions: query, Partitions: []string{"USER#*"}}}, "no statement"},
		{"on other partitions", iam.Policy{{Actions: query, Partitions: []string{"TOKEN#*"}, Index: "gsi1"}}, `"USER#u" of the index gsi1`},
	} {
		rec := &recorder{TB: t}
		s.CheckPolicy(rec, "a role", tc.policy)
		if tc.want == "" && len(rec.errors) != 0 || tc.want != "" && (len(rec.errors) != 1 || !strings.Contains(rec.errors[0], tc.want)) {
			t.Errorf("%s: %q, want one error with %q", tc.name, rec.errors, tc.want)
		}
	}

	// A Query of the table, which only a statement on the index grants.
	s.ResetCalls()
	if _, err := s.Client.Query(ctx, &dynamodb.QueryInput{TableName: &s.Table,
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str("USER#u")}}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{TB: t}
	s.CheckPolicy(rec, "a role", iam.Policy{{Actions: query, Partitions: []string{"USER#*"}, Index: "gsi1"}})
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "dynamodb:Query on the table") {
		t.Errorf("a Query of the table granted on the index alone: %q", rec.errors)
	}
}
