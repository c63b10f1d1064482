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

// rotatingKeyring hands out one data key, then another after rotate; it
// opens both.
type rotatingKeyring struct {
	keys    map[string][]byte // by wrapped form
	current string
}

func (k *rotatingKeyring) rotate(name string) {
	key := bytes.Repeat([]byte{byte(len(k.keys) + 1)}, KeySize)
	k.keys[name], k.current = key, name
}

func (k *rotatingKeyring) DataKey(context.Context) ([]byte, []byte, error) {
	return k.keys[k.current], []byte(k.current), nil
}

func (k *rotatingKeyring) Unwrap(_ context.Context, wrapped []byte) ([]byte, error) {
	key, ok := k.keys[string(wrapped)]
	if !ok {
		return nil, ErrOpen
	}
	return key, nil
}

// TestSealerKeepsEachKeysCipher: the Sealer keeps a cipher per data key;
// envelopes under each key, sealed in turn, open with their own key only,
// also past the bound of kept ciphers.
func TestSealerKeepsEachKeysCipher(t *testing.T) {
	k := &rotatingKeyring{keys: map[string][]byte{}}
	s := NewSealer(k)
	ctx := context.Background()
	envs := map[string][]byte{}
	for _, name := range []string{"a", "b", "c"} {
		k.rotate(name)
		env, err := s.Seal(ctx, []byte("pw-"+name), "ad")
		if err != nil {
			t.Fatal(err)
		}
		envs[name] = env
	}
	for name, env := range envs {
		if got, err := s.Open(ctx, env, "ad"); err != nil || string(got) != "pw-"+name {
			t.Fatalf("Open of %s's envelope = %q, %v", name, got, err)
		}
		// The same ciphertext presented as another key's does not open.
		moved := bytes.Clone(env)
		moved[2] = 'a' + (env[2]-'a'+1)%3
		if _, err := s.Open(ctx, moved, "ad"); err != ErrOpen {
			t.Fatalf("%s's envelope under another key: %v, want ErrOpen", name, err)
		}
	}
	for i := range maxAEADs + 10 {
		k.keys[string(rune(0x100+i))] = bytes.Repeat([]byte{byte(i)}, KeySize)
		k.current = string(rune(0x100 + i))
		if _, err := s.Seal(ctx, []byte("x"), "ad"); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.aeads) > maxAEADs {
		t.Fatalf("%d ciphers kept, bound %d", len(s.aeads), maxAEADs)
	}
	if got, err := s.Open(ctx, envs["b"], "ad"); err != nil || string(got) != "pw-b" {
		t.Fatalf("Open after the bound = %q, %v", got, err)
	}
}

// BenchmarkOpen: opening one password, as a host read does per host.
func BenchmarkOpen(b *testing.B) {
	k, err := NewLocalKeyring(bytes.Repeat([]byte{7}, KeySize))
	if err != nil {
		b.Fatal(err)
	}
	s := NewSealer(k)
	ctx := context.Background()
	env, err := s.Seal(ctx, []byte("hunter2"), "ad")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Open(ctx, env, "ad"); err != nil {
			b.Fatal(err)
		}
	}
}
