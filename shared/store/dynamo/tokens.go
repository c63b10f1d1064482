package dynamo

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// tokenPointer is the item at a token's id: where to find the token.
type tokenPointer struct {
	Hash string `json:"hash"`
}

// CreateToken writes the token at its hash, listed in gsi1 under its user by
// creation time, and a pointer at its id, in one transaction, each only if
// absent: Conflict when the hash or the id exists. An expiring token's items
// carry ttl, for DynamoDB's TTL to purge them after tokenRetention.
func (s *Store) CreateToken(ctx context.Context, t *sshdeck.Token) error {
	if t.ID == "" || t.UserID == "" || t.Hash == "" {
		return errors.New("dynamo: create token: id, user id and hash are required")
	}
	attrs, err := marshal(t)
	if err != nil {
		return wrap("create token", err)
	}
	token := tokenKey(t.Hash).with(attrs)
	token[attrGSI1PK] = str(userKey(t.UserID).pk)
	token[attrGSI1SK] = str(tokenGSI1SK(t.CreatedAt, t.ID))
	pointerAttrs, err := marshal(tokenPointer{Hash: t.Hash})
	if err != nil {
		return wrap("create token", err)
	}
	pointer := tokenIDKey(t.ID).with(pointerAttrs)
	if ttl, ok := tokenTTL(t.ExpiresAt); ok {
		token[attrTTL], pointer[attrTTL] = ttl, ttl
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{{Put: s.putNew(token)}, {Put: s.putNew(pointer)}},
	})
	switch failedItem(err) {
	case 0:
		// The hash is not echoed: it identifies a live credential.
		return sshdeck.Errorf(sshdeck.Conflict, "token hash exists")
	case 1:
		return sshdeck.Errorf(sshdeck.Conflict, "token %q exists", t.ID)
	}
	return wrap("create token", err)
}

// TokenByHash returns the token with the hash: one consistent GetItem, as it
// is the authorizer's every cache miss.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*sshdeck.Token, error) {
	var t sshdeck.Token
	found, err := s.get(ctx, tokenKey(hash), &t)
	if err != nil {
		return nil, wrap("token by hash", err)
	}
	if !found {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "token not found")
	}
	return &t, nil
}

// RevokeToken follows the id's pointer to the token and marks it revoked in
// one UpdateItem; if_not_exists keeps the first revocation time.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (*sshdeck.Token, error) {
	if at.IsZero() {
		return nil, errors.New("dynamo: revoke token: the revocation time is required")
	}
	var p tokenPointer
	found, err := s.get(ctx, tokenIDKey(id), &p)
	if err != nil {
		return nil, wrap("revoke token", err)
	}
	notFound := sshdeck.Errorf(sshdeck.NotFound, "token %q not found", id)
	if !found {
		return nil, notFound
	}
	revokedAt, err := encodeTime(at)
	if err != nil {
		return nil, wrap("revoke token", err)
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           &s.table,
		Key:                 tokenKey(p.Hash).attrs(),
		ConditionExpression: aws.String("attribute_exists(#pk)"),
		UpdateExpression:    aws.String("SET #revoked = :true, #revokedAt = if_not_exists(#revokedAt, :at)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": attrPK, "#revoked": "revoked", "#revokedAt": "revokedAt",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":true": &types.AttributeValueMemberBOOL{Value: true},
			":at":   revokedAt,
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if conditionFailed(err) {
		return nil, notFound // purged by TTL since the pointer was read
	}
	if err != nil {
		return nil, wrap("revoke token", err)
	}
	var t sshdeck.Token
	if err := unmarshal(out.Attributes, &t); err != nil {
		return nil, wrap("revoke token", err)
	}
	return &t, nil
}

// Tokens returns the user's tokens ordered by creation time, then id: the
// user's gsi1 partition in sort key order. An index is eventually
// consistent: a token created or revoked a moment ago may not show so yet.
func (s *Store) Tokens(ctx context.Context, userID string) ([]*sshdeck.Token, error) {
	tokens, err := query[sshdeck.Token](ctx, s, &dynamodb.QueryInput{
		IndexName:                aws.String(indexGSI1),
		KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :token)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrGSI1PK, "#sk": attrGSI1SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(userKey(userID).pk), ":token": str(tokenGSI1SKPrefix),
		},
	})
	if err != nil {
		return nil, wrap("tokens", err)
	}
	return tokens, nil
}
