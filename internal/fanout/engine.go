package fanout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/herald-vpn/herald/internal/live"
	"github.com/herald-vpn/herald/internal/storage"
)

// ErrSlice is what a channel's Send returns when it has worked its slice:
// the River job snoozes and goes on where it stopped.
var ErrSlice = errors.New("broadcast slice done")

// ErrStopped is what a channel's Send returns when the job was cancelled
// or its lease lost to another worker.
var ErrStopped = errors.New("broadcast stopped")

// Failure is what a channel's Send returns when the job cannot go on: the
// job ends failed with Msg.
type Failure struct{ Msg string }

func (f *Failure) Error() string { return f.Msg }

// Channel is one way of fanning a job out (push, Telegram) as the engine
// works it: the job's lease, the sending, the end.
type Channel[J any] interface {
	// Get reads a job; ErrNotFound when unknown.
	Get(ctx context.Context, id string) (J, error)
	// Cancel cancels a queued, scheduled or running job (its lease stays
	// with its holder) and writes its event; a finished job is returned
	// unchanged. ErrNotFound when unknown.
	Cancel(ctx context.Context, id string) (J, error)
	// Acquire gives owner the job's lease until `until` when it is free,
	// expired or owner's, moving the job to running; a finished job is
	// returned without a lease. ErrNotFound when unknown.
	Acquire(ctx context.Context, id, owner string, until time.Time) (J, Lease, error)
	// Send feeds the job's recipients, sends them in batches and records
	// their outcomes, as owner, until every one is done (nil), its slice
	// is over (ErrSlice), it is stopped (ErrStopped), it cannot go on
	// (*Failure), or an error that River retries.
	Send(ctx context.Context, j J, owner string) error
	// Finish moves owner's running job to status (completed or failed,
	// with errMsg), frees the lease and writes its finishing event.
	Finish(ctx context.Context, id, owner, status, errMsg string) (J, error)
	// Release frees owner's lease.
	Release(ctx context.Context, id, owner string) error
	// Requeue queues a new River job for each running job whose lease
	// expired or was released, at most once per minInterval, and returns
	// their ids.
	Requeue(ctx context.Context, minInterval time.Duration) ([]string, error)
}

// Engine works the jobs of one channel from River jobs: one River job at a
// time holds a job's lease, works it a slice at a time, and ends it.
type Engine[J any] struct {
	Name     string // "broadcast", "messenger broadcast": in log lines
	Channel  Channel[J]
	LeaseTTL time.Duration
	Now      func() time.Time
	Log      *slog.Logger
	// Changed tells live subscribers that the job changed (final: at once).
	Changed func(id string, final bool)
	// Finished reports whether the job reached a final status.
	Finished func(J) bool
	// Summary is the job's counters, for log lines.
	Summary func(J) []any
	// NotFound is the error that answers for an unknown job.
	NotFound func(id string) error
	// GiveUp says whether err, on River's last attempt, fails the job and
	// with what message; otherwise River drops its job and the sweep
	// queues another once the lease has lapsed.
	GiveUp func(err error) (msg string, fail bool)
}

// Job returns a job; NotFound's error when unknown.
func (e *Engine[J]) Job(ctx context.Context, id string) (J, error) {
	j, err := e.Channel.Get(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		var zero J
		return zero, e.NotFound(id)
	}
	return j, err
}

// Cancel cancels a queued, scheduled or running job: its worker stops
// before its next batch, and what the batch out at the cancel sent is
// counted. A finished job is answered as it is; NotFound's error when
// unknown. Subscribers hear of it.
func (e *Engine[J]) Cancel(ctx context.Context, id string) (J, error) {
	j, err := e.Channel.Cancel(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		var zero J
		return zero, e.NotFound(id)
	}
	if err == nil {
		e.Changed(id, e.Finished(j))
	}
	return j, err
}

// SweepEvery is how often Sweep should run.
func (e *Engine[J]) SweepEvery() time.Duration { return SweepEvery(e.LeaseTTL) }

// Sweep queues a River job for every running job whose lease expired (its
// worker died or stalled) or was released (its worker stopped), so a live
// replica takes it over without a restart. Every replica runs it; each
// job is queued by one of them, at most once per lease period.
func (e *Engine[J]) Sweep(ctx context.Context) (int, error) {
	ids, err := e.Channel.Requeue(ctx, e.LeaseTTL)
	if len(ids) > 0 {
		e.Log.InfoContext(ctx, "stalled "+e.Name+"s queued for takeover", "job_ids", ids)
	}
	return len(ids), err
}

// Until is the end of a lease taken or renewed now.
func (e *Engine[J]) Until() time.Time { return e.Now().Add(e.LeaseTTL) }

// Work works job id as owner (the River job) until it is finished,
// cancelled, interrupted or its slice is over. A River job that snoozes
// between slices finds its own lease again, and any other River job for
// the job waits for that lease to expire. lastAttempt: River will not
// retry an error.
func (e *Engine[J]) Work(ctx context.Context, id, owner string, lastAttempt bool) error {
	j, lease, err := e.Channel.Acquire(ctx, id, owner, e.Until())
	if errors.Is(err, storage.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("%s %s does not exist", e.Name, id))
	}
	if err != nil {
		return err
	}
	if e.Finished(j) {
		return nil
	}
	if !lease.Acquired {
		// A live worker holds it; if it dies, the sweep queues a new
		// River job once its lease has expired.
		e.Log.DebugContext(ctx, e.Name+" held by another worker", "job_id", id, "holder", lease.HeldBy)
		return nil
	}
	e.Changed(id, false) // running
	e.Log.InfoContext(ctx, e.Name+" working", append([]any{"job_id", id, "owner", owner}, e.Summary(j)...)...)
	err = e.Channel.Send(ctx, j, owner)
	bg := context.WithoutCancel(ctx)
	var failure *Failure
	switch {
	case err == nil:
		f, ferr := e.Channel.Finish(bg, id, owner, Completed, "")
		if ferr != nil {
			return ferr
		}
		e.Changed(id, true)
		e.Log.InfoContext(ctx, e.Name+" finished", append([]any{"job_id", id}, e.Summary(f)...)...)
		return nil
	case errors.Is(err, ErrSlice):
		// The lease stays with this River job, which comes back at once.
		return river.JobSnooze(time.Millisecond)
	case errors.Is(err, ErrStopped):
		// Cancelled, or the lease was lost to another worker.
		e.Channel.Release(bg, id, owner)
		return nil
	case errors.As(err, &failure):
		return e.fail(bg, id, owner, failure.Msg)
	case ctx.Err() != nil:
		// Shutting down: every known outcome is written; the rest is sent
		// by the next run.
		e.Channel.Release(bg, id, owner)
		return river.JobSnooze(time.Second)
	}
	if msg, fail := e.GiveUp(err); lastAttempt && fail {
		return e.fail(bg, id, owner, msg)
	}
	// The provider or the database is down: River retries later and the
	// next run continues from where this one stopped.
	e.Channel.Release(bg, id, owner)
	e.Log.WarnContext(ctx, e.Name+" paused; River retries it", "job_id", id, "err", err)
	return err
}

// fail ends owner's job failed with msg.
func (e *Engine[J]) fail(ctx context.Context, id, owner, msg string) error {
	_, err := e.Channel.Finish(ctx, id, owner, Failed, msg)
	if err == nil {
		e.Changed(id, true)
	}
	return err
}

// NewProgress is a channel's announcer: a job's state, read by get and
// written by wire (the doors' wire type), reaches live subscribers on
// every replica at most once per interval, its end at once.
func NewProgress[J any](b *live.Broker, interval time.Duration, topic func(id string) string, get func(ctx context.Context, id string) (J, error),
	wire live.Codec[J], finished func(J) bool, log *slog.Logger, name string) *live.Announcer {
	return live.NewAnnouncer(b, interval, topic,
		func(ctx context.Context, id string) ([]byte, bool, error) {
			j, err := get(ctx, id)
			if err != nil {
				return nil, false, err
			}
			data, err := wire.Encode(j)
			return data, finished(j), err
		},
		func(id string, err error) { log.Warn(name+" progress not published", "job_id", id, "err", err) })
}
