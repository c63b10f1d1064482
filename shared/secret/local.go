package secret

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LocalKeyring is a data key kept in a file, for `sshdeck serve`. Its wrapped
// form is the key's id (a hash prefix), so an envelope sealed under another
// key file is refused instead of failing as garbage.
type LocalKeyring struct {
	key []byte
	id  []byte
}

// localKeyIDSize is how many bytes of the key's SHA-256 name it.
const localKeyIDSize = 8

// LoadOrCreateKeyFile reads the 32-byte key in path, creating it with mode
// 0600 on first use. Creation is atomic: the key is written to a temporary
// file, synced, then linked into place, so a crash never leaves a short key
// and two processes never end up with different keys.
func LoadOrCreateKeyFile(path string) (*LocalKeyring, error) {
	key, err := readKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createKeyFile(path); err != nil {
			return nil, err
		}
		key, err = readKeyFile(path)
	}
	if err != nil {
		return nil, err
	}
	return NewLocalKeyring(key)
}

// NewLocalKeyring returns a keyring over a 32-byte key.
func NewLocalKeyring(key []byte) (*LocalKeyring, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret: key has %d bytes, want %d", len(key), KeySize)
	}
	sum := sha256.Sum256(key)
	return &LocalKeyring{key: bytes.Clone(key), id: sum[:localKeyIDSize]}, nil
}

func (k *LocalKeyring) DataKey(context.Context) ([]byte, []byte, error) { return k.key, k.id, nil }

func (k *LocalKeyring) Unwrap(_ context.Context, wrapped []byte) ([]byte, error) {
	if !bytes.Equal(wrapped, k.id) {
		return nil, errors.New("sealed under another key file")
	}
	return k.key, nil
}

func readKeyFile(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secret: key file %s has mode %v; it must be readable by its owner only (chmod 600)", path, info.Mode().Perm())
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret: key file %s has %d bytes, want %d", path, len(key), KeySize)
	}
	return key, nil
}

func createKeyFile(path string) error {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("secret: new key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".key-*") // mode 0600
	if err != nil {
		return fmt.Errorf("secret: create key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(key)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), path)
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil // another process created it first: use theirs
	case err != nil:
		return fmt.Errorf("secret: create key file: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
