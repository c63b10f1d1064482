package embedded

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Values are records of this package's own types, never sshdeck's: a
// record's fields and their names on disk are the store's, and each kind's
// file maps its record from and to the domain type explicitly. Hosts, which
// a list reads by the thousand, are a binary format (hostRecord, and the
// primitives in binary.go); the other kinds are JSON of their record type,
// whose json tags are the names on disk: frozen, whatever the API calls
// the fields.

// jsonRecord is a record type stored as JSON. Only this package's record
// types have the method, so that a domain type cannot reach putJSON.
type jsonRecord interface{ jsonRecord() }

// getJSON decodes the value at key into r and reports whether there was
// one. Decoding copies out of bbolt's memory map, so r stays valid after
// the transaction and callers may mutate it.
func getJSON(b *bolt.Bucket, key []byte, r jsonRecord) (bool, error) {
	data := b.Get(key)
	if data == nil {
		return false, nil
	}
	if err := json.Unmarshal(data, r); err != nil {
		return true, fmt.Errorf("decode value of key %q: %w", key, err)
	}
	return true, nil
}

func putJSON(b *bolt.Bucket, key []byte, r jsonRecord) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.Put(key, data)
}

// forEachJSON decodes every value of b, in key order, and calls fn with it.
func forEachJSON[R any, P interface {
	*R
	jsonRecord
}](b *bolt.Bucket, fn func(P) error) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			return nil // a nested bucket
		}
		r := P(new(R))
		if _, err := getJSON(b, k, r); err != nil {
			return err
		}
		return fn(r)
	})
}

// purge deletes the values of b for which gone is true. Only stores with few
// values use it: it decodes them all.
func purge[R any, P interface {
	*R
	jsonRecord
}](b *bolt.Bucket, gone func(P) bool) error {
	var keys [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if v == nil {
			return nil
		}
		r := P(new(R))
		if _, err := getJSON(b, k, r); err != nil {
			return err
		}
		if gone(r) {
			keys = append(keys, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
