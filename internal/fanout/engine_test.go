package fanout_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/herald-vpn/herald/internal/fanout"
	"github.com/herald-vpn/herald/internal/storage"
)

// job is a fake channel's job.
type job struct {
	id, status string
}

// channel is a fake fan-out channel: its one job, the lease it hands out,
// what its Send answers, and what the engine asked of it.
type channel struct {
	j        job
	lease    fanout.Lease
	missing  bool
	send     error
	finished []string // statuses, with the message after a colon
	released int
	requeued []string
}

func (c *channel) Acquire(_ context.Context, id, _ string, _ time.Time) (job, fanout.Lease, error) {
	if c.missing {
		return job{}, fanout.Lease{}, storage.ErrNotFound
	}
	if c.lease.Acquired {
		c.j.status = fanout.Running
	}
	return c.j, c.lease, nil
}

func (c *channel) Get(context.Context, string) (job, error) {
	if c.missing {
		return job{}, storage.ErrNotFound
	}
	return c.j, nil
}

func (c *channel) Cancel(context.Context, string) (job, error) {
	if c.missing {
		return job{}, storage.ErrNotFound
	}
	if !fanout.Finished(c.j.status) {
		c.j.status = fanout.Cancelled
	}
	return c.j, nil
}

func (c *channel) Send(context.Context, job, string) error { return c.send }

func (c *channel) Finish(_ context.Context, _, _, status, msg string) (job, error) {
	c.finished = append(c.finished, status+":"+msg)
	c.j.status = status
	return c.j, nil
}

func (c *channel) Release(context.Context, string, string) error { c.released++; return nil }

func (c *channel) Requeue(context.Context, time.Duration) ([]string, error) { return c.requeued, nil }

var errDown = errors.New("provider down")

// TestEngineWork: how a River attempt ends for each way a channel's Send
// ends, and what becomes of the job.
func TestEngineWork(t *testing.T) {
	cases := []struct {
		name        string
		ch          channel
		lastAttempt bool
		cancelled   bool // the worker is shutting down
		// want: the River answer ("nil", "snooze", "cancel", "error"), the
		// job's end ("" when none) and the releases.
		answer   string
		finished string
		released int
	}{
		{name: "done", ch: channel{lease: fanout.Lease{Acquired: true}}, answer: "nil", finished: "completed:"},
		{name: "slice over", ch: channel{lease: fanout.Lease{Acquired: true}, send: fanout.ErrSlice}, answer: "snooze"},
		{name: "stopped", ch: channel{lease: fanout.Lease{Acquired: true}, send: fanout.ErrStopped}, answer: "nil", released: 1},
		{name: "cannot go on", ch: channel{lease: fanout.Lease{Acquired: true}, send: &fanout.Failure{Msg: "refused"}}, answer: "nil", finished: "failed:refused"},
		{name: "shutting down", ch: channel{lease: fanout.Lease{Acquired: true}, send: context.Canceled}, cancelled: true, answer: "snooze", released: 1},
		{name: "down: River retries", ch: channel{lease: fanout.Lease{Acquired: true}, send: errDown}, answer: "error", released: 1},
		{name: "down on the last attempt", ch: channel{lease: fanout.Lease{Acquired: true}, send: errDown}, lastAttempt: true, answer: "nil", finished: "failed:gave up"},
		{name: "held by another", ch: channel{lease: fanout.Lease{HeldBy: "other"}}, answer: "nil"},
		{name: "already finished", ch: channel{j: job{status: fanout.Cancelled}}, answer: "nil"},
		{name: "unknown", ch: channel{missing: true}, answer: "cancel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch := c.ch
			ch.j.id = "j1"
			var changes []bool
			e := &fanout.Engine[job]{Name: "test broadcast", Channel: &ch, LeaseTTL: time.Second, Now: time.Now, Log: slog.New(slog.DiscardHandler),
				Changed:  func(id string, final bool) { changes = append(changes, final) },
				Finished: func(j job) bool { return fanout.Finished(j.status) },
				Summary:  func(j job) []any { return []any{"status", j.status} },
				GiveUp:   func(err error) (string, bool) { return "gave up", errors.Is(err, errDown) },
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancelled {
				cancel()
			}
			err := e.Work(ctx, "j1", "river-1", c.lastAttempt)
			var snooze *river.JobSnoozeError
			var cancelErr *river.JobCancelError
			answer := "error"
			switch {
			case err == nil:
				answer = "nil"
			case errors.As(err, &snooze):
				answer = "snooze"
			case errors.As(err, &cancelErr):
				answer = "cancel"
			}
			finished := ""
			if len(ch.finished) > 0 {
				finished = ch.finished[len(ch.finished)-1]
			}
			if answer != c.answer || finished != c.finished || len(ch.finished) > 1 || ch.released != c.released {
				t.Fatalf("answer %s (%v), finished %q, released %d; want %s, %q, %d", answer, err, ch.finished, ch.released, c.answer, c.finished, c.released)
			}
			// Subscribers hear of the start, and at once of the end.
			if c.finished != "" && (len(changes) != 2 || !changes[1]) {
				t.Fatalf("progress %v, want running then final", changes)
			}
		})
	}
}

var errUnknown = errors.New("no such job")

// TestEngineCancel: a cancel answers the job, tells subscribers at once,
// and an unknown job is the channel's error.
func TestEngineCancel(t *testing.T) {
	ch := &channel{j: job{id: "j1", status: fanout.Running}}
	var changes []bool
	e := &fanout.Engine[job]{Name: "test broadcast", Channel: ch, Log: slog.New(slog.DiscardHandler),
		Changed:  func(id string, final bool) { changes = append(changes, final) },
		Finished: func(j job) bool { return fanout.Finished(j.status) },
		NotFound: func(string) error { return errUnknown },
	}
	if j, err := e.Cancel(context.Background(), "j1"); err != nil || j.status != fanout.Cancelled || len(changes) != 1 || !changes[0] {
		t.Fatalf("cancel: %+v, %v, progress %v", j, err, changes)
	}
	ch.missing = true
	if _, err := e.Cancel(context.Background(), "j2"); !errors.Is(err, errUnknown) {
		t.Fatalf("cancel unknown: %v", err)
	}
	if _, err := e.Job(context.Background(), "j2"); !errors.Is(err, errUnknown) {
		t.Fatalf("unknown job: %v", err)
	}
}

// TestEngineSweep: the sweep queues what the channel finds stalled.
func TestEngineSweep(t *testing.T) {
	ch := &channel{requeued: []string{"a", "b"}}
	e := &fanout.Engine[job]{Name: "test broadcast", Channel: ch, LeaseTTL: 20 * time.Second, Log: slog.New(slog.DiscardHandler)}
	if n, err := e.Sweep(context.Background()); err != nil || n != 2 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if d := e.SweepEvery(); d != 5*time.Second {
		t.Fatalf("sweep every %v, want a quarter of the lease", d)
	}
}

// TestVersion: a job's version grows with its status and its counters.
func TestVersion(t *testing.T) {
	order := []int64{fanout.Version(fanout.Scheduled, 0), fanout.Version(fanout.Queued, 0), fanout.Version(fanout.Running, 0),
		fanout.Version(fanout.Running, 1), fanout.Version(fanout.Completed, 1), fanout.Version(fanout.Running, 2)}
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Fatalf("versions %v do not grow", order)
		}
	}
}

// sweeper counts its sweeps.
type sweeper struct {
	every time.Duration
	n     chan struct{}
}

func (s *sweeper) Sweep(context.Context) (int, error) { s.n <- struct{}{}; return 0, nil }
func (s *sweeper) SweepEvery() time.Duration          { return s.every }

// TestSweepLoop: one loop sweeps every channel at once, then each at its
// own pace, and stops with its context.
func TestSweepLoop(t *testing.T) {
	fast, slow := &sweeper{every: 10 * time.Millisecond, n: make(chan struct{}, 100)}, &sweeper{every: time.Hour, n: make(chan struct{}, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	done := fanout.SweepLoop(ctx, slog.New(slog.DiscardHandler), fanout.Sweep{Name: "fast", Sweeper: fast}, fanout.Sweep{Name: "slow", Sweeper: slow})
	<-slow.n
	for range 3 {
		<-fast.n
	}
	cancel()
	<-done
	if len(slow.n) != 0 {
		t.Fatalf("the hourly sweep ran %d more times", len(slow.n))
	}
}
