package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

func sameLoginSecrets(t *testing.T, got, want *sshdeck.LoginSecrets, what string) {
	t.Helper()
	same(t, got, want, func(ls *sshdeck.LoginSecrets) { ls.UpdatedAt = ms(ls.UpdatedAt) }, what)
}

func loginSecrets(t *testing.T, s sshdeck.Store, userID string) *sshdeck.LoginSecrets {
	t.Helper()
	ls, err := s.LoginSecrets(t.Context(), userID)
	must(t, err, "LoginSecrets")
	return ls
}

// testLoginSecrets: none before the first put; each put must name the
// version after the stored one (1 when none is), else Conflict and the
// stored secrets stay; every field comes back as put, and one emptied
// comes back empty.
func testLoginSecrets(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	_, err := s.LoginSecrets(ctx, "u-1")
	wantCode(t, err, sshdeck.NotFound, "LoginSecrets before any put")

	v1 := &sshdeck.LoginSecrets{UserID: "u-1", PasswordHash: "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA", Version: 1, UpdatedAt: base}
	wantCode(t, s.PutLoginSecrets(ctx, &sshdeck.LoginSecrets{UserID: "u-1", Version: 2, UpdatedAt: base}), sshdeck.Conflict, "PutLoginSecrets of version 2 when none is stored")
	must(t, s.PutLoginSecrets(ctx, v1), "PutLoginSecrets of version 1")
	sameLoginSecrets(t, loginSecrets(t, s, "u-1"), v1, "LoginSecrets after version 1")

	again := *v1
	again.PasswordHash = "other"
	wantCode(t, s.PutLoginSecrets(ctx, &again), sshdeck.Conflict, "PutLoginSecrets of version 1 again")
	sameLoginSecrets(t, loginSecrets(t, s, "u-1"), v1, "LoginSecrets after the refused put")

	v2 := &sshdeck.LoginSecrets{
		UserID: "u-1", PasswordHash: v1.PasswordHash,
		TOTP: []byte{0x00, 0x01, 0xfe, 0xff}, PendingTOTP: []byte("sealed\x00pending"),
		TOTPStep: 58_000_000_123, Version: 2, UpdatedAt: base.Add(time.Minute + 7*time.Millisecond),
	}
	must(t, s.PutLoginSecrets(ctx, v2), "PutLoginSecrets of version 2")
	sameLoginSecrets(t, loginSecrets(t, s, "u-1"), v2, "LoginSecrets after version 2")

	stale := *v2
	stale.TOTPStep++
	wantCode(t, s.PutLoginSecrets(ctx, &stale), sshdeck.Conflict, "PutLoginSecrets of version 2 again (stale)")
	ahead := *v2
	ahead.Version = 4
	wantCode(t, s.PutLoginSecrets(ctx, &ahead), sshdeck.Conflict, "PutLoginSecrets of version 4 over version 2")
	sameLoginSecrets(t, loginSecrets(t, s, "u-1"), v2, "LoginSecrets after the refused puts")

	// The pending secret confirmed, the password dropped: emptied fields
	// come back empty.
	v3 := &sshdeck.LoginSecrets{UserID: "u-1", TOTP: v2.PendingTOTP, TOTPStep: v2.TOTPStep + 1, Version: 3, UpdatedAt: base.Add(time.Hour)}
	must(t, s.PutLoginSecrets(ctx, v3), "PutLoginSecrets of version 3")
	got := loginSecrets(t, s, "u-1")
	sameLoginSecrets(t, got, v3, "LoginSecrets after version 3")
	if got.PendingTOTP != nil || got.PasswordHash != "" {
		t.Fatalf("LoginSecrets after emptying: pending %#v, password hash %q; want nil and empty", got.PendingTOTP, got.PasswordHash)
	}

	_, err = s.LoginSecrets(ctx, "u-2")
	wantCode(t, err, sshdeck.NotFound, "LoginSecrets of another user")
	for _, bad := range []*sshdeck.LoginSecrets{{UserID: "u-2"}, {Version: 1}} {
		if err := s.PutLoginSecrets(ctx, bad); err == nil {
			t.Fatalf("PutLoginSecrets of %+v: no error, want one (a user id and a version from 1 are required)", bad)
		}
	}
}

// testLoginSecretsConcurrent: of writers racing to put one version (two
// logins spending one TOTP code), exactly one wins, the rest are Conflict,
// and the winner's secrets are stored; the first version included.
func testLoginSecretsConcurrent(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	const racers = 16
	for version := int64(1); version <= 2; version++ {
		errs := make([]error, racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				<-start
				errs[i] = s.PutLoginSecrets(ctx, &sshdeck.LoginSecrets{
					UserID: "u-1", PasswordHash: fmt.Sprintf("hash-%d", i), TOTPStep: int64(i), Version: version, UpdatedAt: base,
				})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch sshdeck.ErrorCode(err) {
			case "":
				if winner >= 0 {
					t.Fatalf("version %d: writers %d and %d both won", version, winner, i)
				}
				winner = i
			case sshdeck.Conflict:
			default:
				t.Fatalf("version %d: writer %d: %v", version, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("version %d: no writer won", version)
		}
		got := loginSecrets(t, s, "u-1")
		if got.Version != version || got.PasswordHash != fmt.Sprintf("hash-%d", winner) || got.TOTPStep != int64(winner) {
			t.Fatalf("version %d: stored %+v, want writer %d's", version, got, winner)
		}
	}
}
