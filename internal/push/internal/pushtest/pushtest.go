// Package pushtest holds test helpers shared by the push packages' tests.
package pushtest

import (
	"context"
	"sync"
	"time"
)

// SleepRecorder replaces real waiting in retry tests: pass its Sleep as
// push.RetryPolicy.Sleep. It is safe for concurrent use.
type SleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

// Sleep records d and returns at once with ctx's error, if any.
func (r *SleepRecorder) Sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

// Waits returns a copy of the recorded waits, in order.
func (r *SleepRecorder) Waits() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...)
}
