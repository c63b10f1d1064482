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
	writes := slices.ContainsFunc(policy.Actions(), func(a string) bool { return !slices.Contains(iam.ReadActions, a) })
	d.grantTableKey(role, writes)
}

// grantTableKey lets role use the table's key as DynamoDB needs for its
// calls, through DynamoDB only (kms:ViaService): to read (the table, or
// its stream, which DynamoDB encrypts with the table's key), and to write
// when writes.
func (d *Data) grantTableKey(role awsiam.IRole, writes bool) {
	keyActions := []string{"kms:Decrypt", "kms:DescribeKey"}
	if writes {
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

// grantStreamRead lets role read the table's stream, as a Lambda event
// source mapping of it needs (its role's, not the mapping's own): the
// stream's records and shards on the stream's ARN alone, and ListStreams,
// whose IAM resource is the table's streams (AWS's documented policy for
// a function of a stream names <table ARN>/stream/*); and the table's key
// to decrypt the records, through DynamoDB. Nothing of the table itself.
func (d *Data) grantStreamRead(role awsiam.IRole) {
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"),
		Resources: jsii.Strings(*d.Table.TableStreamArn()),
	}))
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:ListStreams"),
		Resources: jsii.Strings(*d.Table.TableArn() + "/stream/*"),
	}))
	d.grantTableKey(role, false)
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
