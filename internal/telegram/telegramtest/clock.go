package telegramtest

import (
	"context"
	"sync"
	"time"
)

// Clock is a fake telegram.Clock for pacer tests: Sleep returns at once
// (or with ctx's error) and records the requested duration; a clock made
// with advance set also moves forward by each sleep, as real time would.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	advance bool
	sleeps  []time.Duration
}

// NewClock returns a clock standing at now; advance makes sleeping move it.
func NewClock(now time.Time, advance bool) *Clock {
	return &Clock{now: now, advance: advance}
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d without waiting; it fails only when ctx is done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	if c.advance && d > 0 {
		c.now = c.now.Add(d)
	}
	return nil
}

// Add moves the clock forward by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Sleeps returns the requested sleeps, oldest first.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// Slept returns the total of the positive sleeps requested.
func (c *Clock) Slept() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total time.Duration
	for _, d := range c.sleeps {
		if d > 0 {
			total += d
		}
	}
	return total
}
