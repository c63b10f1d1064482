// Package storetest is the conformance suite of sshdeck.Store: every store
// (embedded, DynamoDB) runs it unchanged, so the layers above can rely on the
// contract written in the sshdeck interfaces rather than on one engine.
package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// Run runs the suite. open must return a fresh, empty store for each subtest;
// Run closes it when the subtest ends.
func Run(t *testing.T, open func(t *testing.T) sshdeck.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, sshdeck.Store)
	}{
		{"UserCreateAndGet", testUserCreateAndGet},
		{"UserNameTaken", testUserNameTaken},
		{"UserNotFound", testUserNotFound},
		{"UsersOrderedByName", testUsersOrderedByName},
		{"UserUpdate", testUserUpdate},
		{"TokenCreateAndFind", testTokenCreateAndFind},
		{"TokenConflict", testTokenConflict},
		{"TokenRevoke", testTokenRevoke},
		{"TokensOrderedByCreation", testTokensOrderedByCreation},
		{"TokenNotFound", testTokenNotFound},
		{"TokenWithinLimit", testTokenWithinLimit},
		{"TokenWithinConcurrent", testTokenWithinConcurrent},
		{"TokenRevokeUser", testTokenRevokeUser},
		{"TokenRevokeUserKeep", testTokenRevokeUserKeep},
		{"TokenByID", testTokenByID},
		{"TokenScopes", testTokenScopes},
		{"TokenTouch", testTokenTouch},
		{"TokenTouchConcurrent", testTokenTouchConcurrent},
		{"LoginSecrets", testLoginSecrets},
		{"LoginSecretsConcurrent", testLoginSecretsConcurrent},
		{"Failures", testFailures},
		{"FailuresConcurrent", testFailuresConcurrent},
		{"HostIDsPerOwner", testHostIDsPerOwner},
		{"HostIDsNeverReused", testHostIDsNeverReused},
		{"HostRoundTrip", testHostRoundTrip},
		{"HostCreateConflict", testHostCreateConflict},
		{"HostCreateInvalid", testHostCreateInvalid},
		{"HostsOrderedByID", testHostsOrderedByID},
		{"HostsPaged", testHostsPaged},
		{"HostUpdateStale", testHostUpdateStale},
		{"HostDeleteVersion", testHostDeleteVersion},
		{"HostNotFound", testHostNotFound},
		{"HostOwnerIsolation", testHostOwnerIsolation},
		{"HostCopies", testHostCopies},
		{"HostEmptyCollections", testHostEmptyCollections},
		{"HostConcurrentUpdates", testHostConcurrentUpdates},
		{"HostLimit", testHostLimit},
		{"HostLimitConcurrent", testHostLimitConcurrent},
		{"NextHostIDs", testNextHostIDs},
		{"HostsBatch", testHostsBatch},
		{"HostsBatchConflict", testHostsBatchConflict},
		{"HostsBatchLimit", testHostsBatchLimit},
		{"HostsBatchConcurrent", testHostsBatchConcurrent},
		{"HostsBatchInvalid", testHostsBatchInvalid},
		{"FileRecentNewestFirst", testFileRecentNewestFirst},
		{"FileRecentReAdd", testFileRecentReAdd},
		{"FileRecentKeep", testFileRecentKeep},
		{"FileShortcutAddOnce", testFileShortcutAddOnce},
		{"FileShortcutMax", testFileShortcutMax},
		{"FileShortcutMaxConcurrent", testFileShortcutMaxConcurrent},
		{"FileNeedsHost", testFileNeedsHost},
		{"FileDelete", testFileDelete},
		{"FileOwnerIsolation", testFileOwnerIsolation},
		{"FilePaths", testFilePaths},
		{"FileHostDeleteCascade", testFileHostDeleteCascade},
		{"FileCopies", testFileCopies},
		{"AlertRoundTrip", testAlertRoundTrip},
		{"AlertExpiry", testAlertExpiry},
		{"AlertDelete", testAlertDelete},
		{"AlertDismissals", testAlertDismissals},
		{"CacheRoundTrip", testCacheRoundTrip},
		{"CacheCount", testCacheCount},
		{"TunnelRoundTrip", testTunnelRoundTrip},
		{"TunnelPutGeneration", testTunnelPutGeneration},
		{"TunnelPutNeedsOwnerAndName", testTunnelPutNeedsOwnerAndName},
		{"TunnelPutKeepsLease", testTunnelPutKeepsLease},
		{"TunnelNotFound", testTunnelNotFound},
		{"TunnelOwnerIsolation", testTunnelOwnerIsolation},
		{"TunnelNames", testTunnelNames},
		{"TunnelsOrderedByName", testTunnelsOrderedByName},
		{"TunnelRunnable", testTunnelRunnable},
		{"TunnelCopies", testTunnelCopies},
		{"TunnelEmptyCredentials", testTunnelEmptyCredentials},
		{"TunnelJumps", testTunnelJumps},
		{"TunnelStatusGuard", testTunnelStatusGuard},
		{"TunnelLeaseAcquire", testTunnelLeaseAcquire},
		{"TunnelLeaseRelease", testTunnelLeaseRelease},
		{"TunnelLeaseConcurrent", testTunnelLeaseConcurrent},
		{"TunnelCreateLimit", testTunnelCreateLimit},
		{"TunnelCreateLimitConcurrent", testTunnelCreateLimitConcurrent},
		{"TunnelCreateSameNameAtLimit", testTunnelCreateSameNameAtLimit},
		{"TunnelDelete", testTunnelDelete},
		{"TunnelStopped", testTunnelStopped},
		{"KnownHostAddAndGet", testKnownHostAddAndGet},
		{"KnownHostOwnerIsolation", testKnownHostOwnerIsolation},
		{"AuditQuery", testAuditQuery},
		{"AuditWithTheChange", testAuditWithTheChange},
		{"Ping", testPing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

func testPing(t *testing.T, s sshdeck.Store) {
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// base is a millisecond-precise instant away from UTC, so that a store which
// drops the zone or the milliseconds is caught by the comparisons.
var base = time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.FixedZone("UTC+2", 2*3600))

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantCode(t *testing.T, err error, want sshdeck.Code, what string) {
	t.Helper()
	if got := sshdeck.ErrorCode(err); got != want {
		t.Fatalf("%s: got error %v (code %q), want code %q", what, err, got, want)
	}
}

// same compares records after normalize, reporting both on a difference.
func same[T any](t *testing.T, got, want *T, normalize func(*T), what string) {
	t.Helper()
	if got == nil || want == nil {
		t.Fatalf("%s: got %+v, want %+v", what, got, want)
	}
	g, w := *got, *want
	normalize(&g)
	normalize(&w)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, g, w)
	}
}

// ms makes instants comparable with ==: stores keep at least milliseconds,
// not necessarily the zone.
func ms(tm time.Time) time.Time { return tm.Truncate(time.Millisecond).UTC() }
