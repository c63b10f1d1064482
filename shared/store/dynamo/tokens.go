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

// Attributes of a token item that RevokeToken's update names.
const (
	attrRevoked   = "revoked"
	attrRevokedAt = "revokedAt"
)

// CreateToken writes the token at its hash, listed in gsi1 under its user by
// creation time, and a pointer at its id, in one transaction, each only if
// absent: Conflict when the hash or the id exists. An expiring token's items
// carry ttl, for DynamoDB's TTL to purge them after tokenRetention.
func (s *Store) CreateToken(ctx context.Context, t *sshdeck.Token) error {
	if t.ID == "" || t.UserID == "" || t.Hash == "" {
		return errors.New("dynamo: create token: id, user id and hash are required")
	}
	token := tokenKey(t.Hash).with(tokenAttrs(t))
	token[attrGSI1PK] = str(userKey(t.UserID).pk)
	token[attrGSI1SK] = str(tokenGSI1SK(t.CreatedAt, t.ID))
	pointer := tokenIDKey(t.ID).with(tokenPointerAttrs(t.Hash))
	if ttl, ok := tokenTTL(t.ExpiresAt); ok {
		token[attrTTL], pointer[attrTTL] = ttl, ttl
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
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
	item, err := s.getItem(ctx, tokenKey(hash))
	if err != nil {
		return nil, wrap("token by hash", err)
	}
	if item == nil {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "token not found")
	}
	t, err := decodeToken(item)
	return t, wrap("token by hash", err)
}

// RevokeToken follows the id's pointer to the token and marks it revoked in
// one UpdateItem; if_not_exists keeps the first revocation time.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (*sshdeck.Token, error) {
	if at.IsZero() {
		return nil, errors.New("dynamo: revoke token: the revocation time is required")
	}
	item, err := s.getItem(ctx, tokenIDKey(id))
	if err != nil {
		return nil, wrap("revoke token", err)
	}
	notFound := sshdeck.Errorf(sshdeck.NotFound, "token %q not found", id)
	if item == nil {
		return nil, notFound
	}
	hash, err := decodeTokenPointer(item)
	if err != nil {
		return nil, wrap("revoke token", err)
	}
	// Two attributes of a token of any schema version, the same in each:
	// sv stays as it was.
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           &s.table,
		Key:                 tokenKey(hash).attrs(),
		ConditionExpression: aws.String("attribute_exists(#pk)"),
		UpdateExpression:    aws.String("SET #revoked = :true, #revokedAt = if_not_exists(#revokedAt, :at)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": attrPK, "#revoked": attrRevoked, "#revokedAt": attrRevokedAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":true": boolean(true),
			":at":   stamp(at),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if conditionFailed(err) {
		return nil, notFound // purged by TTL since the pointer was read
	}
	if err != nil {
		return nil, wrap("revoke token", err)
	}
	t, err := decodeToken(out.Attributes)
	return t, wrap("revoke token", err)
}

// Tokens returns the user's tokens ordered by creation time, then id: the
// user's gsi1 partition in sort key order. An index is eventually
// consistent: a token created or revoked a moment ago may not show so yet.
func (s *Store) Tokens(ctx context.Context, userID string) ([]*sshdeck.Token, error) {
	tokens, err := query(ctx, s, &dynamodb.QueryInput{
		IndexName:                aws.String(indexGSI1),
		KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :token)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrGSI1PK, "#sk": attrGSI1SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(userKey(userID).pk), ":token": str(tokenGSI1SKPrefix),
		},
	}, decodeToken)
	if err != nil {
		return nil, wrap("tokens", err)
	}
	return tokens, nil
}

// tokenAttrs is a token as stored at its hash (CreateToken adds the index
// keys and ttl): id, userId, name, hash (S), createdAt, expiresAt, revokedAt
// (S, stamps, the last two absent when zero), revoked (BOOL).
func tokenAttrs(t *sshdeck.Token) map[string]types.AttributeValue {
	a := newAttrs(11)
	a["id"] = str(t.ID)
	a["userId"] = str(t.UserID)
	a["name"] = str(t.Name)
	a["hash"] = str(t.Hash)
	putTime(a, "createdAt", t.CreatedAt)
	putTime(a, "expiresAt", t.ExpiresAt)
	a[attrRevoked] = boolean(t.Revoked)
	putTime(a, attrRevokedAt, t.RevokedAt)
	return a
}

// decodeToken reads the item of tokenAttrs, of any schema version: they
// are the same in 1 and 2.
func decodeToken(item map[string]types.AttributeValue) (*sshdeck.Token, error) {
	f, d := decode(item)
	t := &sshdeck.Token{
		ID: f.str("id"), UserID: f.str("userId"), Name: f.str("name"), Hash: f.str("hash"),
		CreatedAt: f.time("createdAt"), ExpiresAt: f.time("expiresAt"),
		Revoked: f.bool(attrRevoked), RevokedAt: f.time(attrRevokedAt),
	}
	return decoded(t, d, "token")
}

// tokenPointerAttrs is the item at a token's id (CreateToken adds ttl):
// where to find the token, hash (S).
func tokenPointerAttrs(hash string) map[string]types.AttributeValue {
	a := newAttrs(2)
	a["hash"] = str(hash)
	return a
}

func decodeTokenPointer(item map[string]types.AttributeValue) (string, error) {
	f, d := decode(item)
	hash := f.str("hash")
	return hash, d.done("token id")
}
