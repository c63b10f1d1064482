package secret

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

func newTestSealer(t *testing.T) (*Sealer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret.key")
	k, err := LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return NewSealer(k), path
}

func TestSealOpenRoundTrip(t *testing.T) {
	s, _ := newTestSealer(t)
	ctx := context.Background()
	for _, plain := range []string{"", "hunter2", string(bytes.Repeat([]byte("k"), 70000))} {
		env, err := s.Seal(ctx, []byte(plain), AD("host", "usr_1", "7", "password"))
		if err != nil {
			t.Fatal(err)
		}
		if len(plain) > 0 && bytes.Contains(env, []byte(plain)) {
			t.Fatal("envelope contains the plaintext")
		}
		got, err := s.Open(ctx, env, AD("host", "usr_1", "7", "password"))
		if err != nil || string(got) != plain {
			t.Fatalf("Open = %q, %v", got, err)
		}
	}
}

func TestSealUsesFreshNonces(t *testing.T) {
	s, _ := newTestSealer(t)
	a, _ := s.Seal(context.Background(), []byte("same"), "ad")
	b, _ := s.Seal(context.Background(), []byte("same"), "ad")
	if bytes.Equal(a, b) {
		t.Fatal("two seals of the same plaintext are equal")
	}
}

func TestOpenRefusesMovedOrTamperedEnvelopes(t *testing.T) {
	s, _ := newTestSealer(t)
	ctx := context.Background()
	ad := AD("host", "usr_1", "7", "password")
	env, err := s.Seal(ctx, []byte("hunter2"), ad)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newTestSealer(t)
	flipped := bytes.Clone(env)
	flipped[len(flipped)-1] ^= 1
	cases := map[string]struct {
		s   *Sealer
		env []byte
		ad  string
	}{
		"other owner":  {s, env, AD("host", "usr_2", "7", "password")},
		"other record": {s, env, AD("host", "usr_1", "8", "password")},
		"other field":  {s, env, AD("host", "usr_1", "7", "key")},
		"flipped bit":  {s, flipped, ad},
		"truncated":    {s, env[:len(env)-20], ad},
		"empty":        {s, nil, ad},
		"bad version":  {s, append([]byte{9}, env[1:]...), ad},
		"other key":    {other, env, ad},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := c.s.Open(ctx, c.env, c.ad)
			if err == nil {
				t.Fatalf("opened: %q", got)
			}
			if bytes.Contains([]byte(err.Error()), []byte("hunter2")) {
				t.Fatal("error text contains the plaintext")
			}
		})
	}
}

func TestKeyFileIsCreatedOnceWithMode0600(t *testing.T) {
	s, path := newTestSealer(t)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 || info.Size() != KeySize {
		t.Fatalf("key file mode %v size %d", info.Mode().Perm(), info.Size())
	}
	env, _ := s.Seal(context.Background(), []byte("x"), "ad")
	again, err := LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSealer(again).Open(context.Background(), env, "ad"); err != nil {
		t.Fatalf("reloaded key cannot open: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".key-*"))
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

func TestKeyFileRefusesLooseModeAndWrongSize(t *testing.T) {
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose.key")
	os.WriteFile(loose, bytes.Repeat([]byte{1}, KeySize), 0o644)
	os.Chmod(loose, 0o644)
	if _, err := LoadOrCreateKeyFile(loose); err == nil {
		t.Fatal("loaded a world-readable key file")
	}
	short := filepath.Join(dir, "short.key")
	os.WriteFile(short, []byte("short"), 0o600)
	if _, err := LoadOrCreateKeyFile(short); err == nil {
		t.Fatal("loaded a short key file")
	}
	if _, err := LoadOrCreateKeyFile(filepath.Join(dir, "missing-dir", "k")); err == nil {
		t.Fatal("created a key file in a missing directory")
	}
}
