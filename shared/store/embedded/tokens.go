package embedded

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// CreateToken stores t; Conflict when its id or hash exists.
func (s *Store) CreateToken(ctx context.Context, t *sshdeck.Token) error {
	if err := checkNewToken(t); err != nil {
		return err
	}
	return s.update(ctx, "create token", func(tx *bolt.Tx) error { return putToken(tx, t) })
}

// CreateTokenWithin stores t unless its user is absent or disabled, or has
// limit live tokens: the check and the put are one transaction, and
// transactions are serial, so no concurrent create passes the limit. The
// count scans every token: a local store holds few.
func (s *Store) CreateTokenWithin(ctx context.Context, t *sshdeck.Token, limit int) error {
	if err := checkNewToken(t); err != nil {
		return err
	}
	return s.update(ctx, "create token", func(tx *bolt.Tx) error {
		u, err := loadUser(tx, t.UserID)
		if err != nil {
			return err
		}
		if u.Disabled {
			return sshdeck.Errorf(sshdeck.Conflict, "user %q is disabled", u.Name)
		}
		live := 0
		err = forEachJSON(tx.Bucket(bucketTokens), func(r *tokenRecord) error {
			if r.UserID == t.UserID && !r.Revoked && !r.token().Expired(t.CreatedAt) {
				live++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if live >= limit {
			return sshdeck.Errorf(sshdeck.LimitExceeded, "user %q has %d tokens that are neither revoked nor expired, the most one may have (the limit of tokens per user); revoke one first", u.Name, live)
		}
		return putToken(tx, t)
	})
}

// checkNewToken refuses a token without its keys, or with an empty list
// of scopes that is not nil: the record leaves an empty list out, so it
// would read back as nil, every scope of the user, and a token that may do
// nothing would come back as one that may do everything.
func checkNewToken(t *sshdeck.Token) error {
	if t.ID == "" || t.UserID == "" || t.Hash == "" {
		return errors.New("embedded: create token: id, user id and hash are required")
	}
	if t.Scopes != nil && len(t.Scopes) == 0 {
		return sshdeck.Errorf(sshdeck.Invalid, "a token needs at least one scope")
	}
	return nil
}

// putToken puts t at its id and its hash; Conflict when either exists.
func putToken(tx *bolt.Tx, t *sshdeck.Token) error {
	tokens, hashes := tx.Bucket(bucketTokens), tx.Bucket(bucketTokenHashes)
	if tokens.Get([]byte(t.ID)) != nil {
		return sshdeck.Errorf(sshdeck.Conflict, "token %q exists", t.ID)
	}
	// The hash is not echoed: it identifies a live credential.
	if hashes.Get([]byte(t.Hash)) != nil {
		return sshdeck.Errorf(sshdeck.Conflict, "token hash exists")
	}
	if err := putJSON(tokens, []byte(t.ID), tokenRecordOf(t)); err != nil {
		return err
	}
	return hashes.Put([]byte(t.Hash), []byte(t.ID))
}

// TokenByHash returns the token with the hash; NotFound when absent.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*sshdeck.Token, error) {
	var t *sshdeck.Token
	err := s.view(ctx, "token by hash", func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketTokenHashes).Get([]byte(hash))
		if id == nil {
			return sshdeck.Errorf(sshdeck.NotFound, "token not found")
		}
		var err error
		t, err = loadToken(tx, string(id))
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// RevokeToken marks the token revoked at the time and returns it; a token
// revoked before keeps its first RevokedAt.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (*sshdeck.Token, error) {
	var t *sshdeck.Token
	err := s.update(ctx, "revoke token", func(tx *bolt.Tx) error {
		var err error
		if t, err = loadToken(tx, id); err != nil {
			return err
		}
		if t.Revoked {
			return nil
		}
		t.Revoked, t.RevokedAt = true, at
		return putJSON(tx.Bucket(bucketTokens), []byte(id), tokenRecordOf(t))
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Token returns the token with the id.
func (s *Store) Token(ctx context.Context, id string) (*sshdeck.Token, error) {
	var t *sshdeck.Token
	err := s.view(ctx, "token", func(tx *bolt.Tx) error {
		var err error
		t, err = loadToken(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// TouchToken sets the token's LastUsedAt to at unless it is at or past it.
func (s *Store) TouchToken(ctx context.Context, hash string, at time.Time) error {
	return s.update(ctx, "touch token", func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketTokenHashes).Get([]byte(hash))
		if id == nil {
			return sshdeck.Errorf(sshdeck.NotFound, "token not found")
		}
		t, err := loadToken(tx, string(id))
		if err != nil || !t.LastUsedAt.Before(at) {
			return err
		}
		t.LastUsedAt = at
		return putJSON(tx.Bucket(bucketTokens), id, tokenRecordOf(t))
	})
}

// RevokeUserTokens revokes every unrevoked token of the user in one
// transaction.
func (s *Store) RevokeUserTokens(ctx context.Context, userID string, at time.Time, keep string) ([]*sshdeck.Token, error) {
	revoked := []*sshdeck.Token{}
	err := s.update(ctx, "revoke user tokens", func(tx *bolt.Tx) error {
		revoked = revoked[:0] // a group commit may run this again
		b := tx.Bucket(bucketTokens)
		err := forEachJSON(b, func(r *tokenRecord) error {
			if r.UserID == userID && !r.Revoked && r.ID != keep {
				t := r.token()
				t.Revoked, t.RevokedAt = true, at
				revoked = append(revoked, t)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, t := range revoked {
			if err := putJSON(b, []byte(t.ID), tokenRecordOf(t)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(revoked, func(a, b *sshdeck.Token) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return revoked, nil
}

// Tokens returns the user's tokens ordered by creation time, then id. It scans
// every token: a local store holds a handful.
func (s *Store) Tokens(ctx context.Context, userID string) ([]*sshdeck.Token, error) {
	tokens := []*sshdeck.Token{}
	err := s.view(ctx, "tokens", func(tx *bolt.Tx) error {
		return forEachJSON(tx.Bucket(bucketTokens), func(r *tokenRecord) error {
			if r.UserID == userID {
				tokens = append(tokens, r.token())
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(tokens, func(a, b *sshdeck.Token) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return tokens, nil
}

func loadToken(tx *bolt.Tx, id string) (*sshdeck.Token, error) {
	var r tokenRecord
	ok, err := getJSON(tx.Bucket(bucketTokens), []byte(id), &r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "token %q not found", id)
	}
	return r.token(), nil
}

// tokenRecord is a token as stored, JSON under the names of schema 1. A
// zero ExpiresAt or RevokedAt is left out (omitzero), as it always was.
type tokenRecord struct {
	ID        string    `json:"id"`
	UserID    string    `json:"userId"`
	Name      string    `json:"name"`
	Hash      string    `json:"hash"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	Revoked   bool      `json:"revoked"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
	// Scopes and LastUsedAt came with schema 5; a token of before has
	// neither (nil scopes: every scope of its user).
	Scopes     []string  `json:"scopes,omitempty"`
	LastUsedAt time.Time `json:"lastUsedAt,omitzero"`
}

func (*tokenRecord) jsonRecord() {}

func tokenRecordOf(t *sshdeck.Token) *tokenRecord {
	var scopes []string
	for _, sc := range t.Scopes {
		scopes = append(scopes, string(sc))
	}
	return &tokenRecord{
		Scopes:     scopes,
		LastUsedAt: t.LastUsedAt,
		ID:         t.ID,
		UserID:     t.UserID,
		Name:       t.Name,
		Hash:       t.Hash,
		CreatedAt:  t.CreatedAt,
		ExpiresAt:  t.ExpiresAt,
		Revoked:    t.Revoked,
		RevokedAt:  t.RevokedAt,
	}
}

func (r *tokenRecord) token() *sshdeck.Token {
	var scopes []sshdeck.Scope
	for _, sc := range r.Scopes {
		scopes = append(scopes, sshdeck.Scope(sc))
	}
	return &sshdeck.Token{
		Scopes:     scopes,
		LastUsedAt: r.LastUsedAt,
		ID:         r.ID,
		UserID:     r.UserID,
		Name:       r.Name,
		Hash:       r.Hash,
		CreatedAt:  r.CreatedAt,
		ExpiresAt:  r.ExpiresAt,
		Revoked:    r.Revoked,
		RevokedAt:  r.RevokedAt,
	}
}
