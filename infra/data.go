package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// Data is what sshdeck keeps: the table, the key DynamoDB encrypts it with
// at rest, and the key that wraps the data keys of credential envelopes.
// Two keys, so that a function that never sees a credential can be given
// the table's key (usable only through DynamoDB) without the credentials'.
// All three outlive the stack: deleting it must not delete anyone's hosts.
type Data struct {
	Table          awsdynamodb.Table
	TableKey       awskms.Key
	CredentialsKey awskms.Key
}

func newData(scope constructs.Construct) *Data {
	d := &Data{
		TableKey:       newKey(scope, "TableKey", "sshdeck: encrypts the DynamoDB table at rest"),
		CredentialsKey: newKey(scope, "CredentialsKey", "sshdeck: wraps the data keys of credential envelopes (host and tunnel passwords and keys)"),
	}
	str := func(name string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
	}
	// The schema of dynamo.CreateTable, which the store's tests run on.
	d.Table = awsdynamodb.NewTable(scope, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: str(schema.PartitionKey),
		SortKey:      str(schema.SortKey),
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		Encryption:          awsdynamodb.TableEncryption_CUSTOMER_MANAGED,
		EncryptionKey:       d.TableKey,
		DeletionProtection:  jsii.Bool(true),
		TimeToLiveAttribute: jsii.String(schema.TTL),
		RemovalPolicy:       awscdk.RemovalPolicy_RETAIN,
		// Each item's new image on its change, for the audit-events
		// function, which reads the audit records there (audit.go): it
		// needs nothing of the old images, and no access to the table.
		Stream: awsdynamodb.StreamViewType_NEW_IMAGE,
	})
	d.Table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(schema.Index),
		PartitionKey:   str(schema.IndexPartitionKey),
		SortKey:        str(schema.IndexSortKey),
		ProjectionType: awsdynamodb.ProjectionType_ALL,
	})
	return d
}

// newKey is a symmetric key with yearly rotation that only AWS services
// may create grants on (DynamoDB does, for the table's key): nobody can hand
// its use to another principal with a grant.
func newKey(scope constructs.Construct, id, description string) awskms.Key {
	key := awskms.NewKey(scope, jsii.String(id), &awskms.KeyProps{
		Description:       jsii.String(description),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
	})
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("GrantsForAWSServicesOnly"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("kms:CreateGrant"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]any{
			"BoolIfExists": map[string]any{"kms:GrantIsForAWSResource": "false", "aws:PrincipalIsAWSService": "false"},
		},
	}), nil)
	return key
}
