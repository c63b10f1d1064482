package cloudtest

import (
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/auth"
)

// TestTOTPCode: RFC 6238's SHA-1 test vectors (its 8 digits' last 6), and
// shared/auth takes the code.
func TestTOTPCode(t *testing.T) {
	secret := []byte("12345678901234567890")
	for _, tc := range []struct {
		unix int64
		want string
	}{{59, "287082"}, {1111111109, "081804"}, {1111111111, "050471"}, {1234567890, "005924"}, {2000000000, "279037"}} {
		if got := TOTPCode(secret, time.Unix(tc.unix, 0)); got != tc.want {
			t.Errorf("TOTPCode at %d = %s, want %s", tc.unix, got, tc.want)
		}
	}
	now := time.Now()
	if _, ok := auth.VerifyTOTP(secret, TOTPCode(secret, now), now, 0); !ok {
		t.Error("shared/auth refuses the code of now")
	}
}
