package dynamo_test

import (
	"testing"

	"github.com/sshdeck/sshdeck/internal/dynamotest"
	"github.com/sshdeck/sshdeck/shared/sshdeck"
	"github.com/sshdeck/sshdeck/shared/store/dynamo"
	"github.com/sshdeck/sshdeck/shared/store/storetest"
)

func start(t *testing.T) (*dynamo.Store, *dynamotest.Server) {
	t.Helper()
	srv := dynamotest.Start(t)
	return dynamo.New(srv.Client, srv.Table), srv
}

// TestConformance runs the suite on a fresh server per subtest, and checks
// that no subtest made the store Scan.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) sshdeck.Store {
		s, srv := start(t)
		t.Cleanup(func() {
			if n := srv.Calls()["Scan"]; n != 0 {
				t.Errorf("the store made %d Scan calls", n)
			}
		})
		return s
	})
}
