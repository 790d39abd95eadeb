package telegramtest

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/testsupport"
)

// Clock is a fake telegram.Clock for pacer tests: the shared fake clock
// (Now, Set, Advance) and fake sleep (Sleeps, Slept). Sleep returns at
// once: with ctx's error when ctx is done, and otherwise after recording
// d; a clock made with advance set also moves forward by each sleep, as
// real time would.
type Clock struct {
	*testsupport.Clock
	testsupport.Sleeper
	advance bool
}

// NewClock returns a clock standing at now; advance makes sleeping move it.
func NewClock(now time.Time, advance bool) *Clock {
	return &Clock{Clock: testsupport.NewClock(now), advance: advance}
}

// Sleep records d without waiting; it fails only when ctx is done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Sleeper.Sleep(ctx, d)
	if c.advance && d > 0 {
		c.Advance(d)
	}
	return nil
}
