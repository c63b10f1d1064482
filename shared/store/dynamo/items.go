package dynamo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo/schema"
)

// Attribute names of the table's keys, of its one index and of the items'
// TTL. The other attributes are each kind's, named where the kind is
// written and read (see attrs.go).
const (
	attrPK     = schema.PartitionKey
	attrSK     = schema.SortKey
	attrGSI1PK = schema.IndexPartitionKey
	attrGSI1SK = schema.IndexSortKey
	attrTTL    = schema.TTL
	indexGSI1  = schema.Index
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
	item := make(map[string]types.AttributeValue, len(attrs)+2)
	item[attrPK], item[attrSK] = str(k.pk), str(k.sk)
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

// userTokenSKPrefix starts the sort key of the items that list a user's
// unrevoked tokens in the user's partition, beside the user item (USER)
// and the dismissals (DISMISSED#), which it does not start.
const userTokenSKPrefix = "TOKEN#"

// userTokenKey is the item that lists the token in its user's partition
// while it is not revoked: CreateTokenWithin counts these items with one
// consistent Query (gsi1, which lists every token of the user, can only be
// read eventually consistently), and RevokeToken deletes it in the
// transaction that revokes the token.
func userTokenKey(userID, tokenID string) key {
	return key{userKey(userID).pk, userTokenSKPrefix + tokenID}
}

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

// maxSortKey is DynamoDB's limit of a sort key, in bytes.
const maxSortKey = 1024

// knownHostKey is the key of the owner's known host at addr:
// KNOWNHOST#<addr>, or KNOWNHOST##<hex SHA-256 of addr> for an address
// that would make the sort key longer than DynamoDB's 1024 bytes (a host
// reached through a chain of jump hosts with long names, which the tunnel
// engine remembers as "<addr> via <addr> via …"). No address starts with
// '#', so the two forms never meet; the item's addr attribute holds the
// address whole. Known hosts are only ever read by address, never listed.
func knownHostKey(owner, addr string) key {
	sk := knownHostSKPrefix + addr
	if len(sk) > maxSortKey {
		sum := sha256.Sum256([]byte(addr))
		sk = knownHostSKPrefix + "#" + hex.EncodeToString(sum[:])
	}
	return key{ownerPK(owner), sk}
}

// loginKey is a user's login secrets (password hash, sealed TOTP secrets):
// a partition of their own rather than the user's. IAM tells items apart by
// partition key alone (dynamodb:LeadingKeys), and every role that reads
// users may read USER#* (the authorizer and the tunnel service by GetItem,
// the alert routes by a Query of the caller's USER#<id>, which would return
// every item of it): under LOGIN#* only the routes that log in and change
// the secrets need be granted them.
func loginKey(userID string) key { return key{"LOGIN#" + userID, "LOGIN"} }

// loginFailureKey is the window of failed logins of a key the caller makes
// ("name:<hex sha256>", "addr:<ip>"): a partition of its own, as a cache
// entry's, read and written one by one. Keys may hold dots, only in the
// partition key (see README.md, minidyn).
func loginFailureKey(k string) key { return key{"LOGINFAIL#" + k, "LOGINFAIL"} }

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

// itemKey reads the key of an item (read with a projection of pk and sk).
func itemKey(item map[string]types.AttributeValue) (key, error) {
	f, d := decode(item)
	k := key{f.str(attrPK), f.str(attrSK)}
	return k, d.done("key")
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
