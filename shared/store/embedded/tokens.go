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
	if t.ID == "" || t.UserID == "" || t.Hash == "" {
		return errors.New("embedded: create token: id, user id and hash are required")
	}
	return s.update(ctx, "create token", func(tx *bolt.Tx) error {
		tokens, hashes := tx.Bucket(bucketTokens), tx.Bucket(bucketTokenHashes)
		if tokens.Get([]byte(t.ID)) != nil {
			return sshdeck.Errorf(sshdeck.Conflict, "token %q exists", t.ID)
		}
		// The hash is not echoed: it identifies a live credential.
		if hashes.Get([]byte(t.Hash)) != nil {
			return sshdeck.Errorf(sshdeck.Conflict, "token hash exists")
		}
		if err := putJSON(tokens, []byte(t.ID), t); err != nil {
			return err
		}
		return hashes.Put([]byte(t.Hash), []byte(t.ID))
	})
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
		return putJSON(tx.Bucket(bucketTokens), []byte(id), t)
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Tokens returns the user's tokens ordered by creation time, then id. It scans
// every token: a local store holds a handful.
func (s *Store) Tokens(ctx context.Context, userID string) ([]*sshdeck.Token, error) {
	tokens := []*sshdeck.Token{}
	err := s.view(ctx, "tokens", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTokens)
		return b.ForEach(func(id, _ []byte) error {
			var t sshdeck.Token
			if _, err := getJSON(b, id, &t); err != nil {
				return err
			}
			if t.UserID == userID {
				tokens = append(tokens, &t)
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
	var t sshdeck.Token
	ok, err := getJSON(tx.Bucket(bucketTokens), []byte(id), &t)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, sshdeck.Errorf(sshdeck.NotFound, "token %q not found", id)
	}
	return &t, nil
}
