package dynamo

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// CreateUser writes the user at its id and a copy at its name in one
// transaction, each only if absent: Conflict when the name is taken or the id
// exists. Users have no update: one that comes must write both items in one
// transaction too.
func (s *Store) CreateUser(ctx context.Context, u *sshdeck.User) error {
	if u.ID == "" || u.Name == "" {
		return errors.New("dynamo: create user: id and name are required")
	}
	attrs := userAttrs(u)
	// The name first: when both exist, the taken name is the better answer.
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Put: s.putNew(userNameKey(u.Name).with(attrs))},
			{Put: s.putNew(userKey(u.ID).with(attrs))},
		},
	})
	switch failedItem(err) {
	case 0:
		return sshdeck.Errorf(sshdeck.Conflict, "user name %q is taken", u.Name)
	case 1:
		return sshdeck.Errorf(sshdeck.Conflict, "user %q exists", u.ID)
	}
	return wrap("create user", err)
}

// User returns the user with the id (one consistent GetItem).
func (s *Store) User(ctx context.Context, id string) (*sshdeck.User, error) {
	item, err := s.getItem(ctx, userKey(id))
	if err != nil {
		return nil, wrap("user", err)
	}
	if item == nil {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "user %q not found", id)
	}
	u, err := decodeUser(item)
	return u, wrap("user", err)
}

// UserByName returns the user with the name (one consistent GetItem of the
// copy at the name).
func (s *Store) UserByName(ctx context.Context, name string) (*sshdeck.User, error) {
	var item map[string]types.AttributeValue
	// A key attribute cannot be empty: no user has the empty name.
	if name != "" {
		var err error
		if item, err = s.getItem(ctx, userNameKey(name)); err != nil {
			return nil, wrap("user by name", err)
		}
	}
	if item == nil {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "user %q not found", name)
	}
	u, err := decodeUser(item)
	return u, wrap("user by name", err)
}

// Users returns every user ordered by name: the USERNAMES partition in sort
// key order, read consistently.
func (s *Store) Users(ctx context.Context) ([]*sshdeck.User, error) {
	users, err := query(ctx, s, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(usersPK)},
		ConsistentRead:            aws.Bool(true),
	}, decodeUser)
	if err != nil {
		return nil, wrap("users", err)
	}
	return users, nil
}

// UpdateUser reads the user at its id (one consistent GetItem), then
// updates both of its items in one transaction, each only if it is still
// this user's (the id item at the name read, the name item at the id):
// the flags are never seen changed at one and not the other.
func (s *Store) UpdateUser(ctx context.Context, id string, change sshdeck.UserChange) (*sshdeck.User, error) {
	item, err := s.getItem(ctx, userKey(id))
	if err != nil {
		return nil, wrap("update user", err)
	}
	notFound := sshdeck.Errorf(sshdeck.NotFound, "user %q not found", id)
	if item == nil {
		return nil, notFound
	}
	u, err := decodeUser(item)
	if err != nil {
		return nil, wrap("update user", err)
	}
	if change.Disabled != nil {
		u.Disabled = *change.Disabled
	}
	if change.Admin != nil {
		u.Admin = *change.Admin
	}
	update := func(k key, attr, v string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{
			TableName:           &s.table,
			Key:                 k.attrs(),
			ConditionExpression: aws.String("attribute_exists(#pk) AND #owner = :v"),
			UpdateExpression:    aws.String("SET #admin = :admin, #disabled = :disabled"),
			ExpressionAttributeNames: map[string]string{
				"#pk": attrPK, "#admin": attrAdmin, "#disabled": attrDisabled, "#owner": attr,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":v": str(v), ":admin": boolean(u.Admin), ":disabled": boolean(u.Disabled),
			},
		}}
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			update(userKey(u.ID), "name", u.Name),
			update(userNameKey(u.Name), "id", u.ID),
		},
	})
	if failedItem(err) >= 0 {
		return nil, notFound
	}
	if err != nil {
		return nil, wrap("update user", err)
	}
	return u, nil
}

// Attributes of a user item that UpdateUser and CreateTokenWithin name.
const (
	attrAdmin    = "admin"
	attrDisabled = "disabled"
	// attrTokenSeq, on the item at the user's id only, counts the
	// CreateTokenWithin that succeeded: each one's transaction moves it
	// on only if it is where the count of the user's tokens found it.
	// It is the guard of the live count of tokens (tokenCounter, counter.go).
	attrTokenSeq = "tokenSeq"
)

// userAttrs is a user as stored, the same at its id and at its name: id
// (S), name (S), admin (BOOL), disabled (BOOL; left out when false, as in
// the items made before it), createdAt (S, a stamp). The item at the id
// also gets tokenSeq (N) from CreateTokenWithin.
func userAttrs(u *sshdeck.User) map[string]types.AttributeValue {
	a := newAttrs(5)
	a["id"] = str(u.ID)
	a["name"] = str(u.Name)
	a[attrAdmin] = boolean(u.Admin)
	if u.Disabled {
		a[attrDisabled] = boolean(true)
	}
	putTime(a, "createdAt", u.CreatedAt)
	return a
}

// decodeUser reads the item of userAttrs, of any schema version: they are
// the same in 1 and 2 (disabled came later, without a new version: its
// absence means what version 1 meant, an enabled user).
func decodeUser(item map[string]types.AttributeValue) (*sshdeck.User, error) {
	f, d := decode(item)
	u := &sshdeck.User{ID: f.str("id"), Name: f.str("name"), Admin: f.bool(attrAdmin), Disabled: f.bool(attrDisabled), CreatedAt: f.time("createdAt")}
	return decoded(u, d, "user")
}
