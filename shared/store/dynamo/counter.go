package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Counted kinds. Every quota of the store (an owner's hosts and tunnels, a
// host's shortcuts, a user's live tokens) is held by one mechanism: a
// counter item, changed in the same TransactWriteItems as the write it
// counts (addCounted, removeCounted). DynamoDB serializes transactions on
// an item, so two adds at max-1 cannot both pass.
//
// A counter is of one of two rules:
//
//   - a stored count (hosts, shortcuts, tunnels): the counter item holds
//     count (N); an add is `ADD count 1` conditioned `count < :max`
//     (`attribute_exists(count)` without a limit), a delete `ADD count -1`
//     conditioned `attribute_exists(count)`.
//   - a live count (tokens): what is counted stops counting without a
//     write (a token expires), so no count can be stored. Every add counts
//     the items that are live at its time (the same Query, with a test of
//     each item, counter.live) and commits conditioned on the counter's
//     guard attribute (counter.guard) being as read before the Query,
//     moving it on: of two concurrent adds, the second finds the guard
//     moved and counts again. A delete only lowers a live count and needs
//     no change of the counter (removeCounted is not called).
//
// A stored counter written before there were counts has none. The first
// add that finds it so counts the items once (a consistent Query, Select
// COUNT: the same count a live counter makes at every add) and sets the
// count in its transaction, conditioned on there still being none; a delete
// that finds none adds 1 to uncountedDeletes instead, conditioned on there
// still being no count. The add's transaction also requires
// uncountedDeletes to be what it read before its Query, so a delete between
// the Query and the transaction (which the Query may have counted) sends
// the add back to count again: the count set is exact.
const (
	attrCount     = "count"
	attrUncounted = "uncountedDeletes"
)

// counterAttempts bounds the transactions of one counted write: lost races
// (TransactionConflict, or a counter that changed since it was read) are
// retried, after a jittered wait when another transaction held the item
// (sleep), then the write is a Conflict (busy).
const counterAttempts = 8

// counterBackoff is the wait before the first retry; it doubles.
const counterBackoff = 10 * time.Millisecond

// atLimit is addCounted's answer when the count is at max: the caller says
// which limit.
type atLimit struct{ count int64 }

func (e *atLimit) Error() string { return fmt.Sprintf("at the limit (%d counted)", e.count) }

// reachedLimit is the count of an atLimit error, and whether err is one.
func reachedLimit(err error) (int64, bool) {
	e, ok := errors.AsType[*atLimit](err)
	if !ok {
		return 0, false
	}
	return e.count, true
}

// counter is a count: the item that holds it and the query of the items it
// counts. live and guard make it a live count (see the top of this file);
// without them the count is stored.
type counter struct {
	key   key
	items func() *dynamodb.QueryInput
	// live says whether an item of the query counts (a live count only).
	live func(item map[string]types.AttributeValue) (bool, error)
	// guard is the attribute of the counter item that every add of a live
	// count moves on.
	guard string
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

// tunnelCounter counts an owner's tunnels on OWNER#<owner>/COUNT#TUNNELS.
func tunnelCounter(owner string) counter {
	return counter{key: key{ownerPK(owner), "COUNT#TUNNELS"}, items: func() *dynamodb.QueryInput {
		return prefixQuery(tunnelsPK, tunnelSKPrefix(owner))
	}}
}

// tokenCounter counts a user's live tokens at now, a live count: the
// items listing the user's unrevoked tokens (userTokenKey) that have not
// expired at now, guarded by tokenSeq on the user's item.
func tokenCounter(userID string, now time.Time) counter {
	return counter{
		key: userKey(userID),
		items: func() *dynamodb.QueryInput {
			in := prefixQuery(userKey(userID).pk, userTokenSKPrefix)
			in.ProjectionExpression = aws.String("#sk, #expiresAt")
			in.ExpressionAttributeNames["#expiresAt"] = "expiresAt"
			return in
		},
		live: func(item map[string]types.AttributeValue) (bool, error) {
			f, d := decode(item)
			exp := f.time("expiresAt")
			return exp.IsZero() || now.Before(exp), d.done("listed token")
		},
		guard: attrTokenSeq,
	}
}

// countItems counts the items of c: a consistent Query of them, every page;
// Select COUNT for a stored count, the items tested one by one for a live
// one.
func (s *Store) countItems(ctx context.Context, c counter) (int64, error) {
	if c.live == nil {
		n, err := s.count(ctx, c.items())
		return int64(n), err
	}
	lives, err := query(ctx, s, c.items(), c.live)
	n := int64(0)
	for _, live := range lives {
		if live {
			n++
		}
	}
	return n, err
}

// counterState is a consistent read of a counter item.
type counterState struct {
	item         map[string]types.AttributeValue // nil when absent
	seq          int64                           // the host-id counter's n; 0 when absent
	count        int64
	counted      bool // count is present
	uncounted    int64
	uncountedSet bool // uncountedDeletes is present
	guard        int64
	guardSet     bool // the live count's guard is present
}

func (s *Store) readCounter(ctx context.Context, c counter) (*counterState, error) {
	item, err := s.getItem(ctx, c.key)
	if err != nil {
		return nil, err
	}
	f, d := decode(item)
	st := &counterState{item: item, seq: f.int64(attrSeq), count: f.int64(attrCount), uncounted: f.int64(attrUncounted)}
	_, st.counted = item[attrCount]
	_, st.uncountedSet = item[attrUncounted]
	if c.guard != "" {
		st.guard = f.int64(c.guard)
		_, st.guardSet = item[c.guard]
	}
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

// newExpr starts the update of c's item. A stored counter's item is the
// counter's own, of the same layout in every schema version, so the update
// sets sv; a live counter's guard is an attribute of an item of another
// kind (a user), whose sv stays as it is.
func newExpr(c counter) *expr {
	e := &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
	if c.live == nil {
		e.set = append(e.set, "#sv = :sv")
		e.names["#sv"], e.values[":sv"] = attrSchemaVersion, num(schemaVersion)
		e.names["#c"] = attrCount
	}
	return e
}

func (e *expr) update(table *string, k key) *types.Update {
	var clauses []string
	if len(e.set) > 0 {
		clauses = append(clauses, "SET "+strings.Join(e.set, ", "))
	}
	if len(e.add) > 0 {
		clauses = append(clauses, "ADD "+strings.Join(e.add, ", "))
	}
	text := strings.Join(clauses, " ")
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
// needs) in one transaction with the update of c, conditioned on the count
// being below max (for a stored count, 0 is no limit and the count is kept
// all the same; a live count is always limited, 0 allowing none); raise,
// when not nil, adds to the counter's update what the caller needs besides
// (CreateHost: the host-id counter; CreateTokenWithin: the user enabled),
// given the counter as read (nil before any read), or refuses the add with
// an error. It returns the index in writes of the first item whose
// condition failed (-1 for none), an *atLimit when the count is at max, or
// another error.
//
// For a stored count, the first transaction assumes a count below max (the
// usual case) and reads nothing; when the counter's condition fails, or the
// transaction lost a race, a consistent GetItem of the counter tells why
// and the next attempt is built from it (a Query counts the items of a
// counter without a count). A live count reads the counter and counts
// before every transaction.
func (s *Store) addCounted(ctx context.Context, c counter, max int, writes []types.TransactWriteItem, raise func(st *counterState, e *expr) error) (int, error) {
	return s.addCountedN(ctx, c, max, 1, writes, raise)
}

// addCountedN is addCounted for an add of n items at once (CreateHosts):
// the count must be at most max-n before it, and grows by n. A stored
// count only: a live count adds one token at a time.
func (s *Store) addCountedN(ctx context.Context, c counter, max int, n int64, writes []types.TransactWriteItem, raise func(st *counterState, e *expr) error) (int, error) {
	if n < 1 || n > 1 && c.live != nil {
		return -1, fmt.Errorf("an add of %d to a live count", n)
	}
	var st *counterState
	wait := counterBackoff
	for attempt := 1; ; attempt++ {
		if c.live != nil {
			var err error
			if st, err = s.readCounter(ctx, c); err != nil {
				return -1, err
			}
		}
		e := newExpr(c)
		if raise != nil {
			if err := raise(st, e); err != nil {
				return -1, err
			}
		}
		switch {
		case c.live != nil || st != nil && !st.counted:
			// Count the items: at every add of a live count, once for a
			// stored counter without a count.
			counted, err := s.countItems(ctx, c)
			if err != nil {
				return -1, err
			}
			if (max > 0 || c.live != nil) && counted+n > int64(max) {
				return -1, &atLimit{counted}
			}
			if c.live != nil {
				e.names["#g"] = c.guard
				e.set = append(e.set, "#g = :next")
				e.values[":next"] = num(st.guard + 1)
				if st.guardSet {
					e.cond = append(e.cond, "#g = :g")
					e.values[":g"] = num(st.guard)
				} else {
					e.cond = append(e.cond, "attribute_not_exists(#g)")
				}
				break
			}
			e.set = append(e.set, "#c = :n")
			e.values[":n"] = num(counted + n)
			e.names["#u"] = attrUncounted
			e.cond = append(e.cond, "attribute_not_exists(#c)")
			if st.uncountedSet {
				e.cond = append(e.cond, "#u = :u")
				e.values[":u"] = num(st.uncounted)
			} else {
				e.cond = append(e.cond, "attribute_not_exists(#u)")
			}
		default:
			e.add = append(e.add, "#c :n")
			e.values[":n"] = num(n)
			if max > 0 {
				// count < max-n+1: room for n more (count < max for one).
				e.cond = append(e.cond, "#c < :max")
				e.values[":max"] = num(int64(max) - n + 1)
			} else {
				e.cond = append(e.cond, "attribute_exists(#c)")
			}
		}
		items := append(writes[:len(writes):len(writes)], types.TransactWriteItem{Update: e.update(&s.table, c.key)})
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		failed, conflict := cancellation(err)
		switch {
		case err == nil:
			return -1, nil
		case failed >= 0 && failed < len(writes):
			return failed, nil
		case failed < 0 && !conflict:
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
		if c.live != nil {
			continue // read at the top
		}
		if st, err = s.readCounter(ctx, c); err != nil {
			return -1, err
		}
		if st.counted && max > 0 && st.count+n > int64(max) {
			return -1, &atLimit{st.count}
		}
	}
}

// removeCounted runs write (a delete, conditioned as its caller needs) in
// one transaction with the decrement of c's stored count, or, when c has no
// count, with the increment of its uncountedDeletes (see the top of this
// file). It returns 0 when write's condition failed (-1 otherwise), or an
// error.
func (s *Store) removeCounted(ctx context.Context, c counter, write types.TransactWriteItem) (int, error) {
	if c.live != nil {
		return -1, errors.New("a live count has no remove")
	}
	counted := true
	wait := counterBackoff
	for attempt := 1; ; attempt++ {
		e := newExpr(c)
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
		failed, conflict := cancellation(err)
		switch {
		case err == nil:
			return -1, nil
		case failed == 0:
			return 0, nil
		case failed < 0 && !conflict:
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

// cancellation is the one reading of a failed write's reasons: the index
// of the first item of a cancelled transaction whose condition failed (-1
// for none, and for any other error), and whether the write lost a race to
// another on one item (an item's TransactionConflict, or a single write's
// TransactionConflictException), which DynamoDB refuses rather than waits
// for and the SDK does not retry.
func cancellation(err error) (failed int, conflict bool) {
	if _, ok := errors.AsType[*types.TransactionConflictException](err); ok {
		return -1, true
	}
	tce, ok := errors.AsType[*types.TransactionCanceledException](err)
	if !ok {
		return -1, false
	}
	failed = -1
	for i, r := range tce.CancellationReasons {
		// Reason codes, as documented for TransactWriteItems; the SDK has
		// no constants for them.
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			if failed < 0 {
				failed = i
			}
		case "TransactionConflict":
			conflict = true
		}
	}
	return failed, conflict
}

// failedItem is the first item of a cancelled transaction whose condition
// failed, or -1 (cancellation).
func failedItem(err error) int {
	failed, _ := cancellation(err)
	return failed
}

// conflicted reports whether err is a lost race (cancellation).
func conflicted(err error) bool {
	_, conflict := cancellation(err)
	return conflict
}

// sleep waits about *wait (jittered: between half of it and all of it),
// or until ctx ends, and doubles *wait up to maxWait: the one wait of the
// store between the attempts of a write that lost a race or was throttled.
func sleep(ctx context.Context, wait *time.Duration) error {
	t := time.NewTimer(*wait/2 + rand.N(*wait/2+1))
	defer t.Stop()
	*wait = min(2**wait, maxWait)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// maxWait bounds sleep's waits, so that a throttled partition gets time
// without a request waiting long for one attempt.
const maxWait = time.Second

func busy() error {
	return sshdeck.Errorf(sshdeck.Conflict, "too many concurrent changes; try again")
}

func isAtLimit(err error) bool {
	_, ok := reachedLimit(err)
	return ok
}
