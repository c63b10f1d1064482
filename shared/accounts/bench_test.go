package accounts

import (
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// BenchmarkLoginTiming measures what API.md asks to be alike: the 401 of
// an unknown name and the 401 of a wrong password (and, beside them, a
// login that succeeds). Compare the ns/op of the first two:
//
//	go test -run='^$' -bench=LoginTiming -benchtime=20x ./shared/accounts/
//
// The clock moves past the failure window at every iteration, so that
// the lockout never answers in their place.
func BenchmarkLoginTiming(b *testing.B) {
	for _, c := range []struct {
		name string
		req  LoginRequest
		want sshdeck.Code
	}{
		{"unknown-user", LoginRequest{Username: "nobody", Password: pwWrong}, sshdeck.Unauthorized},
		{"wrong-password", LoginRequest{Username: "alice", Password: pwWrong}, sshdeck.Unauthorized},
		{"right-password", LoginRequest{Username: "alice", Password: pwAlice}, ""},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newFixture(b)
			f.admin.SetTokenLimit(1 << 30)
			f.user(b, "alice", pwAlice, false)
			// A warm store and argon2 (the dummy hash is made once).
			f.svc.Login(b.Context(), c.req)
			for b.Loop() {
				f.clock.Add(FailureWindow + time.Minute)
				if _, err := f.svc.Login(b.Context(), c.req); sshdeck.ErrorCode(err) != c.want {
					b.Fatalf("%v, want code %q", err, c.want)
				}
			}
		})
	}
}
