package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// keys returns the logical ids of the two KMS keys of the data: the
// table's (at rest) and the credentials' (envelopes), told apart by their
// descriptions. (The stack's other key is the alarm topic's.)
func (s *synthesis) keys(t *testing.T) (table, credentials string) {
	t.Helper()
	var tables, credentialKeys []string
	for _, id := range s.ids("AWS::KMS::Key") {
		description, _ := s.Resources[id].Properties["Description"].(string)
		switch {
		case strings.Contains(description, "table"):
			tables = append(tables, id)
		case strings.Contains(description, "credential"):
			credentialKeys = append(credentialKeys, id)
		}
	}
	if len(tables) != 1 || len(credentialKeys) != 1 {
		t.Fatalf("KMS keys %v: want one described as the table's (%v) and one as the credentials' (%v)", s.ids("AWS::KMS::Key"), tables, credentialKeys)
	}
	return tables[0], credentialKeys[0]
}

func TestTable(t *testing.T) {
	s := synthDefault(t)
	tableKey, _ := s.keys(t)
	must(t, "tables", func() { s.template.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1)) })
	key := func(name, typ string) map[string]any { return map[string]any{"AttributeName": name, "KeyType": typ} }
	must(t, "table", func() {
		s.template.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"BillingMode":                      "PAY_PER_REQUEST",
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"DeletionProtectionEnabled":        true,
			"SSESpecification": map[string]any{
				"SSEEnabled": true, "SSEType": "KMS",
				// The customer-managed key of the table, not AWS's nor the
				// credentials' one.
				"KMSMasterKeyId": map[string]any{"Fn::GetAtt": []any{tableKey, "Arn"}},
			},
			"TimeToLiveSpecification": map[string]any{"AttributeName": schema.TTL, "Enabled": true},
			// The new image of each change, for audit-events (audit.go).
			"StreamSpecification": map[string]any{"StreamViewType": "NEW_IMAGE"},
			// The keys dynamo.CreateTable makes, which the store's tests run on.
			"KeySchema": []any{key(schema.PartitionKey, "HASH"), key(schema.SortKey, "RANGE")},
			"GlobalSecondaryIndexes": []any{map[string]any{
				"IndexName":  schema.Index,
				"KeySchema":  []any{key(schema.IndexPartitionKey, "HASH"), key(schema.IndexSortKey, "RANGE")},
				"Projection": map[string]any{"ProjectionType": "ALL"},
			}},
		})
	})
	id, table := s.only(t, "AWS::DynamoDB::Table")
	var attributes []string
	for _, a := range list(table.Properties["AttributeDefinitions"]) {
		attributes = append(attributes, render(property(a, "AttributeName"))+":"+render(property(a, "AttributeType")))
	}
	slices.Sort(attributes)
	want := []string{schema.IndexPartitionKey + ":S", schema.IndexSortKey + ":S", schema.PartitionKey + ":S", schema.SortKey + ":S"}
	slices.Sort(want)
	if !slices.Equal(attributes, want) {
		t.Errorf("table %s attributes %v, want %v", id, attributes, want)
	}
	// Deleting the stack must not delete anyone's hosts.
	if table.DeletionPolicy != "Retain" || table.UpdateReplacePolicy != "Retain" {
		t.Errorf("table %s: DeletionPolicy %q, UpdateReplacePolicy %q; want Retain", id, table.DeletionPolicy, table.UpdateReplacePolicy)
	}
}

// TestKeys: every key (the table's, the credentials', the alarm topic's)
// rotates, outlives the stack, and no one but an AWS service (DynamoDB,
// for the table's) may create a grant on it.
func TestKeys(t *testing.T) {
	s := synthDefault(t)
	s.keys(t)
	if ids := s.ids("AWS::KMS::Key"); len(ids) != 3 {
		t.Errorf("KMS keys %v, want 3: the table's, the credentials' and the alarm topic's", ids)
	}
	for _, id := range s.ids("AWS::KMS::Key") {
		key := s.Resources[id]
		if key.Properties["EnableKeyRotation"] != true {
			t.Errorf("key %s does not rotate (EnableKeyRotation %v)", id, key.Properties["EnableKeyRotation"])
		}
		if key.DeletionPolicy != "Retain" || key.UpdateReplacePolicy != "Retain" {
			t.Errorf("key %s: DeletionPolicy %q, UpdateReplacePolicy %q; want Retain", id, key.DeletionPolicy, key.UpdateReplacePolicy)
		}
		if !slices.ContainsFunc(parseStatements(key.Properties["KeyPolicy"]), deniesGrantsToNonAWS) {
			t.Errorf("key %s: no key policy statement denies kms:CreateGrant to everyone unless the grant is for an AWS resource", id)
		}
	}
}

func deniesGrantsToNonAWS(st statement) bool {
	principal := property(st.Principal, "AWS")
	if st.Principal == "*" {
		principal = "*"
	}
	condition := property(st.Condition, "BoolIfExists", "kms:GrantIsForAWSResource")
	if condition == nil {
		condition = property(st.Condition, "Bool", "kms:GrantIsForAWSResource")
	}
	return st.Effect == "Deny" && slices.Contains(st.Action, "kms:CreateGrant") && principal == "*" && condition == "false"
}
