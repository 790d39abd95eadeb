// Package testsupport holds the small fakes that tests (and the test
// fakes of outside systems) across Herald share. Production code does not
// import it.
package testsupport

import (
	"bytes"
	"context"
	"sync"
	"time"
)

// Clock is a fake clock that a test sets and moves by hand; it is safe for
// concurrent use. Its method value Now is the func() time.Time clock that
// Herald's constructors take. The zero Clock stands at the zero time.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock by d (back when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Buffer is an io.Writer that collects what is written, safe for
// concurrent writes and reads (a logger's or a child process's output
// read while it runs). The zero Buffer is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Sleeper is a fake sleep for code that takes a
// func(ctx, d time.Duration) error: Sleep records d and returns at once,
// with ctx's error if ctx is done. It is safe for concurrent use; the
// zero Sleeper is ready.
type Sleeper struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

// Sleep records d without waiting and returns ctx.Err().
func (s *Sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.sleeps = append(s.sleeps, d)
	s.mu.Unlock()
	return ctx.Err()
}

// Sleeps returns the requested sleeps, oldest first.
func (s *Sleeper) Sleeps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.sleeps...)
}

// Slept returns the total of the positive sleeps requested.
func (s *Sleeper) Slept() time.Duration {
	var total time.Duration
	for _, d := range s.Sleeps() {
		if d > 0 {
			total += d
		}
	}
	return total
}

// SleepingClock is a fake of the clocks that both read the time and sleep
// (limits.Clock): a Clock (Now, Set, Advance) and a Sleeper (Sleeps,
// Slept). Sleep returns at once: with ctx's error when ctx is done, and
// otherwise after recording d; a clock made with advance set also moves
// forward by each sleep, as real time would.
type SleepingClock struct {
	*Clock
	Sleeper
	advance bool
}

// NewSleepingClock returns a clock standing at now; advance makes
// sleeping move it.
func NewSleepingClock(now time.Time, advance bool) *SleepingClock {
	return &SleepingClock{Clock: NewClock(now), advance: advance}
}

// Sleep records d without waiting; it fails only when ctx is done.
func (c *SleepingClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Sleeper.Sleep(ctx, d)
	if c.advance && d > 0 {
		c.Advance(d)
	}
	return nil
}
