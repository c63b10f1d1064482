package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sshdeck/sshdeck/shared/sshdeck"
)

// wantFailures fails the test unless the key's window in force at now
// counts n and ends at until (ms: stores keep milliseconds, not zones).
func wantFailures(t *testing.T, s sshdeck.Store, key string, now time.Time, n int, until time.Time, what string) {
	t.Helper()
	gotN, gotUntil, err := s.Failures(t.Context(), key, now)
	must(t, err, what)
	if gotN != n || !ms(gotUntil).Equal(ms(until)) {
		t.Fatalf("%s: got %d until %v, want %d until %v", what, gotN, gotUntil, n, until)
	}
}

// addFailure adds one and checks the answer.
func addFailure(t *testing.T, s sshdeck.Store, key string, now time.Time, window time.Duration, n int, until time.Time, what string) {
	t.Helper()
	gotN, gotUntil, err := s.AddFailure(t.Context(), key, now, window)
	must(t, err, what)
	if gotN != n || !ms(gotUntil).Equal(ms(until)) {
		t.Fatalf("%s: got %d until %v, want %d until %v", what, gotN, gotUntil, n, until)
	}
}

// testFailures: the first failure opens a window of its length, those in
// it count up (a later one's length changes nothing), the count is gone at
// the window's end, and a failure after it opens the next window at 1.
// Keys are independent; a key of more than sshdeck.MaxFailureKey bytes, or
// none, is an error.
func testFailures(t *testing.T, s sshdeck.Store) {
	ctx := t.Context()
	const window = 15 * time.Minute
	name, addr := "name:"+strings.Repeat("ab", 32), "addr:2001:db8::1"
	wantFailures(t, s, name, base, 0, time.Time{}, "Failures of an unknown key")

	until := base.Add(window)
	addFailure(t, s, name, base, window, 1, until, "the first AddFailure")
	addFailure(t, s, name, base.Add(time.Minute), window, 2, until, "AddFailure in the window")
	addFailure(t, s, name, base.Add(2*time.Minute), 2*window, 3, until, "AddFailure in the window, of another length")
	wantFailures(t, s, name, base.Add(3*time.Minute), 3, until, "Failures in the window")
	wantFailures(t, s, name, until.Add(-time.Millisecond), 3, until, "Failures at the window's last millisecond")
	wantFailures(t, s, name, until, 0, time.Time{}, "Failures at the window's end")
	wantFailures(t, s, name, until.Add(time.Hour), 0, time.Time{}, "Failures after the window")

	wantFailures(t, s, addr, base, 0, time.Time{}, "Failures of another key")
	addFailure(t, s, addr, base.Add(time.Minute), time.Minute, 1, base.Add(2*time.Minute), "AddFailure of another key")
	wantFailures(t, s, name, base.Add(3*time.Minute), 3, until, "Failures of the first key after another's add")

	next := until.Add(window)
	addFailure(t, s, name, until, window, 1, next, "AddFailure at the window's end")
	addFailure(t, s, name, until.Add(time.Second), window, 2, next, "AddFailure in the next window")
	wantFailures(t, s, name, until.Add(time.Second), 2, next, "Failures in the next window")
	// Long after, the next window's count is gone too.
	addFailure(t, s, name, next.Add(24*time.Hour), window, 1, next.Add(24*time.Hour+window), "AddFailure a day later")

	longest := "addr:" + strings.Repeat("9", sshdeck.MaxFailureKey-len("addr:"))
	addFailure(t, s, longest, base, window, 1, until, "AddFailure of a key of MaxFailureKey bytes")
	for _, bad := range []string{"", longest + "9"} {
		if _, _, err := s.AddFailure(ctx, bad, base, window); err == nil {
			t.Fatalf("AddFailure of a key of %d bytes: no error", len(bad))
		}
		if _, _, err := s.Failures(ctx, bad, base); err == nil {
			t.Fatalf("Failures of a key of %d bytes: no error", len(bad))
		}
	}
}

// testFailuresConcurrent: racing adds on one key are never lost, whether
// they open its first window or the next one after the first ended: 50
// adds count 50, and each answers its own count, 1 to 50.
func testFailuresConcurrent(t *testing.T, s sshdeck.Store) {
	const racers, window = 50, time.Hour
	race := func(now time.Time, what string) {
		t.Helper()
		ns := make([]int, racers)
		errs := make([]error, racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				<-start
				var until time.Time
				ns[i], until, errs[i] = s.AddFailure(t.Context(), "addr:10.0.0.5", now, window)
				if errs[i] == nil && !ms(until).Equal(ms(now.Add(window))) {
					errs[i] = fmt.Errorf("until %v, want %v", until, now.Add(window))
				}
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			must(t, err, fmt.Sprintf("%s: racing AddFailure %d", what, i))
		}
		slices.Sort(ns)
		for i, n := range ns {
			if n != i+1 {
				t.Fatalf("%s: the racing adds answered %v, want each of 1 to %d once", what, ns, racers)
			}
		}
		wantFailures(t, s, "addr:10.0.0.5", now, racers, now.Add(window), what)
	}
	race(base, "a new key")
	race(base.Add(window+time.Second), "after the first window ended")
}
