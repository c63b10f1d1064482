package dynamo

// TEMPORARY: the accounts operations of the DynamoDB store are being
// written on a branch; this file goes when they land.

import (
	"context"
	"errors"
	"time"
)

var errPending = errors.New("dynamo: accounts operations not implemented yet")

func (s *Store) Failures(ctx context.Context, key string, now time.Time) (int, time.Time, error) {
	return 0, time.Time{}, errPending
}
func (s *Store) AddFailure(ctx context.Context, key string, now time.Time, window time.Duration) (int, time.Time, error) {
	return 0, time.Time{}, errPending
}
