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

// freeHolder is the leaseHolder of a released lease. A release sets it
// rather than REMOVE the lease: minidyn, which the tests run on, ignores
// REMOVE, and conditions treat it as an absent holder (a tunnel never
// leased).
const freeHolder = ""

// PutTunnel writes t over the tunnel at the generation before t's (none for
// generation 1), leaving the lease as stored: one UpdateItem that SETs
// every attribute of t but the lease, REMOVEs those t has none of (as a put
// would), conditioned generation = t.Generation-1. A failed condition is
// Conflict, also on an absent tunnel. Generation 1 is CreateTunnel without
// a limit, so that the owner's count counts it.
func (s *Store) PutTunnel(ctx context.Context, t *sshdeck.Tunnel) error {
	if t.Owner == "" || t.Name == "" {
		return errors.New("dynamo: put tunnel: owner and name are required")
	}
	if t.Generation == 1 {
		return s.CreateTunnel(ctx, t, 0) // counted, as every create
	}
	// tunnelAttrs are every attribute but the lease's, sv included: after
	// the update a tunnel of schema 1 is of the store's version, the lease's
	// attributes being the same in both.
	update := replacing(tunnelAttrs(t), nil, attrSealed, attrCreatedAt, attrUpdatedAt)
	in := &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       tunnelKey(t.Owner, t.Name).attrs(),
		UpdateExpression:          update.UpdateExpression,
		ExpressionAttributeNames:  update.ExpressionAttributeNames,
		ExpressionAttributeValues: update.ExpressionAttributeValues,
	}
	in.ConditionExpression = aws.String("#generation = :prev")
	in.ExpressionAttributeNames["#generation"] = attrGeneration
	in.ExpressionAttributeValues[":prev"] = num(t.Generation - 1)
	_, err := s.client.UpdateItem(ctx, in)
	if conditionFailed(err) {
		return tunnelConflict(t.Name, t.Generation)
	}
	return wrap("put tunnel", err)
}

// Tunnel returns the owner's tunnel: one consistent GetItem.
func (s *Store) Tunnel(ctx context.Context, owner, name string) (*sshdeck.Tunnel, error) {
	item, err := s.getItem(ctx, tunnelKey(owner, name))
	if err != nil {
		return nil, wrap("tunnel", err)
	}
	if item == nil {
		return nil, tunnelNotFound(name)
	}
	t, err := decodeTunnel(item)
	return t, wrap("tunnel", err)
}

// Tunnels returns the owner's tunnels ordered by name: a consistent Query
// of the owner's prefix of the TUNNELS partition (every page), in sort key
// order, which within the prefix is the names' byte order.
func (s *Store) Tunnels(ctx context.Context, owner string) ([]*sshdeck.Tunnel, error) {
	if owner == "" {
		return []*sshdeck.Tunnel{}, nil // the prefix "#" would be no owner's
	}
	tunnels, err := s.queryTunnels(ctx, prefixQuery(tunnelsPK, tunnelSKPrefix(owner)))
	return tunnels, wrap("tunnels", err)
}

// RunnableTunnels returns every owner's tunnels whose Run is set, ordered by
// owner then name: a consistent Query of the TUNNELS partition (every page)
// filtered on run, which reads (and pays for) the tunnels not running too.
// The sort keys' order is owner then name but for an owner id that a byte
// below '#' follows in another's, which generated ids never hold; the sort
// here makes the order exact whatever the ids.
func (s *Store) RunnableTunnels(ctx context.Context) ([]*sshdeck.Tunnel, error) {
	tunnels, err := s.queryTunnels(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:   aws.String("#pk = :pk"),
		FilterExpression:         aws.String("#run = :run"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#run": attrRun},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(tunnelsPK), ":run": &types.AttributeValueMemberBOOL{Value: true},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, wrap("runnable tunnels", err)
	}
	sortTunnels(tunnels)
	return tunnels, nil
}

// sortTunnels orders tunnels by owner, then name.
func sortTunnels(tunnels []*sshdeck.Tunnel) {
	slices.SortStableFunc(tunnels, func(a, b *sshdeck.Tunnel) int {
		return cmp.Or(strings.Compare(a.Owner, b.Owner), strings.Compare(a.Name, b.Name))
	})
}

func (s *Store) queryTunnels(ctx context.Context, in *dynamodb.QueryInput) ([]*sshdeck.Tunnel, error) {
	return query(ctx, s, in, decodeTunnel)
}

// SetTunnelStatus replaces the status of the tunnel at generation gen whose
// lease holder holds, expired or not: one UpdateItem of status alone,
// conditioned on the tunnel, the generation and the holder (no holder holds
// a free lease). The item a failed condition returns (ALL_OLD) tells
// NotFound from Conflict without another call.
func (s *Store) SetTunnelStatus(ctx context.Context, owner, name string, gen int64, holder string, st *sshdeck.TunnelStatus) error {
	// status alone, whose layout is the same in every schema version: sv
	// stays as it was.
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           &s.table,
		Key:                 tunnelKey(owner, name).attrs(),
		UpdateExpression:    aws.String("SET #status = :status"),
		ConditionExpression: aws.String("attribute_exists(#pk) AND #generation = :gen AND #holder = :holder AND #holder <> :free"),
		ExpressionAttributeNames: map[string]string{
			"#pk": attrPK, "#status": attrStatus, "#generation": attrGeneration, "#holder": attrLeaseHolder,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":status": &types.AttributeValueMemberM{Value: statusAttrs(st)}, ":gen": num(gen),
			":holder": str(holder), ":free": str(freeHolder),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, failed := failedOld(err); failed {
		if len(old) == 0 {
			return tunnelNotFound(name)
		}
		return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q is not at generation %d under the lease of %q", name, gen, holder)
	}
	return wrap("set tunnel status", err)
}

// AcquireTunnelLease makes holder the tunnel's lease holder until `until`
// if the lease is free, holder's, or expired at now (leaseUntil <= now, as
// fixed-width text), and returns the tunnel after it: one UpdateItem,
// ALL_NEW. The item a failed condition returns (ALL_OLD) tells NotFound
// from Conflict.
func (s *Store) AcquireTunnelLease(ctx context.Context, owner, name, holder string, now, until time.Time) (*sshdeck.Tunnel, error) {
	if holder == freeHolder {
		return nil, errors.New("dynamo: acquire tunnel lease: holder is required")
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        &s.table,
		Key:              tunnelKey(owner, name).attrs(),
		UpdateExpression: aws.String("SET #holder = :holder, #until = :until"),
		ConditionExpression: aws.String("attribute_exists(#pk) AND " +
			"(attribute_not_exists(#holder) OR #holder = :free OR #holder = :holder OR #until <= :now)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#holder": attrLeaseHolder, "#until": attrLeaseUntil},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":holder": str(holder), ":free": str(freeHolder),
			":until": str(sortableTime(until)), ":now": str(sortableTime(now)),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, failed := failedOld(err); failed {
		if len(old) == 0 {
			return nil, tunnelNotFound(name)
		}
		return nil, tunnelLeased(name)
	}
	if err != nil {
		return nil, wrap("acquire tunnel lease", err)
	}
	t, err := decodeTunnel(out.Attributes)
	return t, wrap("acquire tunnel lease", err)
}

// ReleaseTunnelLease frees the tunnel's lease if holder holds it: one
// UpdateItem that sets both lease attributes to the empty string,
// conditioned leaseHolder = holder. A failed condition (another holder, a
// free lease, an absent tunnel) is no error.
func (s *Store) ReleaseTunnelLease(ctx context.Context, owner, name, holder string) error {
	if holder == freeHolder {
		return nil // no holder holds a lease
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                &s.table,
		Key:                      tunnelKey(owner, name).attrs(),
		UpdateExpression:         aws.String("SET #holder = :free, #until = :free"),
		ConditionExpression:      aws.String("#holder = :holder"),
		ExpressionAttributeNames: map[string]string{"#holder": attrLeaseHolder, "#until": attrLeaseUntil},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":holder": str(holder), ":free": str(freeHolder),
		},
	})
	if conditionFailed(err) {
		return nil
	}
	return wrap("release tunnel lease", err)
}

// KnownHost returns the owner's key at addr: one consistent GetItem.
func (s *Store) KnownHost(ctx context.Context, owner, addr string) (*sshdeck.KnownHost, error) {
	item, err := s.getItem(ctx, knownHostKey(owner, addr))
	if err != nil {
		return nil, wrap("known host", err)
	}
	if item == nil {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "no known host key at %s", addr)
	}
	k, err := decodeKnownHost(item)
	return k, wrap("known host", err)
}

// AddKnownHost puts k only if the owner has no key at its address: one
// PutItem, Conflict when it has (the first key stays).
func (s *Store) AddKnownHost(ctx context.Context, k *sshdeck.KnownHost) error {
	if k.Owner == "" || k.Addr == "" {
		return errors.New("dynamo: add known host: owner and address are required")
	}
	exists, err := s.putIfAbsent(ctx, knownHostKey(k.Owner, k.Addr).with(knownHostAttrs(k)))
	if exists {
		return sshdeck.Errorf(sshdeck.Conflict, "a host key at %s is known already", k.Addr)
	}
	return wrap("add known host", err)
}

// failedOld reports whether a single-item write failed its condition, and
// the item it failed on as ReturnValuesOnConditionCheckFailure ALL_OLD
// returns it: empty when there was none.
func failedOld(err error) (map[string]types.AttributeValue, bool) {
	ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
	if !ok {
		return nil, false
	}
	return ccf.Item, true
}

func tunnelNotFound(name string) error {
	return sshdeck.Errorf(sshdeck.NotFound, "tunnel %q not found", name)
}

func tunnelLeased(name string) error {
	return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q is leased to another holder", name)
}

func tunnelConflict(name string, gen int64) error {
	if gen == 1 {
		return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q exists", name)
	}
	return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q is not at generation %d", name, gen-1)
}

// CreateTunnel stores t (generation 1) and raises the owner's count of
// tunnels (tunnelCounter, a stored count: see counter.go) in one
// TransactWriteItems (addCounted): a Put of the tunnel conditioned
// attribute_not_exists(pk) and the Update of the count, conditioned below
// limit (with a limit; 0 or less is none, the count is kept all the same). The
// tunnel comes first: an existing name is Conflict whatever the count says.
// When the count's condition fails, a consistent GetItem of it says why: at
// the limit (LimitExceeded), no count yet (counted once by a Query, see
// "Counted kinds" in README.md), or moved meanwhile (again).
func (s *Store) CreateTunnel(ctx context.Context, t *sshdeck.Tunnel, limit int) error {
	if t.Owner == "" || t.Name == "" {
		return errors.New("dynamo: create tunnel: owner and name are required")
	}
	if t.Generation != 1 {
		return errors.New("dynamo: create tunnel: generation must be 1")
	}
	put := s.putNew(tunnelKey(t.Owner, t.Name).with(tunnelAttrs(t)))
	failed, err := s.addCounted(ctx, tunnelCounter(t.Owner), limit, []types.TransactWriteItem{{Put: put}}, nil)
	switch {
	case failed == 0:
		return tunnelConflict(t.Name, 1)
	case isAtLimit(err):
		// addCounted reads the count after a transaction that lost a race
		// (or, for an owner without a count yet, counts first), and that
		// race may be the create of this very name: then the answer is
		// the one a create of an existing name gets, Conflict, whatever
		// the count, so that a writer reads the tunnel and changes it
		// rather than give up (shared/tunnelrecord).
		if found, ferr := s.exists(ctx, tunnelKey(t.Owner, t.Name)); ferr == nil && found {
			return tunnelConflict(t.Name, 1)
		}
		return sshdeck.TunnelLimit(limit)
	}
	return wrap("create tunnel", err)
}

// DeleteTunnel deletes the tunnel (its lease and sealed credentials are
// attributes of its item) and lowers the owner's count in one
// TransactWriteItems (removeCounted): a Delete conditioned
// attribute_exists(pk) (and generation = :gen with a generation) and the
// Update of the count. A failed tunnel condition is NotFound or Conflict,
// which a GetItem tells apart (deleteRefused).
func (s *Store) DeleteTunnel(ctx context.Context, owner, name string, gen int64) error {
	del := &types.Delete{
		TableName:                           &s.table,
		Key:                                 tunnelKey(owner, name).attrs(),
		ConditionExpression:                 aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": attrPK},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if gen != 0 {
		del.ConditionExpression = aws.String("attribute_exists(#pk) AND #generation = :gen")
		del.ExpressionAttributeNames["#generation"] = attrGeneration
		del.ExpressionAttributeValues = map[string]types.AttributeValue{":gen": num(gen)}
	}
	failed, err := s.removeCounted(ctx, tunnelCounter(owner), types.TransactWriteItem{Delete: del})
	if failed == 0 {
		return s.deleteRefused(ctx, owner, name, gen)
	}
	return wrap("delete tunnel", err)
}

// deleteRefused tells NotFound from Conflict after a refused delete: one
// consistent GetItem (minidyn does not return the item of a failed
// transaction's condition).
func (s *Store) deleteRefused(ctx context.Context, owner, name string, gen int64) error {
	found, err := s.exists(ctx, tunnelKey(owner, name))
	switch {
	case err != nil:
		return wrap("delete tunnel", err)
	case !found:
		return tunnelNotFound(name)
	}
	return sshdeck.Errorf(sshdeck.Conflict, "tunnel %q is not at generation %d", name, gen)
}

// StoppedTunnels returns every owner's tunnels that are neither to run nor
// autoStart, last written before `before`: a consistent Query of the
// TUNNELS partition (every page) filtered on run and autoStart, which reads
// (and pays for) every tunnel, as RunnableTunnels does; the time is
// compared here (stored times are not in byte order). The replicas call it
// once an hour.
func (s *Store) StoppedTunnels(ctx context.Context, before time.Time) ([]*sshdeck.Tunnel, error) {
	tunnels, err := s.queryTunnels(ctx, &dynamodb.QueryInput{
		KeyConditionExpression:   aws.String("#pk = :pk"),
		FilterExpression:         aws.String("#run = :false AND #spec.#autoStart = :false"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#run": attrRun, "#spec": "spec", "#autoStart": "autoStart"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(tunnelsPK), ":false": &types.AttributeValueMemberBOOL{Value: false},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, wrap("stopped tunnels", err)
	}
	out := tunnels[:0]
	for _, t := range tunnels {
		if t.UpdatedAt.Before(before) {
			out = append(out, t)
		}
	}
	sortTunnels(out)
	return out, nil
}
