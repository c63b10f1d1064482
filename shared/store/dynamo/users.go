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
	attrs, err := marshal(u)
	if err != nil {
		return wrap("create user", err)
	}
	// The name first: when both exist, the taken name is the better answer.
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
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
	var u sshdeck.User
	found, err := s.get(ctx, userKey(id), &u)
	if err != nil {
		return nil, wrap("user", err)
	}
	if !found {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "user %q not found", id)
	}
	return &u, nil
}

// UserByName returns the user with the name (one consistent GetItem of the
// copy at the name).
func (s *Store) UserByName(ctx context.Context, name string) (*sshdeck.User, error) {
	var u sshdeck.User
	found := false
	// A key attribute cannot be empty: no user has the empty name.
	if name != "" {
		var err error
		if found, err = s.get(ctx, userNameKey(name), &u); err != nil {
			return nil, wrap("user by name", err)
		}
	}
	if !found {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "user %q not found", name)
	}
	return &u, nil
}

// Users returns every user ordered by name: the USERNAMES partition in sort
// key order, read consistently.
func (s *Store) Users(ctx context.Context) ([]*sshdeck.User, error) {
	users, err := query[sshdeck.User](ctx, s, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(usersPK)},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return nil, wrap("users", err)
	}
	return users, nil
}
