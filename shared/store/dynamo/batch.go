package dynamo

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

const (
	// batchSize is the most requests one BatchWriteItem takes.
	batchSize = 25
	// batchAttempts bounds the calls spent on one batch: the first and the
	// resends of what DynamoDB left unprocessed.
	batchAttempts = 8
	// batchBackoff is the wait before the first resend; it doubles after
	// each (sleep), so that a throttled partition gets time.
	batchBackoff = 25 * time.Millisecond
)

// deleteAll deletes the items at keys, batchSize per BatchWriteItem. The
// deletes are unconditional: deleting an absent item succeeds, so two
// requests deleting the same items do not fail each other.
func (s *Store) deleteAll(ctx context.Context, keys []key) error {
	for chunk := range slices.Chunk(keys, batchSize) {
		reqs := make([]types.WriteRequest, len(chunk))
		for i, k := range chunk {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k.attrs()}}
		}
		if err := s.batchWrite(ctx, reqs); err != nil {
			return err
		}
	}
	return nil
}

// batchWrite sends one batch, then resends what DynamoDB answers as
// UnprocessedItems (it does so under throttling, without an error) after a
// jittered, growing wait, until none is left or batchAttempts calls were
// made.
func (s *Store) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	wait := cmp.Or(s.backoff, batchBackoff)
	for attempt := 1; ; attempt++ {
		out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{s.table: reqs},
		})
		if err != nil {
			return err
		}
		reqs = out.UnprocessedItems[s.table]
		if len(reqs) == 0 {
			return nil
		}
		if attempt == batchAttempts {
			return fmt.Errorf("%d writes still unprocessed after %d attempts", len(reqs), attempt)
		}
		if err := sleep(ctx, &wait); err != nil {
			return err
		}
	}
}
