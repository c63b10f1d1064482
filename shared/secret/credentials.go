package secret

import (
	"context"
	"fmt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// field is a credential field: its name in the additional data, and where
// it lives in the plaintext and sealed structs.
type field struct {
	name   string
	plain  func(*sshdeck.Credentials) *string
	sealed func(*sshdeck.SealedCredentials) *[]byte
}

var fields = []field{
	{"password", func(c *sshdeck.Credentials) *string { return &c.Password }, func(s *sshdeck.SealedCredentials) *[]byte { return &s.Password }},
	{"key", func(c *sshdeck.Credentials) *string { return &c.Key }, func(s *sshdeck.SealedCredentials) *[]byte { return &s.Key }},
	{"keyPassword", func(c *sshdeck.Credentials) *string { return &c.KeyPassword }, func(s *sshdeck.SealedCredentials) *[]byte { return &s.KeyPassword }},
}

// Previous is a record's credentials before an update, with their
// envelopes: a field whose value did not change keeps its envelope.
type Previous struct {
	Plain  sshdeck.Credentials
	Sealed sshdeck.SealedCredentials
}

// SealCredentials seals every non-empty field of c, each bound to
// ad(field name) ("password", "key", "keyPassword"). prev may be nil.
func (s *Sealer) SealCredentials(ctx context.Context, c sshdeck.Credentials, ad func(field string) string, prev *Previous) (sshdeck.SealedCredentials, error) {
	var out sshdeck.SealedCredentials
	for _, f := range fields {
		value := *f.plain(&c)
		switch {
		case value == "":
			continue
		case prev != nil && value == *f.plain(&prev.Plain):
			*f.sealed(&out) = *f.sealed(&prev.Sealed)
		default:
			env, err := s.Seal(ctx, []byte(value), ad(f.name))
			if err != nil {
				return out, fmt.Errorf("seal %s: %w", f.name, err)
			}
			*f.sealed(&out) = env
		}
	}
	return out, nil
}

// OpenCredentials opens what SealCredentials sealed with the same ad.
func (s *Sealer) OpenCredentials(ctx context.Context, sc sshdeck.SealedCredentials, ad func(field string) string) (sshdeck.Credentials, error) {
	var out sshdeck.Credentials
	for _, f := range fields {
		env := *f.sealed(&sc)
		if len(env) == 0 {
			continue
		}
		plain, err := s.Open(ctx, env, ad(f.name))
		if err != nil {
			return out, fmt.Errorf("open %s: %w", f.name, err)
		}
		*f.plain(&out) = string(plain)
	}
	return out, nil
}
