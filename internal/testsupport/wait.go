package testsupport

import (
	"testing"
	"time"
)

// Eventually polls cond every 10 ms until it holds, failing the test
// with "after <limit>: " and the formatted message when limit passes
// first.
func Eventually(t testing.TB, limit time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: "+format, append([]any{limit}, args...)...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Receive returns the next value from ch (the zero value once it is
// closed), failing the test with what it waited for when none comes
// within limit: no test waits without a bound.
func Receive[T any](t testing.TB, ch <-chan T, limit time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("%s: still waiting after %s", what, limit)
		var zero T
		return zero
	}
}

// Lazy formats as what it returns when the message is written, so that a
// failed poll's message reports the last value seen.
type Lazy func() string

func (l Lazy) String() string { return l() }
