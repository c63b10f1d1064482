package dynamo

import "time"

// SetPageSize caps the items of one Query page, so that tests exercise
// pagination with a few items.
func SetPageSize(s *Store, n int32) { s.pageSize = n }

// SetBackoff sets the first wait before resending unprocessed batch writes,
// so that tests run out of attempts quickly.
func SetBackoff(s *Store, d time.Duration) { s.backoff = d }
