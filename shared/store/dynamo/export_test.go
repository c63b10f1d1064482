package dynamo

// SetPageSize caps the items of one Query page, so that tests exercise
// pagination with a few items.
func SetPageSize(s *Store, n int32) { s.pageSize = n }
