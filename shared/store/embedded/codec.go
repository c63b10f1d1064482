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
