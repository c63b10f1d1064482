package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// CreateAlert puts the alert only if its id is free: one PutItem, Conflict
// when it exists. The item carries ttl, its expiry, for DynamoDB's TTL to
// purge it some time after.
func (s *Store) CreateAlert(ctx context.Context, a *sshdeck.Alert) error {
	attrs, err := marshal(a)
	if err != nil {
		return wrap("create alert", err)
	}
	item := alertKey(a.ID).with(attrs)
	if ttl, ok := expiryTTL(a.ExpiresAt); ok {
		item[attrTTL] = ttl
	}
	exists, err := s.putIfAbsent(ctx, item)
	if exists {
		return sshdeck.Errorf(sshdeck.Conflict, "alert %s exists", a.ID)
	}
	return wrap("create alert", err)
}

// Alerts returns the alerts not expired at now, ordered by id: a consistent
// Query of the ALERTS partition (every page) in sort key order, which is the
// ids' byte order. Expired alerts are dropped here, as TTL purges them
// only days late: not by a FilterExpression, as the times are RFC 3339
// strings without trailing zeros, whose byte order is not time order (and a
// filter saves no read units).
func (s *Store) Alerts(ctx context.Context, now time.Time) ([]*sshdeck.Alert, error) {
	all, err := query[sshdeck.Alert](ctx, s, prefixQuery(alertsPK, alertSKPrefix))
	if err != nil {
		return nil, wrap("alerts", err)
	}
	live := make([]*sshdeck.Alert, 0, len(all))
	for _, a := range all {
		if !a.Expired(now) {
			live = append(live, a)
		}
	}
	return live, nil
}

// DeleteAlert removes the alert: one DeleteItem conditioned on its existing,
// NotFound when absent. Users' dismissals of it stay until their TTL: they
// hide an alert that is no longer there.
func (s *Store) DeleteAlert(ctx context.Context, id string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                &s.table,
		Key:                      alertKey(id).attrs(),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	if conditionFailed(err) {
		return sshdeck.Errorf(sshdeck.NotFound, "alert %s not found", id)
	}
	return wrap("delete alert", err)
}

// DismissAlert puts the dismissal in the user's partition, replacing the
// user's earlier one of the alert: one PutItem. ttl is its Until, after
// which it hides nothing.
func (s *Store) DismissAlert(ctx context.Context, d *sshdeck.Dismissal) error {
	attrs, err := marshal(d)
	if err != nil {
		return wrap("dismiss alert", err)
	}
	item := dismissalKey(d.UserID, d.AlertID).with(attrs)
	if ttl, ok := expiryTTL(d.Until); ok {
		item[attrTTL] = ttl
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item})
	return wrap("dismiss alert", err)
}

// Dismissals returns the user's dismissals in force at now, ordered by
// alert id: a consistent Query of the DISMISSED# sort keys of the user's
// partition (every page); those past Until are dropped here, as in Alerts.
func (s *Store) Dismissals(ctx context.Context, userID string, now time.Time) ([]*sshdeck.Dismissal, error) {
	all, err := query[sshdeck.Dismissal](ctx, s, prefixQuery(userKey(userID).pk, dismissalSKPrefix))
	if err != nil {
		return nil, wrap("dismissals", err)
	}
	live := make([]*sshdeck.Dismissal, 0, len(all))
	for _, d := range all {
		if now.Before(d.Until) {
			live = append(live, d)
		}
	}
	return live, nil
}
