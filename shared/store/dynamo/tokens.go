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

// Attributes of a token item that RevokeToken's and TouchToken's updates
// name.
const (
	attrRevoked    = "revoked"
	attrRevokedAt  = "revokedAt"
	attrLastUsedAt = "lastUsedAt"
)

// CreateToken writes the token at its hash, listed in gsi1 under its user by
// creation time, a pointer at its id, and the item that lists it in its
// user's partition (userTokenKey), in one transaction, each only if absent:
// Conflict when the hash or the id exists. An expiring token's items carry
// ttl, for DynamoDB's TTL to purge them after tokenRetention.
func (s *Store) CreateToken(ctx context.Context, t *sshdeck.Token) error {
	if err := checkNewToken(t); err != nil {
		return err
	}
	err := s.createToken(ctx, t)
	return wrap("create token", err)
}

// createToken is CreateToken's transaction.
func (s *Store) createToken(ctx context.Context, t *sshdeck.Token) error {
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: s.tokenWrites(t)})
	if conflict := tokenConflict(t, failedItem(err)); conflict != nil {
		return conflict
	}
	return err
}

// checkNewToken refuses a token CreateToken cannot store as it is: without
// its keys, or with an empty list of scopes that is not nil, which the item
// would leave out (an empty list is never stored) and which would read
// back as nil, every scope of the user: a token that may do nothing would
// come back as one that may do everything.
func checkNewToken(t *sshdeck.Token) error {
	if t.ID == "" || t.UserID == "" || t.Hash == "" {
		return errors.New("dynamo: create token: id, user id and hash are required")
	}
	if t.Scopes != nil && len(t.Scopes) == 0 {
		return sshdeck.Errorf(sshdeck.Invalid, "a token needs at least one scope")
	}
	return nil
}

// tokenWrites are the puts of a new token: at its hash (listed in gsi1),
// at its id, and in its user's partition, each only if absent.
func (s *Store) tokenWrites(t *sshdeck.Token) []types.TransactWriteItem {
	token := tokenKey(t.Hash).with(tokenAttrs(t))
	token[attrGSI1PK] = str(userKey(t.UserID).pk)
	token[attrGSI1SK] = str(tokenGSI1SK(t.CreatedAt, t.ID))
	pointer := tokenIDKey(t.ID).with(tokenPointerAttrs(t.Hash))
	listed := userTokenKey(t.UserID, t.ID).with(userTokenAttrs(t))
	if ttl, ok := tokenTTL(t.ExpiresAt); ok {
		token[attrTTL], pointer[attrTTL], listed[attrTTL] = ttl, ttl, ttl
	}
	return []types.TransactWriteItem{{Put: s.putNew(token)}, {Put: s.putNew(pointer)}, {Put: s.putNew(listed)}}
}

// tokenConflict is the Conflict of the failed item of tokenWrites, or nil.
func tokenConflict(t *sshdeck.Token, failed int) error {
	switch failed {
	case 0:
		// The hash is not echoed: it identifies a live credential.
		return sshdeck.Errorf(sshdeck.Conflict, "token hash exists")
	case 1, 2:
		return sshdeck.Errorf(sshdeck.Conflict, "token %q exists", t.ID)
	}
	return nil
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

// TouchToken sets the token's lastUsedAt to at, unless it is at or past at
// already: one UpdateItem of the token's item, `SET lastUsedAt = :at`
// conditioned `attribute_exists(pk) AND (attribute_not_exists(lastUsedAt)
// OR lastUsedAt < :at)`. lastUsedAt is fixed-width UTC to the nanosecond
// (sortableTime, like a lease's leaseUntil) so that the condition compares
// it as text in time order: two authorizers touching at once leave the
// later time, never the earlier. A failed condition returns the item as it
// was (ALL_OLD): none is NotFound, one a touch that had nothing to do. It
// names no other attribute: a revoked token stays revoked, its ttl and sv
// as they were.
func (s *Store) TouchToken(ctx context.Context, hash string, at time.Time) error {
	if at.IsZero() {
		return errors.New("dynamo: touch token: the time is required")
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                &s.table,
		Key:                      tokenKey(hash).attrs(),
		UpdateExpression:         aws.String("SET #used = :at"),
		ConditionExpression:      aws.String("attribute_exists(#pk) AND (attribute_not_exists(#used) OR #used < :at)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#used": attrLastUsedAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":at": str(sortableTime(at)),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, failed := failedOld(err); failed {
		if len(old) == 0 {
			return sshdeck.Errorf(sshdeck.NotFound, "token not found")
		}
		return nil // used at or after at already
	}
	return wrap("touch token", err)
}

// CreateTokenWithin stores t as CreateToken does, with the user's count
// of live tokens (tokenCounter, a live count: see counter.go): addCounted
// reads the user (a consistent GetItem: absent is NotFound, disabled
// Conflict), counts the user's listed tokens that have not expired at
// t.CreatedAt (a consistent Query of the userTokenKey items), and below the
// limit runs CreateToken's three puts with an update of the user item that
// moves tokenSeq on, only if it is still what was read and the user is not
// disabled. Of two concurrent creates, one fails its transaction and counts
// again: the count a create commits on is the count of the moment it
// commits, and no two creates pass the limit together. A revocation deletes
// its listing item, which only lowers a count: it needs no tokenSeq.
//
// Tokens made before the listing items existed are not listed, and not
// counted: revoke them (token revoke --all) to be exact.
func (s *Store) CreateTokenWithin(ctx context.Context, t *sshdeck.Token, limit int) error {
	if err := checkNewToken(t); err != nil {
		return err
	}
	name := t.UserID
	enabled := func(st *counterState, e *expr) error {
		if st.item == nil {
			return sshdeck.Errorf(sshdeck.NotFound, "user %q not found", t.UserID)
		}
		u, err := decodeUser(st.item)
		if err != nil {
			return err
		}
		if name = u.Name; u.Disabled {
			return sshdeck.Errorf(sshdeck.Conflict, "user %q is disabled", u.Name)
		}
		e.names["#pk"], e.names["#disabled"] = attrPK, attrDisabled
		e.values[":false"] = boolean(false)
		e.cond = append(e.cond, "attribute_exists(#pk)", "attribute_not_exists(#disabled) OR #disabled = :false")
		return nil
	}
	failed, err := s.addCounted(ctx, tokenCounter(t.UserID, t.CreatedAt), limit, s.tokenWrites(t), enabled)
	if conflict := tokenConflict(t, failed); conflict != nil {
		return conflict
	}
	if live, ok := reachedLimit(err); ok {
		return sshdeck.Errorf(sshdeck.LimitExceeded, "user %q has %d tokens that are neither revoked nor expired, the most one may have (the limit of tokens per user); revoke one first", name, live)
	}
	return wrap("create token", err)
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
	t, err := s.Token(ctx, id)
	if err != nil {
		return nil, false, err
	}
	notFound := sshdeck.Errorf(sshdeck.NotFound, "token %q not found", id)
	hash := t.Hash
	// readToken reads the token at the hash again: nil when TTL purged it.
	readToken := func() (*sshdeck.Token, error) {
		item, err := s.getItem(ctx, tokenKey(hash))
		if err != nil || item == nil {
			return nil, err
		}
		return decodeToken(item)
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

// Token reads the token with the id: the id item (a consistent GetItem)
// gives its hash, and the token is at the hash (another). NotFound when
// either is absent (TTL may purge them apart).
func (s *Store) Token(ctx context.Context, id string) (*sshdeck.Token, error) {
	notFound := sshdeck.Errorf(sshdeck.NotFound, "token %q not found", id)
	item, err := s.getItem(ctx, tokenIDKey(id))
	if err != nil {
		return nil, wrap("token", err)
	}
	if item == nil {
		return nil, notFound
	}
	hash, err := decodeTokenPointer(item)
	if err != nil {
		return nil, wrap("token", err)
	}
	if item, err = s.getItem(ctx, tokenKey(hash)); err != nil {
		return nil, wrap("token", err)
	}
	if item == nil {
		return nil, notFound
	}
	t, err := decodeToken(item)
	return t, wrap("token", err)
}

// RevokeUserTokens revokes, one by one (RevokeToken), the tokens listed in
// the user's partition (a consistent Query) and the unrevoked ones gsi1
// lists (Tokens: made before the listing items, or a moment ago and not in
// the index yet, which the first list has), and returns those it revoked.
func (s *Store) RevokeUserTokens(ctx context.Context, userID string, at time.Time, keep string) ([]*sshdeck.Token, error) {
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
		if id == keep {
			continue
		}
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
// (S, stamps, the last two absent when zero), revoked (BOOL), scopes (L of
// S, in the token's order; absent for a token made before scopes, nil) and
// lastUsedAt (S, fixed-width, see TouchToken; absent when never used).
func tokenAttrs(t *sshdeck.Token) map[string]types.AttributeValue {
	a := newAttrs(13)
	a["id"] = str(t.ID)
	a["userId"] = str(t.UserID)
	a["name"] = str(t.Name)
	a["hash"] = str(t.Hash)
	putTime(a, "createdAt", t.CreatedAt)
	putTime(a, "expiresAt", t.ExpiresAt)
	a[attrRevoked] = boolean(t.Revoked)
	putTime(a, attrRevokedAt, t.RevokedAt)
	putStrings(a, "scopes", scopeNames(t.Scopes))
	if !t.LastUsedAt.IsZero() {
		a[attrLastUsedAt] = str(sortableTime(t.LastUsedAt))
	}
	return a
}

// decodeToken reads the item of tokenAttrs, of any schema version: they
// are the same in 1 and 2 (scopes and lastUsedAt came within 2, and their
// absence means what it meant before them: README.md, "Schema versions").
func decodeToken(item map[string]types.AttributeValue) (*sshdeck.Token, error) {
	f, d := decode(item)
	t := &sshdeck.Token{
		ID: f.str("id"), UserID: f.str("userId"), Name: f.str("name"), Hash: f.str("hash"),
		CreatedAt: f.time("createdAt"), ExpiresAt: f.time("expiresAt"),
		Revoked: f.bool(attrRevoked), RevokedAt: f.time(attrRevokedAt),
		Scopes: scopesOf(f.strings("scopes")), LastUsedAt: f.time(attrLastUsedAt),
	}
	return decoded(t, d, "token")
}

// scopeNames are the scopes as the item's strings; nil for nil.
func scopeNames(scopes []sshdeck.Scope) []string {
	if scopes == nil {
		return nil
	}
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = string(sc)
	}
	return names
}

// scopesOf are the item's strings as scopes, unchecked (the store keeps
// what it was given); nil for none.
func scopesOf(names []string) []sshdeck.Scope {
	if names == nil {
		return nil
	}
	scopes := make([]sshdeck.Scope, len(names))
	for i, n := range names {
		scopes[i] = sshdeck.Scope(n)
	}
	return scopes
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
