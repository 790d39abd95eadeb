// Package sleep waits for a while unless a context ends first: the one
// timer-and-select that the pacers, the push retries and the Telegram
// poller share.
package sleep

import (
	"context"
	"time"
)

// For waits d or until ctx is done, whichever comes first, and returns
// ctx.Err() in the second case. A d of zero or less does not wait: it
// returns ctx.Err() at once.
func For(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
