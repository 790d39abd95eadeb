// Package fanout is the one engine of Herald's durable broadcast jobs.
// Push (internal/notifications) and Telegram (internal/messenger) plug in
// as a Channel: each feeds its own recipients, sends its own batches and
// records its own outcomes. The Engine owns the rest: the lease a River
// job holds on a job, working it a slice at a time, releasing, finishing
// or failing it, cancelling it, the progress announced to live
// subscribers, and the sweep that hands the job of a dead worker to a
// live replica (one SweepLoop for every channel). This file has the
// statuses, the version that orders a job's states, and the sweep; the
// store keeps both channels' jobs with one set of lease queries
// (internal/sqlstore/fanout.go).
package fanout

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
)

// Job statuses: queued (or scheduled, until its start time) → running →
// completed, failed or cancelled.
const (
	Scheduled = "scheduled"
	Queued    = "queued"
	Running   = "running"
	Completed = "completed"
	Failed    = "failed"
	Cancelled = "cancelled"
)

// Finished reports whether status is final.
func Finished(status string) bool {
	return status == Completed || status == Failed || status == Cancelled
}

// Version orders the states of one job from its status and the number of
// recipients whose outcome is counted: statuses only move forward and
// counters only grow, so it grows with every change. It is the event ID of
// live progress, the same on every replica, and a subscriber that saw
// version v needs nothing at or below it.
func Version(status string, counted int) int64 {
	rank := int64(1)
	switch {
	case status == Scheduled:
		rank = 0
	case status == Queued:
		rank = 1
	case status == Running:
		rank = 2
	case Finished(status):
		rank = 3
	}
	return int64(counted)*4 + rank
}

// Lease is the outcome of trying to take a job's lease.
type Lease struct {
	Acquired bool      // the caller now holds the lease (and the job is running)
	HeldBy   string    // the holder when not acquired
	Until    time.Time // the lease's expiry (the holder's when not acquired)
}

// SweepEvery is how often a channel whose leases last leaseTTL is swept: a
// few times per lease, so a job whose worker died is taken over soon after
// its lease expires.
func SweepEvery(leaseTTL time.Duration) time.Duration {
	return min(max(leaseTTL/4, 100*time.Millisecond), 5*time.Second)
}

// Sweeper is a channel's sweep: it queues a new River job for every
// running job whose lease expired or was released, and says how many.
type Sweeper interface {
	Sweep(ctx context.Context) (int, error)
	SweepEvery() time.Duration
}

// Sweep is a channel's sweeper with the channel's name for the log.
type Sweep struct {
	Name string // "broadcast", "messenger broadcast"
	Sweeper
}

// SweepLoop sweeps every channel, each at its own SweepEvery, from one
// goroutine until ctx ends; the channel it returns is closed once the loop
// has stopped. Every replica runs it; each stalled job is queued by one.
// A failed sweep is logged, unless the database is unavailable (it tells
// of that itself) or ctx ended, and tried again at the next tick.
func SweepLoop(ctx context.Context, log *slog.Logger, sweeps ...Sweep) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		next := make([]time.Time, len(sweeps)) // zero: sweep at once
		timer := time.NewTimer(0)
		defer timer.Stop()
		for {
			now := time.Now()
			wake := now.Add(time.Hour)
			for i, c := range sweeps {
				if !now.Before(next[i]) {
					if _, err := c.Sweep(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, storage.ErrUnavailable) {
						log.WarnContext(ctx, c.Name+" sweep failed", "err", err)
					}
					next[i] = now.Add(c.SweepEvery())
				}
				if next[i].Before(wake) {
					wake = next[i]
				}
			}
			timer.Reset(time.Until(wake))
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
	}()
	return done
}
