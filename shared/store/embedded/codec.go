package embedded

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// getJSON decodes the value at key into v and reports whether there was one.
// Decoding copies out of bbolt's memory map, so v stays valid after the
// transaction and callers may mutate it.
func getJSON(b *bolt.Bucket, key []byte, v any) (bool, error) {
	data := b.Get(key)
	if data == nil {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, fmt.Errorf("decode value of key %q: %w", key, err)
	}
	return true, nil
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, data)
}

// forEachJSON decodes every value of b, in key order, and calls fn with it.
func forEachJSON[T any](b *bolt.Bucket, fn func(*T) error) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			return nil // a nested bucket
		}
		var x T
		if _, err := getJSON(b, k, &x); err != nil {
			return err
		}
		return fn(&x)
	})
}

// purge deletes the values of b for which gone is true. Only stores with few
// values use it: it decodes them all.
func purge[T any](b *bolt.Bucket, gone func(*T) bool) error {
	var keys [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if v == nil {
			return nil
		}
		var x T
		if _, err := getJSON(b, k, &x); err != nil {
			return err
		}
		if gone(&x) {
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
