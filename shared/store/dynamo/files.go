package dynamo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Attributes of a file-manager entry that its writes and trimRecent name.
const (
	attrCreatedAt  = "createdAt"
	attrLastOpened = "lastOpened"
	attrPath       = "path"
)

// hostCheck is the condition of every write of an entry: its host exists.
// In the same transaction as the write, it makes the write and DeleteHost
// exclusive: an entry is written while its host is there, or not at all, so
// DeleteHost's query after its delete sees every entry it must take.
func (s *Store) hostCheck(owner string, id int64) *types.ConditionCheck {
	return &types.ConditionCheck{
		TableName:                &s.table,
		Key:                      hostKey(owner, id).attrs(),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}
}

// PutRecentFile writes e over the entry at its path, keeping that entry's
// createdAt, in one transaction with a check that the host exists; then
// trimRecent deletes what is beyond keep: a TransactWriteItems and a Query
// (and a BatchWriteItem per 25 entries dropped).
func (s *Store) PutRecentFile(ctx context.Context, e *sshdeck.FileEntry, keep int) error {
	if e.Kind != sshdeck.RecentFile {
		return fmt.Errorf("dynamo: put recent file: kind %q is not %q", e.Kind, sshdeck.RecentFile)
	}
	k, err := fileKey(e.Owner, e.HostID, e.Kind, e.Path)
	if err != nil {
		return wrap("put recent file", err)
	}
	update := replaceKeepingCreated(fileAttrs(e))
	update.TableName, update.Key = &s.table, k.attrs()
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{ConditionCheck: s.hostCheck(e.Owner, e.HostID)},
			{Update: update},
		},
	})
	if failedItem(err) == 0 {
		return hostNotFound(e.HostID)
	}
	if err != nil {
		return wrap("put recent file", err)
	}
	return wrap("put recent file", s.trimRecent(ctx, e.Owner, e.HostID, keep))
}

// replaceKeepingCreated is the update that makes an entry's item hold attrs:
// SET each one, but createdAt only if the item has none (a re-added path
// keeps when it was first added), and REMOVE lastOpened when attrs have
// none (a zero time), as a put would. An update rather than a put with a
// read before it: one call, and no read to race.
func replaceKeepingCreated(attrs map[string]types.AttributeValue) *types.Update {
	return replacing(attrs, map[string]string{attrCreatedAt: "%[1]s = if_not_exists(%[1]s, %[2]s)"}, attrLastOpened)
}

// replacing is the update that makes an item hold attrs as a put of them
// would, but for the attributes attrs do not name, which it leaves alone:
// SET each of attrs, by the expression in set for its name if any (a format
// of the name's placeholder and the value's), and REMOVE each of optional
// that attrs lack, as #<name>. Conditions may add their own placeholders,
// other than #a<n>, :a<n> and those.
func replacing(attrs map[string]types.AttributeValue, set map[string]string, optional ...string) *types.Update {
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	var sets []string
	for i, name := range slices.Sorted(maps.Keys(attrs)) {
		n, v := fmt.Sprintf("#a%d", i), fmt.Sprintf(":a%d", i)
		names[n], values[v] = name, attrs[name]
		format, ok := set[name]
		if !ok {
			format = "%s = %s"
		}
		sets = append(sets, fmt.Sprintf(format, n, v))
	}
	expr := "SET " + strings.Join(sets, ", ") + removeAbsent(attrs, names, optional)
	return &types.Update{
		UpdateExpression:          &expr,
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
}

// removeAbsent is the REMOVE clause (with its leading space) of each of
// optional that attrs lack, as #<name> in names: what a put of attrs would
// leave out. It is "" when attrs have them all.
func removeAbsent(attrs map[string]types.AttributeValue, names map[string]string, optional []string) string {
	var removes []string
	for _, name := range optional {
		if _, ok := attrs[name]; !ok {
			names["#"+name] = name
			removes = append(removes, "#"+name)
		}
	}
	if len(removes) == 0 {
		return ""
	}
	return " REMOVE " + strings.Join(removes, ", ")
}

// fileRow is a recent entry as trimRecent reads it: its sort key, to delete
// it, and the attributes the order of Files needs.
type fileRow struct {
	sk string
	sshdeck.FileEntry
}

// decodeFileRow reads an entry projected on sk, path and lastOpened, whose
// layout is the same in every schema version (the projection leaves sv
// out).
func decodeFileRow(item map[string]types.AttributeValue) (*fileRow, error) {
	f, d := decode(item)
	r := &fileRow{sk: f.str(attrSK)}
	r.Path, r.LastOpened = f.str(attrPath), f.time(attrLastOpened)
	return decoded(r, d, "file-manager entry")
}

// trimRecent deletes the host's recent entries beyond the first keep in the
// order of Files: one consistent Query of them (sort key, path and
// lastOpened only) and, when there are more than keep, deleteAll.
//
// Two trims at once delete the same entries, which is harmless. A trim
// cannot tell an entry re-added since its query from the old one, and may
// delete it: the re-added path is then missing from the list, not wrong in
// it, and the next add of it brings it back.
func (s *Store) trimRecent(ctx context.Context, owner string, id int64, keep int) error {
	prefix, err := fileKindPrefix(id, sshdeck.RecentFile)
	if err != nil {
		return err
	}
	in := prefixQuery(ownerPK(owner), prefix)
	in.ProjectionExpression = aws.String("#sk, #path, #lastOpened")
	in.ExpressionAttributeNames["#path"] = attrPath
	in.ExpressionAttributeNames["#lastOpened"] = attrLastOpened
	rows, err := query(ctx, s, in, decodeFileRow)
	keep = max(keep, 0)
	if err != nil || len(rows) <= keep {
		return err
	}
	es := make([]*sshdeck.FileEntry, len(rows))
	sks := make(map[*sshdeck.FileEntry]string, len(rows))
	for i, r := range rows {
		es[i] = &r.FileEntry
		sks[es[i]] = r.sk
	}
	sshdeck.SortFiles(es, sshdeck.RecentFile)
	keys := make([]key, 0, len(es)-keep)
	for _, e := range es[keep:] {
		keys = append(keys, key{ownerPK(owner), sks[e]})
	}
	return s.deleteAll(ctx, keys)
}

// AddShortcut puts e only if its path is free, in one transaction with a
// check that the host exists and the increment of the host's count of
// shortcuts, conditioned on it being below limit (addCounted): one
// TransactWriteItems. At the limit, a GetItem of the counter finds it so,
// and a consistent GetItem of the entry tells a path already there (no-op)
// from a new one (LimitExceeded).
func (s *Store) AddShortcut(ctx context.Context, e *sshdeck.FileEntry, limit int) (bool, error) {
	if e.Kind != sshdeck.Shortcut {
		return false, fmt.Errorf("dynamo: add shortcut: kind %q is not %q", e.Kind, sshdeck.Shortcut)
	}
	if limit < 1 {
		return false, fmt.Errorf("dynamo: add shortcut: limit %d is not positive", limit)
	}
	k, err := fileKey(e.Owner, e.HostID, e.Kind, e.Path)
	if err != nil {
		return false, wrap("add shortcut", err)
	}
	failed, err := s.addCounted(ctx, shortcutCounter(e.Owner, e.HostID), limit, []types.TransactWriteItem{
		{ConditionCheck: s.hostCheck(e.Owner, e.HostID)},
		{Put: s.putNew(k.with(fileAttrs(e)))},
	}, nil)
	switch {
	case failed == 0:
		return false, hostNotFound(e.HostID)
	case failed == 1:
		return false, nil // the path is a shortcut already, left as it is
	case isAtLimit(err):
		found, err := s.exists(ctx, k)
		switch {
		case err != nil:
			return false, wrap("add shortcut", err)
		case found:
			return false, nil
		}
		return false, sshdeck.ShortcutsExceeded(e.HostID, limit)
	case err != nil:
		return false, wrap("add shortcut", err)
	}
	return true, nil
}

// Files returns the entries of one kind of the owner's host: a consistent
// Query of their prefix, every page, put in order by sshdeck.SortFiles (the
// sort keys hold a hash of the path, in no useful order).
func (s *Store) Files(ctx context.Context, owner string, hostID int64, kind sshdeck.FileKind) ([]*sshdeck.FileEntry, error) {
	prefix, err := fileKindPrefix(hostID, kind)
	if err != nil {
		return nil, wrap("files", err)
	}
	es, err := query(ctx, s, prefixQuery(ownerPK(owner), prefix), decodeFile)
	if err != nil {
		return nil, wrap("files", err)
	}
	sshdeck.SortFiles(es, kind)
	return es, nil
}

// DeleteFile removes one entry: one DeleteItem conditioned on the entry
// existing, for a shortcut one TransactWriteItems of that delete and the
// host's count of shortcuts (removeCounted). The NotFound message leaves the path out: it may be 4096
// characters long.
func (s *Store) DeleteFile(ctx context.Context, owner string, hostID int64, kind sshdeck.FileKind, path string) error {
	k, err := fileKey(owner, hostID, kind, path)
	if err != nil {
		return wrap("delete file", err)
	}
	notFound := sshdeck.Errorf(sshdeck.NotFound, "no %s entry with that path on host %d", kind, hostID)
	if kind == sshdeck.Shortcut {
		// Shortcuts are counted: the delete and the count's decrement are
		// one transaction.
		failed, err := s.removeCounted(ctx, shortcutCounter(owner, hostID), types.TransactWriteItem{Delete: &types.Delete{
			TableName:                &s.table,
			Key:                      k.attrs(),
			ConditionExpression:      aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		}})
		if failed == 0 {
			return notFound
		}
		return wrap("delete file", err)
	}
	_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                &s.table,
		Key:                      k.attrs(),
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	if conditionFailed(err) {
		return notFound
	}
	return wrap("delete file", err)
}

// deleteFiles deletes every entry of the host, both kinds: a consistent
// Query of their keys, every page, and deleteAll.
func (s *Store) deleteFiles(ctx context.Context, owner string, id int64) error {
	in := prefixQuery(ownerPK(owner), fileHostPrefix(id))
	in.ProjectionExpression = aws.String("#pk, #sk")
	keys, err := query(ctx, s, in, itemKey)
	if err != nil {
		return err
	}
	return s.deleteAll(ctx, keys)
}

// fileAttrs is a file-manager entry as stored (either kind): owner, kind,
// path, name, sshSessionId (S), hostId (N), isSSH (BOOL), createdAt and
// lastOpened (S, stamps; a shortcut has no lastOpened). The sort key holds
// a hash of the path, so the path is an attribute.
func fileAttrs(e *sshdeck.FileEntry) map[string]types.AttributeValue {
	a := newAttrs(9)
	a["owner"] = str(e.Owner)
	a["hostId"] = num(e.HostID)
	a["kind"] = str(string(e.Kind))
	a[attrPath] = str(e.Path)
	a["name"] = str(e.Name)
	a["isSSH"] = boolean(e.IsSSH)
	a["sshSessionId"] = str(e.SSHSessionID)
	putTime(a, attrCreatedAt, e.CreatedAt)
	putTime(a, attrLastOpened, e.LastOpened)
	return a
}

// decodeFile reads the item of fileAttrs, of any schema version: they are
// the same in 1 and 2.
func decodeFile(item map[string]types.AttributeValue) (*sshdeck.FileEntry, error) {
	f, d := decode(item)
	e := &sshdeck.FileEntry{
		Owner: f.str("owner"), HostID: f.int64("hostId"), Kind: sshdeck.FileKind(f.str("kind")),
		Path: f.str(attrPath), Name: f.str("name"), IsSSH: f.bool("isSSH"), SSHSessionID: f.str("sshSessionId"),
		CreatedAt: f.time(attrCreatedAt), LastOpened: f.time(attrLastOpened),
	}
	return decoded(e, d, "file-manager entry")
}
