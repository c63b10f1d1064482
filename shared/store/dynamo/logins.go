package dynamo

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// LoginSecrets returns the user's login secrets: one consistent GetItem of
// loginKey, as a login that just changed them must see the change (and a
// TOTP code spent must stay spent).
func (s *Store) LoginSecrets(ctx context.Context, userID string) (*sshdeck.LoginSecrets, error) {
	var item map[string]types.AttributeValue
	// A key attribute cannot be empty: no user has the empty id.
	if userID != "" {
		var err error
		if item, err = s.getItem(ctx, loginKey(userID)); err != nil {
			return nil, wrap("login secrets", err)
		}
	}
	if item == nil {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "user %q has no login secrets", userID)
	}
	ls, err := decodeLoginSecrets(item)
	return ls, wrap("login secrets", err)
}

// PutLoginSecrets puts ls over the user's login secrets if the stored ones
// are of version ls.Version-1: one PutItem, conditioned
// attribute_not_exists(pk) for version 1 and `version = :prev` after. A
// failed condition is Conflict, whatever is stored (none, or another
// version): DynamoDB applies conditional writes of one item one at a time,
// so of concurrent writers of one version exactly one wins, and two logins
// cannot both spend one TOTP code.
func (s *Store) PutLoginSecrets(ctx context.Context, ls *sshdeck.LoginSecrets) error {
	if ls.UserID == "" || ls.Version < 1 {
		return errors.New("dynamo: put login secrets: user id and a version from 1 are required")
	}
	in := &dynamodb.PutItemInput{
		TableName:                &s.table,
		Item:                     loginKey(ls.UserID).with(loginSecretsAttrs(ls)),
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}
	if ls.Version > 1 {
		in.ConditionExpression = aws.String("#version = :prev")
		in.ExpressionAttributeNames = map[string]string{"#version": attrVersion}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":prev": num(ls.Version - 1)}
	}
	_, err := s.client.PutItem(ctx, in)
	if conditionFailed(err) {
		return sshdeck.Errorf(sshdeck.Conflict, "login secrets of user %q changed meanwhile", ls.UserID)
	}
	return wrap("put login secrets", err)
}

// loginSecretsAttrs is a user's login secrets as stored: userId (S),
// passwordHash (S, absent when none), totp and pendingTotp (B, sealed,
// absent when none), totpStep (N, absent when 0), version (N), updatedAt (S,
// a stamp).
func loginSecretsAttrs(ls *sshdeck.LoginSecrets) map[string]types.AttributeValue {
	a := newAttrs(7)
	a["userId"] = str(ls.UserID)
	if ls.PasswordHash != "" {
		a["passwordHash"] = str(ls.PasswordHash)
	}
	putBytes(a, "totp", ls.TOTP)
	putBytes(a, "pendingTotp", ls.PendingTOTP)
	if ls.TOTPStep != 0 {
		a["totpStep"] = num(ls.TOTPStep)
	}
	a[attrVersion] = num(ls.Version)
	putTime(a, "updatedAt", ls.UpdatedAt)
	return a
}

// decodeLoginSecrets reads the item of loginSecretsAttrs (written since
// version 2 only).
func decodeLoginSecrets(item map[string]types.AttributeValue) (*sshdeck.LoginSecrets, error) {
	f, d := decode(item)
	ls := &sshdeck.LoginSecrets{
		UserID: f.str("userId"), PasswordHash: f.str("passwordHash"),
		TOTP: f.bytes("totp"), PendingTOTP: f.bytes("pendingTotp"), TOTPStep: f.int64("totpStep"),
		Version: f.int64(attrVersion), UpdatedAt: f.time("updatedAt"),
	}
	return decoded(ls, d, "login secrets")
}
