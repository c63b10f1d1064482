package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// CreateAlert puts the alert only if its id is free: one PutItem, Conflict
// when it exists. The item carries ttl, its expiry, for DynamoDB's TTL to
// purge it some time after.
func (s *Store) CreateAlert(ctx context.Context, a *sshdeck.Alert) error {
	item := alertKey(a.ID).with(alertAttrs(a))
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
	all, err := query(ctx, s, prefixQuery(alertsPK, alertSKPrefix), decodeAlert)
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
	item := dismissalKey(d.UserID, d.AlertID).with(dismissalAttrs(d))
	if ttl, ok := expiryTTL(d.Until); ok {
		item[attrTTL] = ttl
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item})
	return wrap("dismiss alert", err)
}

// Dismissals returns the user's dismissals in force at now, ordered by
// alert id: a consistent Query of the DISMISSED# sort keys of the user's
// partition (every page); those past Until are dropped here, as in Alerts.
func (s *Store) Dismissals(ctx context.Context, userID string, now time.Time) ([]*sshdeck.Dismissal, error) {
	all, err := query(ctx, s, prefixQuery(userKey(userID).pk, dismissalSKPrefix), decodeDismissal)
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

// alertAttrs is an alert as stored (CreateAlert adds ttl): id, title,
// message, priority, type, actionUrl, actionText (S), expiresAt and
// createdAt (S, stamps; a remote alert has no createdAt).
func alertAttrs(a *sshdeck.Alert) map[string]types.AttributeValue {
	m := newAttrs(10)
	m["id"] = str(a.ID)
	m["title"] = str(a.Title)
	m["message"] = str(a.Message)
	putTime(m, "expiresAt", a.ExpiresAt)
	m["priority"] = str(string(a.Priority))
	m["type"] = str(string(a.Type))
	m["actionUrl"] = str(a.ActionURL)
	m["actionText"] = str(a.ActionText)
	putTime(m, "createdAt", a.CreatedAt)
	return m
}

// decodeAlert reads the item of alertAttrs, of any schema version: they
// are the same in 1 and 2.
func decodeAlert(item map[string]types.AttributeValue) (*sshdeck.Alert, error) {
	f, d := decode(item)
	a := &sshdeck.Alert{
		ID: f.str("id"), Title: f.str("title"), Message: f.str("message"), ExpiresAt: f.time("expiresAt"),
		Priority: sshdeck.Priority(f.str("priority")), Type: sshdeck.AlertType(f.str("type")),
		ActionURL: f.str("actionUrl"), ActionText: f.str("actionText"), CreatedAt: f.time("createdAt"),
	}
	return decoded(a, d, "alert")
}

// dismissalAttrs is a dismissal as stored (DismissAlert adds ttl): userId,
// alertId (S), at and until (S, stamps).
func dismissalAttrs(x *sshdeck.Dismissal) map[string]types.AttributeValue {
	a := newAttrs(5)
	a["userId"] = str(x.UserID)
	a["alertId"] = str(x.AlertID)
	putTime(a, "at", x.At)
	putTime(a, "until", x.Until)
	return a
}

// decodeDismissal reads the item of dismissalAttrs, of any schema version:
// they are the same in 1 and 2.
func decodeDismissal(item map[string]types.AttributeValue) (*sshdeck.Dismissal, error) {
	f, d := decode(item)
	x := &sshdeck.Dismissal{UserID: f.str("userId"), AlertID: f.str("alertId"), At: f.time("at"), Until: f.time("until")}
	return decoded(x, d, "dismissal")
}
