package dynamo

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
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
// creation time, a pointer at its id, and the item that lists it in its
// user's partition (userTokenKey), in one transaction, each only if absent:
// Conflict when the hash or the id exists. An expiring token's items carry
// ttl, for DynamoDB's TTL to purge them after tokenRetention.
func (s *Store) CreateToken(ctx context.Context, t *sshdeck.Token) error {
	if t.ID == "" || t.UserID == "" || t.Hash == "" {
		return errors.New("dynamo: create token: id, user id and hash are required")
	}
	err := s.createToken(ctx, t, nil)
	return wrap("create token", err)
}

// errGuard is the failure of the guard item of createToken's transaction.
var errGuard = errors.New("dynamo: the guard of the token's transaction failed")

// createToken is CreateToken's transaction, with guard (when not nil) as
// its last item: errGuard when the guard's condition failed.
func (s *Store) createToken(ctx context.Context, t *sshdeck.Token, guard *types.Update) error {
	token := tokenKey(t.Hash).with(tokenAttrs(t))
	token[attrGSI1PK] = str(userKey(t.UserID).pk)
	token[attrGSI1SK] = str(tokenGSI1SK(t.CreatedAt, t.ID))
	pointer := tokenIDKey(t.ID).with(tokenPointerAttrs(t.Hash))
	listed := userTokenKey(t.UserID, t.ID).with(userTokenAttrs(t))
	if ttl, ok := tokenTTL(t.ExpiresAt); ok {
		token[attrTTL], pointer[attrTTL], listed[attrTTL] = ttl, ttl, ttl
	}
	items := []types.TransactWriteItem{{Put: s.putNew(token)}, {Put: s.putNew(pointer)}, {Put: s.putNew(listed)}}
	if guard != nil {
		items = append(items, types.TransactWriteItem{Update: guard})
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	switch failedItem(err) {
	case 0:
		// The hash is not echoed: it identifies a live credential.
		return sshdeck.Errorf(sshdeck.Conflict, "token hash exists")
	case 1, 2:
		return sshdeck.Errorf(sshdeck.Conflict, "token %q exists", t.ID)
	case 3:
		return errGuard
	}
	return err
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

// tokenAttempts bounds how often CreateTokenWithin counts again after
// another create for the same user won the race.
const tokenAttempts = 5

// CreateTokenWithin reads the user (a consistent GetItem: absent, disabled,
// and its tokenSeq), counts the user's listed tokens that have not expired
// at t.CreatedAt (a consistent Query of userTokenKey items), and below the
// limit runs CreateToken's transaction with a fourth item: an update of the
// user item that moves tokenSeq on, only if it is still what was read and
// the user is not disabled. Two concurrent creates both read the same
// tokenSeq, so one of them fails its transaction and counts again: the
// count a create commits on is the count of the moment it commits, and no
// two creates pass the limit together. A revocation deletes its listing
// item, which only lowers a count: it needs no tokenSeq.
//
// Tokens made before the listing items existed are not listed, and not
// counted: revoke them (token revoke --all) to be exact.
func (s *Store) CreateTokenWithin(ctx context.Context, t *sshdeck.Token, limit int) error {
	if t.ID == "" || t.UserID == "" || t.Hash == "" {
		return errors.New("dynamo: create token: id, user id and hash are required")
	}
	for range tokenAttempts {
		item, err := s.getItem(ctx, userKey(t.UserID))
		if err != nil {
			return wrap("create token", err)
		}
		if item == nil {
			return sshdeck.Errorf(sshdeck.NotFound, "user %q not found", t.UserID)
		}
		u, err := decodeUser(item)
		if err != nil {
			return wrap("create token", err)
		}
		f, d := decode(item)
		seq := f.int64(attrTokenSeq)
		if err := d.done("user"); err != nil {
			return wrap("create token", err)
		}
		if u.Disabled {
			return sshdeck.Errorf(sshdeck.Conflict, "user %q is disabled", u.Name)
		}
		live, err := s.liveTokens(ctx, t.UserID, t.CreatedAt)
		if err != nil {
			return wrap("create token", err)
		}
		if live >= limit {
			return sshdeck.Errorf(sshdeck.LimitExceeded, "user %q has %d tokens that are neither revoked nor expired, the most one may have (the limit of tokens per user); revoke one first", u.Name, live)
		}
		guard := &types.Update{
			TableName:           &s.table,
			Key:                 userKey(t.UserID).attrs(),
			ConditionExpression: aws.String("attribute_exists(#pk) AND (attribute_not_exists(#disabled) OR #disabled = :false) AND #seq = :seq"),
			UpdateExpression:    aws.String("SET #seq = :next"),
			ExpressionAttributeNames: map[string]string{
				"#pk": attrPK, "#disabled": attrDisabled, "#seq": attrTokenSeq,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":false": boolean(false), ":seq": num(seq), ":next": num(seq + 1),
			},
		}
		if seq == 0 {
			guard.ConditionExpression = aws.String("attribute_exists(#pk) AND (attribute_not_exists(#disabled) OR #disabled = :false) AND attribute_not_exists(#seq)")
			delete(guard.ExpressionAttributeValues, ":seq")
		}
		err = s.createToken(ctx, t, guard)
		if err != errGuard {
			return wrap("create token", err)
		}
	}
	return sshdeck.Errorf(sshdeck.Conflict, "tokens of user %q are being created concurrently; try again", t.UserID)
}

// liveTokens counts the user's listed tokens that have not expired at now:
// one consistent Query of the userTokenKey items (of which a revoked token
// has none), their sort keys and expiry only.
func (s *Store) liveTokens(ctx context.Context, userID string, now time.Time) (int, error) {
	in := prefixQuery(userKey(userID).pk, userTokenSKPrefix)
	in.ProjectionExpression = aws.String("#sk, #expiresAt")
	in.ExpressionAttributeNames["#expiresAt"] = "expiresAt"
	expiries, err := query(ctx, s, in, func(item map[string]types.AttributeValue) (time.Time, error) {
		f, d := decode(item)
		exp := f.time("expiresAt")
		return exp, d.done("listed token")
	})
	if err != nil {
		return 0, err
	}
	live := 0
	for _, exp := range expiries {
		if exp.IsZero() || now.Before(exp) {
			live++
		}
	}
	return live, nil
}

// RevokeToken follows the id's pointer to the token, reads it, and unless
// it is revoked already marks it revoked and deletes its listing item in
// one transaction. The update is conditioned on no revokedAt, so that of
// two concurrent revocations the first time is kept and both answer it.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (*sshdeck.Token, error) {
	t, _, err := s.revoke(ctx, id, at)
	return t, err
}

// revoke is RevokeToken, telling whether this call revoked the token.
func (s *Store) revoke(ctx context.Context, id string, at time.Time) (*sshdeck.Token, bool, error) {
	if at.IsZero() {
		return nil, false, errors.New("dynamo: revoke token: the revocation time is required")
	}
	item, err := s.getItem(ctx, tokenIDKey(id))
	if err != nil {
		return nil, false, wrap("revoke token", err)
	}
	notFound := sshdeck.Errorf(sshdeck.NotFound, "token %q not found", id)
	if item == nil {
		return nil, false, notFound
	}
	hash, err := decodeTokenPointer(item)
	if err != nil {
		return nil, false, wrap("revoke token", err)
	}
	// readToken reads the token at the hash: nil when TTL purged it since
	// the pointer was read.
	readToken := func() (*sshdeck.Token, error) {
		item, err := s.getItem(ctx, tokenKey(hash))
		if err != nil || item == nil {
			return nil, err
		}
		return decodeToken(item)
	}
	t, err := readToken()
	if err != nil {
		return nil, false, wrap("revoke token", err)
	}
	if t == nil {
		return nil, false, notFound
	}
	if t.Revoked {
		return t, false, nil
	}
	// Two attributes of a token of any schema version, the same in each:
	// sv stays as it was.
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{
				TableName:           &s.table,
				Key:                 tokenKey(hash).attrs(),
				ConditionExpression: aws.String("attribute_exists(#pk) AND attribute_not_exists(#revokedAt)"),
				UpdateExpression:    aws.String("SET #revoked = :true, #revokedAt = :at"),
				ExpressionAttributeNames: map[string]string{
					"#pk": attrPK, "#revoked": attrRevoked, "#revokedAt": attrRevokedAt,
				},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":true": boolean(true),
					":at":   stamp(at),
				},
			}},
			{Delete: &types.Delete{TableName: &s.table, Key: userTokenKey(t.UserID, t.ID).attrs()}},
		},
	})
	if failedItem(err) == 0 {
		// Revoked (or purged) since it was read: answer what is there.
		if t, err = readToken(); err != nil {
			return nil, false, wrap("revoke token", err)
		}
		if t == nil {
			return nil, false, notFound
		}
		return t, false, nil
	}
	if err != nil {
		return nil, false, wrap("revoke token", err)
	}
	t.Revoked, t.RevokedAt = true, at
	return t, true, nil
}

// RevokeUserTokens revokes, one by one (RevokeToken), the tokens listed in
// the user's partition (a consistent Query) and the unrevoked ones gsi1
// lists (Tokens: made before the listing items, or a moment ago and not in
// the index yet, which the first list has), and returns those it revoked.
func (s *Store) RevokeUserTokens(ctx context.Context, userID string, at time.Time) ([]*sshdeck.Token, error) {
	in := prefixQuery(userKey(userID).pk, userTokenSKPrefix)
	in.ProjectionExpression = aws.String("#sk")
	listed, err := query(ctx, s, in, func(item map[string]types.AttributeValue) (string, error) {
		f, d := decode(item)
		sk := f.str(attrSK)
		return strings.TrimPrefix(sk, userTokenSKPrefix), d.done("listed token")
	})
	if err != nil {
		return nil, wrap("revoke user tokens", err)
	}
	indexed, err := s.Tokens(ctx, userID)
	if err != nil {
		return nil, err
	}
	ids := listed
	for _, t := range indexed {
		if !t.Revoked && !slices.Contains(ids, t.ID) {
			ids = append(ids, t.ID)
		}
	}
	revoked := []*sshdeck.Token{}
	for _, id := range ids {
		t, changed, err := s.revoke(ctx, id, at)
		if sshdeck.ErrorCode(err) == sshdeck.NotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		if changed {
			revoked = append(revoked, t)
		}
	}
	slices.SortFunc(revoked, func(a, b *sshdeck.Token) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return revoked, nil
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

// userTokenAttrs is the item that lists a token in its user's partition
// (CreateToken adds ttl): id (S) and expiresAt (S, a stamp; absent for a
// token that never expires).
func userTokenAttrs(t *sshdeck.Token) map[string]types.AttributeValue {
	a := newAttrs(2)
	a["id"] = str(t.ID)
	putTime(a, "expiresAt", t.ExpiresAt)
	return a
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
