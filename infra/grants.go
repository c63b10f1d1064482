package main

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/sshdeck/sshdeck/shared/store/dynamo/iam"
)

// grantTable lets role make exactly the calls of policy on the table and
// its index: each statement's actions on the items of its partitions only
// (dynamodb:LeadingKeys), on the table's ARN, or the index's
// (<table ARN>/index/gsi1) for a statement on the index (the routes that
// list a user's tokens: a grant on the table covers no index); and use the
// table's key as DynamoDB needs for them, through DynamoDB only
// (kms:ViaService): to read, and to write when an action writes.
func (d *Data) grantTable(role awsiam.IRole, policy iam.Policy) {
	for _, st := range policy {
		resource := *d.Table.TableArn()
		if st.Index != "" {
			resource += "/index/" + st.Index
		}
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(st.Actions...),
			Resources: jsii.Strings(resource),
			Conditions: &map[string]any{
				// ForAllValues: every partition key a call names (a
				// batch's or a transaction's, one each) must match.
				"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": st.Partitions},
			},
		}))
	}
	actions := policy.Actions()
	keyActions := []string{"kms:Decrypt", "kms:DescribeKey"}
	if slices.ContainsFunc(actions, func(a string) bool { return !slices.Contains(iam.ReadActions, a) }) {
		keyActions = append(keyActions, "kms:Encrypt", "kms:GenerateDataKey")
	}
	region := awscdk.Stack_Of(d.Table).Region()
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(keyActions...),
		Resources: jsii.Strings(*d.TableKey.KeyArn()),
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"kms:ViaService": "dynamodb." + *region + ".amazonaws.com"},
		},
	}))
}

// grantCredentials lets role make and open the data keys of credential
// envelopes (shared/secret's KMS keyring: GenerateDataKey and Decrypt,
// nothing else).
func (d *Data) grantCredentials(role awsiam.IRole) {
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("kms:GenerateDataKey", "kms:Decrypt"),
		Resources: jsii.Strings(*d.CredentialsKey.KeyArn()),
	}))
}
