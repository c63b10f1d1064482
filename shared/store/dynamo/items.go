package dynamo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// Attribute names of the table's keys, of its one index and of the items'
// TTL. Records' own attributes are named by their json tags.
const (
	attrPK     = schema.PartitionKey
	attrSK     = schema.SortKey
	attrGSI1PK = schema.IndexPartitionKey
	attrGSI1SK = schema.IndexSortKey
	attrTTL    = schema.TTL
	indexGSI1  = schema.Index

	// attrVersion is sshdeck.Host's version, the guard of its writes.
	attrVersion = "version"
)

// key is an item's primary key. Partitions are named KIND#value (but for
// USERNAMES and ALERTS, the one partition of every user's name and of every
// alert), and the sort keys within an owner's or a user's partition
// KIND#rest, so that a query selects one kind by prefix and a new kind never
// shows up in an existing query.
type key struct{ pk, sk string }

func (k key) attrs() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(k.pk), attrSK: str(k.sk)}
}

// with returns a new item: the attributes under the key.
func (k key) with(attrs map[string]types.AttributeValue) map[string]types.AttributeValue {
	item := k.attrs()
	maps.Copy(item, attrs)
	return item
}

func userKey(id string) key { return key{"USER#" + id, "USER"} }

// usersPK is the partition holding every user by name: the item at a name
// makes the name unique and serves UserByName and Users with consistent reads.
const usersPK = "USERNAMES"

func userNameKey(name string) key { return key{usersPK, name} }

func tokenKey(hash string) key { return key{"TOKEN#" + hash, "TOKEN"} }

func tokenIDKey(id string) key { return key{"TOKENID#" + id, "TOKENID"} }

func ownerPK(owner string) string { return "OWNER#" + owner }

// hostSKPrefix starts the sort key of every host item and of nothing else:
// the host's file-manager entries are under FILE#<id>#.
const hostSKPrefix = "HOST#"

// hostKey pads the id to the 19 digits of the largest int64, so that the
// sort keys' byte order is the ids' order.
func hostKey(owner string, id int64) key {
	return key{ownerPK(owner), fmt.Sprintf("%s%019d", hostSKPrefix, id)}
}

// hostSeqKey is the owner's host-id counter. It sorts after HOST# and does
// not start with it.
func hostSeqKey(owner string) key { return key{ownerPK(owner), "SEQ#HOST"} }

// hostSeq is the counter item's record: the last id handed out, 0 before the
// first.
type hostSeq struct {
	Last int64 `json:"n"`
}

// attrSeq is hostSeq.Last's attribute, for update expressions.
const attrSeq = "n"

// fileHostPrefix starts the sort key of every file-manager entry of a host,
// both kinds: what DeleteHost deletes with it. The id is padded as in
// hostKey, and the # after it keeps host 1's prefix from selecting host 10's.
func fileHostPrefix(id int64) string { return fmt.Sprintf("FILE#%019d#", id) }

// fileKindPrefix starts the sort key of a host's entries of one kind: what
// Files, the trim of recent entries and the count of shortcuts query.
func fileKindPrefix(id int64, kind sshdeck.FileKind) (string, error) {
	switch kind {
	case sshdeck.RecentFile:
		return fileHostPrefix(id) + "RECENT#", nil
	case sshdeck.Shortcut:
		return fileHostPrefix(id) + "SHORTCUT#", nil
	}
	return "", fmt.Errorf("unknown file kind %q", kind)
}

// fileKey is an entry's key, in its host's partition. A path may be 4096
// characters of up to 3 bytes, over the 1024 bytes of a sort key, so the key
// holds its SHA-256 (in hex: no dot, see README.md) and the item the path.
func fileKey(owner string, id int64, kind sshdeck.FileKind, path string) (key, error) {
	prefix, err := fileKindPrefix(id, kind)
	if err != nil {
		return key{}, err
	}
	sum := sha256.Sum256([]byte(path))
	return key{ownerPK(owner), prefix + hex.EncodeToString(sum[:])}, nil
}

// alertsPK is the partition of every published alert: Alerts reads them all
// at once, and they are few.
const alertsPK = "ALERTS"

// alertSKPrefix starts the sort key of every alert, ordered by id.
const alertSKPrefix = "ALERT#"

func alertKey(id string) key { return key{alertsPK, alertSKPrefix + id} }

// dismissalSKPrefix starts the sort key of a user's dismissals, in the
// user's partition beside the user item (sk USER), ordered by alert id.
const dismissalSKPrefix = "DISMISSED#"

func dismissalKey(userID, alertID string) key {
	return key{userKey(userID).pk, dismissalSKPrefix + alertID}
}

// tunnelsPK is the partition of every owner's tunnels, so that
// RunnableTunnels, the replicas' work list, is a Query of one partition
// rather than a Scan of the table.
const tunnelsPK = "TUNNELS"

// tunnelSKPrefix starts the sort key of every tunnel of the owner. Owner ids
// are server-made ("usr_<hex>") and never hold '#', so one owner's prefix
// selects none of another's ("usr_a#" does not start "usr_ab#..."), whatever
// the names, which may hold anything.
func tunnelSKPrefix(owner string) string { return owner + "#" }

// tunnelKey is a tunnel's key: the owner's prefix and the name as it is
// (at most 128 characters, 512 bytes: within a sort key's 1024), so that
// within the prefix the sort keys' byte order is the names'.
func tunnelKey(owner, name string) key { return key{tunnelsPK, tunnelSKPrefix(owner) + name} }

// knownHostSKPrefix starts the sort key of the owner's known hosts, in the
// owner's partition beside the hosts (HOST#), which it does not start.
const knownHostSKPrefix = "KNOWNHOST#"

func knownHostKey(owner, addr string) key { return key{ownerPK(owner), knownHostSKPrefix + addr} }

// cacheKey is a cache entry's own partition: entries are read one by one.
func cacheKey(k string) key { return key{"CACHE#" + k, "CACHE"} }

// expiryTTL returns the epoch seconds at which DynamoDB's TTL may purge an
// item that means nothing after t, and false for the zero time. TTL purges
// within days, not at once: reads still compare t with now.
func expiryTTL(t time.Time) (types.AttributeValue, bool) {
	if t.IsZero() {
		return nil, false
	}
	return num(t.Unix()), true
}

// keyRow decodes the key of an item read with a projection of pk and sk.
type keyRow struct {
	PK string `json:"pk"`
	SK string `json:"sk"`
}

// tokenGSI1SKPrefix starts the gsi1 sort key of tokens, which share the
// index partition USER#<user id> with whatever user-scoped list comes later.
const tokenGSI1SKPrefix = "TOKEN#"

// tokenGSI1SK orders a user's tokens by creation: fixed-width UTC time, so
// that byte order is time order, then the id for tokens made in the same
// nanosecond.
func tokenGSI1SK(created time.Time, id string) string {
	return tokenGSI1SKPrefix + sortableTime(created) + "#" + id
}

// sortableTimeLayout is UTC to the nanosecond at a fixed width: unlike the
// RFC 3339 strings of the records' times, which drop trailing zeros, its
// byte order is time order (for years 0 to 9999), so keys and conditions
// may compare it.
const sortableTimeLayout = "2006-01-02T15:04:05.000000000Z"

func sortableTime(t time.Time) string { return t.UTC().Format(sortableTimeLayout) }

// tokenRetention is how long a token's items outlive its expiry before
// DynamoDB's TTL may purge them: long enough for the authorizer to answer
// "expired" rather than "unknown", and for an admin to see what expired.
const tokenRetention = 30 * 24 * time.Hour

// tokenTTL returns the epoch seconds at which the token's items may go, and
// false for a token that never expires.
func tokenTTL(expires time.Time) (types.AttributeValue, bool) {
	if expires.IsZero() {
		return nil, false
	}
	return num(expires.Add(tokenRetention).Unix()), true
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// marshal encodes a record as native attributes named by its json tags:
// []byte as Binary, numbers as Number, times as UTC RFC 3339 strings. Empty
// lists and maps are left out (see omitEmpty).
func marshal(v any) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMapWithOptions(v, func(o *attributevalue.EncoderOptions) {
		o.TagKey = "json"
		o.EncodeTime = encodeTime
	})
	if err != nil {
		return nil, err
	}
	omitEmpty(item)
	return item, nil
}

// omitEmpty deletes the empty lists, maps and binaries of an item, nested
// ones too: a host's tags [] come back as nil, which the store contract
// allows (the service renders both as []), and so does a sealed credential
// []byte{}, which means no credential as nil does. They cost bytes for
// nothing, and minidyn, the emulator the tests run on, answers an empty
// list or map in a way the SDK decodes as another attribute's value, and
// refuses an empty binary.
func omitEmpty(m map[string]types.AttributeValue) {
	for name, av := range m {
		switch v := av.(type) {
		case *types.AttributeValueMemberB:
			if len(v.Value) == 0 {
				delete(m, name)
			}
		case *types.AttributeValueMemberL:
			if len(v.Value) == 0 {
				delete(m, name)
			}
			for _, e := range v.Value {
				if inner, ok := e.(*types.AttributeValueMemberM); ok {
					omitEmpty(inner.Value)
				}
			}
		case *types.AttributeValueMemberM:
			omitEmpty(v.Value)
			if len(v.Value) == 0 {
				delete(m, name)
			}
		}
	}
}

// encodeTime leaves a zero time out of the item (a struct field encoded as
// no value is left out), as the records' omitzero tags mean, which
// attributevalue ignores: a token that never expires has no expiresAt, and
// an unrevoked one no revokedAt, which RevokeToken's if_not_exists relies on.
func encodeTime(t time.Time) (types.AttributeValue, error) {
	if t.IsZero() {
		return nil, nil
	}
	return str(t.UTC().Format(time.RFC3339Nano)), nil
}

// unmarshal decodes an item into a record; the key attributes are ignored.
// Its error names the record's type only: a decoder's message may quote an
// attribute's value.
func unmarshal(item map[string]types.AttributeValue, v any) error {
	err := attributevalue.UnmarshalMapWithOptions(item, v, func(o *attributevalue.DecoderOptions) {
		o.TagKey = "json"
	})
	if err != nil {
		return fmt.Errorf("an item does not decode as %T", v)
	}
	return nil
}
