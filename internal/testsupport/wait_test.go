package testsupport_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/testsupport"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and
// stops the calling goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// run calls fn with a recorder and returns the fatal message, "" if none.
func run(t *testing.T, fn func(tb testing.TB)) (msg string) {
	f := &fatalRecorder{TB: t}
	defer func() {
		if r := recover(); r != nil && r != f {
			panic(r)
		}
		msg = f.msg
	}()
	fn(f)
	return ""
}

func TestEventually(t *testing.T) {
	var n atomic.Int32
	if msg := run(t, func(tb testing.TB) {
		testsupport.Eventually(tb, 5*time.Second, func() bool { return n.Add(1) >= 3 }, "three polls")
	}); msg != "" || n.Load() != 3 {
		t.Fatalf("failed with %q after %d polls", msg, n.Load())
	}
	msg := run(t, func(tb testing.TB) {
		testsupport.Eventually(tb, 30*time.Millisecond, func() bool { return false }, "waiting for %s", "nothing")
	})
	if msg != "after 30ms: waiting for nothing" {
		t.Fatalf("message %q", msg)
	}
}

func TestReceive(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v := testsupport.Receive(t, ch, time.Second, "a value"); v != 7 {
		t.Fatalf("got %d", v)
	}
	close(ch)
	if v := testsupport.Receive(t, ch, time.Second, "the close"); v != 0 {
		t.Fatalf("got %d from a closed channel", v)
	}
	msg := run(t, func(tb testing.TB) { testsupport.Receive(tb, make(chan int), 20*time.Millisecond, "a value") })
	if msg != "a value: still waiting after 20ms" {
		t.Fatalf("message %q", msg)
	}
}
