package dynamo

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Counted kinds. A quota (an owner's hosts, a host's shortcuts) is kept
// exact by a count on a counter item, changed in the same transaction as
// the item it counts: an add is a TransactWriteItems of the add's own
// writes and the counter's `ADD count 1` conditioned `count < :max`, a
// delete one of the delete and `ADD count -1`. DynamoDB serializes
// transactions on an item, so two adds at max-1 cannot both pass.
//
// A counter item written before there were counts has none. The first add
// that finds it so counts the items once (a consistent Query, Select
// COUNT) and sets the count in its transaction, conditioned on there still
// being none; a delete that finds none adds 1 to uncountedDeletes instead,
// conditioned on there still being no count. The add's transaction also
// requires uncountedDeletes to be what it read before its Query, so a
// delete between the Query and the transaction (which the Query may have
// counted) sends the add back to count again: the count set is exact.
const (
	attrCount     = "count"
	attrUncounted = "uncountedDeletes"
)

// counterAttempts bounds the transactions of one counted write: lost races
// (TransactionConflict, or a counter that changed since it was read) are
// retried after a short jittered wait, then the write is a Conflict.
const counterAttempts = 8

// counterBackoff is the wait before the first retry; it doubles.
const counterBackoff = 10 * time.Millisecond

// errAtLimit is addCounted's answer when the count is at max: the caller
// says which limit.
var errAtLimit = errors.New("at the limit")

// counter is a count: the item that holds it and the query of the items it
// counts, for a counter item without a count.
type counter struct {
	key   key
	items func() *dynamodb.QueryInput
}

// hostCounter counts an owner's hosts on the host-id counter (SEQ#HOST).
func hostCounter(owner string) counter {
	return counter{key: hostSeqKey(owner), items: func() *dynamodb.QueryInput {
		return prefixQuery(ownerPK(owner), hostSKPrefix)
	}}
}

// shortcutCounter counts a host's shortcuts on FILE#<id>#COUNT#SHORTCUT,
// under the host's prefix so that DeleteHost's cascade takes it too.
func shortcutCounter(owner string, id int64) counter {
	return counter{key: key{ownerPK(owner), fileHostPrefix(id) + "COUNT#SHORTCUT"}, items: func() *dynamodb.QueryInput {
		prefix, _ := fileKindPrefix(id, sshdeck.Shortcut)
		return prefixQuery(ownerPK(owner), prefix)
	}}
}

// counterState is a consistent read of a counter item.
type counterState struct {
	seq          int64 // the host-id counter's n; 0 when absent
	count        int64
	counted      bool // count is present
	uncounted    int64
	uncountedSet bool // uncountedDeletes is present
}

func (s *Store) readCounter(ctx context.Context, k key) (*counterState, error) {
	item, err := s.getItem(ctx, k)
	if err != nil {
		return nil, err
	}
	f, d := decode(item)
	st := &counterState{seq: f.int64(attrSeq), count: f.int64(attrCount), uncounted: f.int64(attrUncounted)}
	_, st.counted = item[attrCount]
	_, st.uncountedSet = item[attrUncounted]
	return st, d.done("counter")
}

// expr builds the update of a counter item: its clauses, conditions and
// placeholders.
type expr struct {
	set, add, cond []string
	// alt, when set, is a condition that lets the update through in
	// place of all of cond.
	alt    string
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	e := &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
	e.set = append(e.set, "#sv = :sv")
	e.names["#sv"], e.values[":sv"] = attrSchemaVersion, num(schemaVersion)
	return e
}

func (e *expr) update(table *string, k key) *types.Update {
	text := "SET " + strings.Join(e.set, ", ")
	if len(e.add) > 0 {
		text += " ADD " + strings.Join(e.add, ", ")
	}
	u := &types.Update{
		TableName:                 table,
		Key:                       k.attrs(),
		UpdateExpression:          &text,
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	}
	if len(e.cond) > 0 {
		cond := "(" + strings.Join(e.cond, ") AND (") + ")"
		if e.alt != "" {
			cond = "(" + cond + ") OR (" + e.alt + ")"
		}
		u.ConditionExpression = &cond
	}
	return u
}

// addCounted runs writes (the add's own items, conditioned as the caller
// needs) in one transaction with the increment of c, conditioned on the
// count being below max; raise, when not nil, adds to the counter's update
// what the caller needs besides (CreateHost: the host-id counter), given
// the counter as read (nil before any read). It returns the index in writes
// of the first item whose condition failed (-1 for none), errAtLimit when
// the count is at max, or another error.
//
// The first transaction assumes a count below max (the usual case) and
// reads nothing; when the counter's condition fails, or the transaction
// lost a race, a consistent GetItem of the counter tells why and the next
// attempt is built from it (a Query counts the items of a counter without
// a count).
func (s *Store) addCounted(ctx context.Context, c counter, max int, writes []types.TransactWriteItem, raise func(st *counterState, e *expr)) (int, error) {
	var st *counterState
	wait := counterBackoff
	for attempt := 1; ; attempt++ {
		e := newExpr()
		e.names["#c"] = attrCount
		if raise != nil {
			raise(st, e)
		}
		if st == nil || st.counted {
			e.add = append(e.add, "#c :one")
			e.cond = append(e.cond, "#c < :max")
			e.values[":one"], e.values[":max"] = num(1), num(int64(max))
		} else {
			n, err := s.count(ctx, c.items())
			if err != nil {
				return -1, err
			}
			if n >= max {
				return -1, errAtLimit
			}
			e.set = append(e.set, "#c = :n")
			e.values[":n"] = num(int64(n) + 1)
			e.names["#u"] = attrUncounted
			e.cond = append(e.cond, "attribute_not_exists(#c)")
			if st.uncountedSet {
				e.cond = append(e.cond, "#u = :u")
				e.values[":u"] = num(st.uncounted)
			} else {
				e.cond = append(e.cond, "attribute_not_exists(#u)")
			}
		}
		items := append(writes[:len(writes):len(writes)], types.TransactWriteItem{Update: e.update(&s.table, c.key)})
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		failed := failedItem(err)
		switch {
		case err == nil:
			return -1, nil
		case failed >= 0 && failed < len(writes):
			return failed, nil
		case failed < 0 && !conflicted(err):
			return -1, err
		}
		// The counter's condition failed or the transaction lost a race:
		// read the counter and try again from what it says.
		if attempt == counterAttempts {
			return -1, busy()
		}
		if failed < 0 {
			if err := sleep(ctx, &wait); err != nil {
				return -1, err
			}
		}
		if st, err = s.readCounter(ctx, c.key); err != nil {
			return -1, err
		}
		if st.counted && st.count >= int64(max) {
			return -1, errAtLimit
		}
	}
}

// removeCounted runs write (a delete, conditioned as its caller needs) in
// one transaction with the decrement of c, or, when c has no count, with
// the increment of its uncountedDeletes (see the top of this file). It
// returns 0 when write's condition failed (-1 otherwise), or an error.
func (s *Store) removeCounted(ctx context.Context, c counter, write types.TransactWriteItem) (int, error) {
	counted := true
	wait := counterBackoff
	for attempt := 1; ; attempt++ {
		e := newExpr()
		e.names["#c"] = attrCount
		if counted {
			e.add = append(e.add, "#c :minus")
			e.values[":minus"] = num(-1)
			e.cond = append(e.cond, "attribute_exists(#c)")
		} else {
			e.names["#u"] = attrUncounted
			e.add = append(e.add, "#u :one")
			e.values[":one"] = num(1)
			e.cond = append(e.cond, "attribute_not_exists(#c)")
		}
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: []types.TransactWriteItem{write, {Update: e.update(&s.table, c.key)}},
		})
		failed := failedItem(err)
		switch {
		case err == nil:
			return -1, nil
		case failed == 0:
			return 0, nil
		case failed < 0 && !conflicted(err):
			return -1, err
		case attempt == counterAttempts:
			return -1, busy()
		case failed == 1:
			counted = !counted // the counter has a count, or none, after all
		default:
			if err := sleep(ctx, &wait); err != nil {
				return -1, err
			}
		}
	}
}

// conflicted reports whether err is a lost race between transactions (or a
// single write and a transaction) on one item, which DynamoDB refuses
// rather than waits for and the SDK does not retry.
func conflicted(err error) bool {
	if _, ok := errors.AsType[*types.TransactionConflictException](err); ok {
		return true
	}
	tce, ok := errors.AsType[*types.TransactionCanceledException](err)
	if !ok {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "TransactionConflict" {
			return true
		}
	}
	return false
}

// sleep waits about *wait (jittered), or until ctx ends, and doubles *wait.
func sleep(ctx context.Context, wait *time.Duration) error {
	t := time.NewTimer(*wait/2 + rand.N(*wait))
	defer t.Stop()
	*wait *= 2
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func busy() error {
	return sshdeck.Errorf(sshdeck.Conflict, "too many concurrent changes; try again")
}
