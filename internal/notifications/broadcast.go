package notifications

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
)

// QueuePush is the River queue of broadcast jobs; give it its own
// river.QueueConfig so that broadcasts never delay emails. One worker slot
// per concurrent broadcast is enough: each broadcast sends with
// Config.Concurrency goroutines of its own.
const QueuePush = "push"

// BroadcastArgs is the River job that works one broadcast. It carries only
// the job's ID: the walk's cursor lives in the job row, where it moves in
// the same transaction as the claims, so any River job for the broadcast
// (the first, a retry, or one queued by Recover) continues where the last
// one stopped.
type BroadcastArgs struct {
	JobID string `json:"job_id"`
}

// Kind implements river.JobArgs.
func (BroadcastArgs) Kind() string { return "push_broadcast" }

// InsertOpts puts broadcasts on QueuePush.
func (BroadcastArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueuePush} }

// BroadcastWorker works BroadcastArgs; register it with river.AddWorker.
type BroadcastWorker struct {
	river.WorkerDefaults[BroadcastArgs]
	Service *Service
}

// Timeout bounds one River attempt: a broadcast works in slices of
// Config.Slice and snoozes in between, so a River job whose process died
// is rescued by River once this has passed (the sweeper takes the
// broadcast over much sooner, after Config.LeaseTTL).
func (w *BroadcastWorker) Timeout(*river.Job[BroadcastArgs]) time.Duration {
	return w.Service.cfg.Slice + w.Service.cfg.StopGrace + time.Minute
}

// Work implements river.Worker. The lease owner is the River job: a
// job that snoozes between slices finds its own lease again, and any other
// job for the broadcast waits for that lease to expire.
func (w *BroadcastWorker) Work(ctx context.Context, job *river.Job[BroadcastArgs]) error {
	return w.Service.work(ctx, job.Args.JobID, fmt.Sprintf("river-%d", job.ID), job.Attempt >= job.MaxAttempts)
}

// errProviderDown: many sends in a row failed transiently.
var errProviderDown = errors.New("push provider unavailable")

// errSliceDone: the run worked its slice; the River job snoozes and goes on.
var errSliceDone = errors.New("broadcast slice done")

// run is one worker's hold on one broadcast.
type run struct {
	s        *Service
	id       string
	owner    string
	n        push.Notification
	sliceEnd time.Time
}

// work runs a broadcast until it is finished, cancelled, interrupted or its
// slice is over. lastAttempt: River will not retry an error, so fail the
// broadcast instead.
func (s *Service) work(ctx context.Context, id, owner string, lastAttempt bool) error {
	lease, err := s.store.AcquireBroadcast(ctx, id, owner, s.leaseUntil())
	if errors.Is(err, storage.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("broadcast %s does not exist", id))
	}
	if err != nil {
		return err
	}
	if lease.Job.Finished() {
		return nil
	}
	if !lease.Acquired {
		// A live worker holds it; if it dies, the sweeper queues a new
		// River job once its lease has expired.
		s.cfg.Logger.DebugContext(ctx, "broadcast held by another worker", "job_id", id, "holder", lease.HeldBy)
		return nil
	}
	s.progress.Changed(id, false) // running
	r := &run{s: s, id: id, owner: owner, n: Notification{Subject: lease.Job.Subject, Content: lease.Job.Content, Data: lease.Job.Data, Options: lease.Job.Options}.push(), sliceEnd: s.cfg.Now().Add(s.cfg.Slice)}
	r.n.CollapseKey = id // a resend after a crash replaces, not repeats, on the device
	s.cfg.Logger.InfoContext(ctx, "broadcast working", "job_id", id, "owner", owner, "total_recipients", lease.Job.TotalRecipients)
	err = r.all(ctx)
	bg := context.WithoutCancel(ctx)
	var fatal *fatalError
	switch {
	case err == nil:
		j, ferr := s.store.FinishBroadcast(bg, id, owner, StatusCompleted, "")
		if ferr != nil {
			return ferr
		}
		s.progress.Changed(id, true)
		s.cfg.Logger.InfoContext(ctx, "broadcast finished", "job_id", id, "status", j.Status, "sent", j.Sent, "failed", j.Failed, "invalid_tokens", j.InvalidTokens)
		return nil
	case errors.Is(err, errSliceDone):
		// The lease stays with this River job, which comes back at once.
		return river.JobSnooze(time.Millisecond)
	case errors.Is(err, errStopped):
		// Cancelled, or the lease was lost to another worker.
		s.store.ReleaseBroadcast(bg, id, owner)
		return nil
	case errors.As(err, &fatal):
		s.cfg.Logger.ErrorContext(ctx, "BROADCAST FAILED: the push provider refused the request; check the FCM/APNs credentials and settings", "job_id", id, "err", fatal.err)
		_, ferr := s.store.FinishBroadcast(bg, id, owner, StatusFailed, "push provider refused the request: "+fatal.err.Error())
		s.progress.Changed(id, true)
		return ferr
	case ctx.Err() != nil:
		// Shutting down: every known outcome is written; the unknown ones
		// stay claimed and are sent by the next run.
		s.store.ReleaseBroadcast(bg, id, owner)
		return river.JobSnooze(time.Second)
	case errors.Is(err, errProviderDown) && lastAttempt:
		_, ferr := s.store.FinishBroadcast(bg, id, owner, StatusFailed, "push provider unavailable")
		s.progress.Changed(id, true)
		return ferr
	default:
		// The provider or the database is down: River retries later and
		// the next run continues from the checkpoint.
		s.store.ReleaseBroadcast(bg, id, owner)
		s.cfg.Logger.WarnContext(ctx, "broadcast paused; River retries it", "job_id", id, "err", err)
		return err
	}
}

// errStopped: the job was cancelled or the lease lost.
var errStopped = errors.New("broadcast stopped")

type fatalError struct{ err error }

func (e *fatalError) Error() string { return "fatal push error: " + e.err.Error() }

func (s *Service) leaseUntil() time.Time { return s.cfg.Now().Add(s.cfg.LeaseTTL) }

// source hands out claimed batches: nil claims and done true at the end.
type source func(ctx context.Context) (claims []Claim, done bool, err error)

// all runs the three passes: deliveries left unresolved by earlier runs,
// the walk over the devices, and a last try of transient failures.
func (r *run) all(ctx context.Context) error {
	if err := r.pipeline(ctx, r.reclaim(false), false); err != nil {
		return err
	}
	if err := r.pipeline(ctx, r.walk(), false); err != nil {
		return err
	}
	return r.pipeline(ctx, r.reclaim(true), true)
}

// walk claims the next batch of recipients after the job's cursor.
func (r *run) walk() source {
	return func(ctx context.Context) ([]Claim, bool, error) {
		c, err := r.s.store.ClaimNextBatch(ctx, r.id, r.owner, r.s.cfg.BatchSize, r.s.leaseUntil())
		switch {
		case err != nil:
			return nil, false, err
		case c.Stop:
			return nil, false, errStopped
		}
		return c.Claims, c.Done, nil
	}
}

// reclaim takes up unresolved deliveries page by page.
func (r *run) reclaim(retriesOnly bool) source {
	after := ""
	return func(ctx context.Context) ([]Claim, bool, error) {
		c, err := r.s.store.ReclaimDeliveries(ctx, r.id, r.owner, retriesOnly, after, r.s.cfg.BatchSize, r.s.leaseUntil())
		switch {
		case err != nil:
			return nil, false, err
		case c.Stop:
			return nil, false, errStopped
		case c.Last == "":
			return nil, true, nil
		}
		after = c.Last
		return c.Claims, false, nil
	}
}

// pipeline sends what next hands out until it is done, with
// Config.Concurrency sends in flight, while the next batch is claimed and
// outcomes are recorded continuously: one write in flight, the next group
// collecting behind it. After a crash, what was sent but not recorded is
// what was in flight plus the group being written and the one collecting.
// final: a transient failure is a failure.
func (r *run) pipeline(ctx context.Context, next source, final bool) error {
	cfg := r.s.cfg
	abort := make(chan struct{})
	var abortOnce sync.Once
	stop := func() { abortOnce.Do(func() { close(abort) }) }
	defer stop()
	stopped := func() bool {
		select {
		case <-abort:
			return true
		default:
			return ctx.Err() != nil
		}
	}

	// The feeder hands claims to the senders one at a time and claims the
	// next batch just before the current one runs out, so the senders
	// never wait for a claim, and the claim (which checks the job is still
	// this run's and running) is made late enough that a cancel stops the
	// broadcast between batches.
	work := make(chan Claim)
	feedErr := make(chan error, 1)
	go func() {
		defer close(work)
		feedErr <- r.feed(ctx, next, work, abort)
	}()

	// Sends in flight when the worker is stopped get StopGrace to finish,
	// so that a graceful stop knows their outcome instead of leaving them
	// to be sent again.
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	sendersDone := make(chan struct{})
	defer context.AfterFunc(ctx, func() {
		t := time.NewTimer(cfg.StopGrace)
		defer t.Stop()
		select {
		case <-t.C:
			cancelSends()
		case <-sendersDone:
		}
	})()
	results := make(chan result, cfg.Concurrency)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for c := range work {
				if stopped() {
					continue // claimed, never sent: a later run takes it up
				}
				sctx, cancel := context.WithTimeout(sendCtx, cfg.SendTimeout)
				err := push.SendWithRetry(sctx, r.s.provider, push.Target{Platform: c.Platform, Token: c.Token}, r.n, cfg.BroadcastRetry)
				cancel()
				results <- result{c, err}
			}
		})
	}
	go func() { wg.Wait(); close(sendersDone); close(results) }()

	rec := &recorder{r: r, bg: context.WithoutCancel(ctx), done: make(chan writeResult, 1), lastWrite: time.Now()}
	downAfter := max(2*cfg.Concurrency, 10)
	consecutive := 0 // transient failures in a row
	var firstErr error
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
			stop()
		}
	}
	tick := time.NewTicker(max(cfg.LeaseTTL/4, 10*time.Millisecond))
	defer tick.Stop()
	// Outcomes wait while a write is out; past maxPending of them the loop
	// stops taking results, so the senders wait for the database instead
	// of piling up outcomes (memory, and sends a crash would repeat).
	maxPending := 2 * cfg.FlushSize
	open := true
	for open || rec.writing {
		taking := results
		if rec.writing && len(rec.pending) >= maxPending {
			taking = nil
		}
		select {
		case res, ok := <-taking:
			if !ok {
				open, results = false, nil
				continue
			}
			kind, _ := push.Classify(res.err)
			o, known := r.outcome(ctx, res, kind, final)
			if !known {
				continue
			}
			rec.add(o)
			if r.s.cfg.Delivered != nil {
				r.s.cfg.Delivered(o.Status)
			}
			switch kind {
			case push.Retryable:
				consecutive++
				if consecutive >= downAfter {
					fail(fmt.Errorf("%w: %d sends in a row failed: %v", errProviderDown, consecutive, res.err))
				}
			case push.Fatal:
				fail(&fatalError{res.err})
			default:
				consecutive = 0
			}
		case w := <-rec.done:
			rec.writing = false
			if w.err != nil {
				fail(w.err)
			} else if !w.kept {
				r.s.cfg.Logger.WarnContext(ctx, "broadcast lease lost to another worker", "job_id", r.id)
				fail(errStopped)
			}
		case <-tick.C:
			if time.Since(rec.lastWrite) >= cfg.LeaseTTL/3 {
				rec.renew = true
			}
		}
		if !rec.writing {
			rec.flush()
		}
	}
	// Every outcome is written. A claim error counts unless the pipeline
	// had already stopped for a reason of its own.
	if err := <-feedErr; err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// feed hands claims from next to work until next is done, the slice is
// over (errSliceDone), a claim fails, or abort. It starts claiming the next
// batch when Concurrency claims (at most half a batch) of the current one
// are left, and never leaves a claim running behind it.
func (r *run) feed(ctx context.Context, next source, work chan<- Claim, abort <-chan struct{}) error {
	type batch struct {
		claims []Claim
		done   bool
		err    error
	}
	lookahead := min(r.s.cfg.Concurrency, r.s.cfg.BatchSize/2)
	claimed := make(chan batch, 1)
	claiming, done, sliceOver := false, false, false
	claim := func() {
		if sliceOver = r.s.cfg.Now().After(r.sliceEnd); sliceOver {
			return
		}
		claiming = true
		go func() {
			c, d, err := next(ctx)
			claimed <- batch{c, d, err}
		}()
	}
	// finish waits for a claim in flight, so that none outlives the run.
	finish := func(err error) error {
		if claiming {
			if b := <-claimed; b.err != nil && err == nil {
				err = b.err
			}
		}
		return err
	}
	var cur []Claim
	claim()
	for {
		if len(cur) == 0 {
			if !claiming {
				if sliceOver && !done {
					return errSliceDone
				}
				return nil
			}
			var b batch
			select {
			case b = <-claimed:
				claiming = false
			case <-abort:
				return finish(nil)
			}
			if b.err != nil {
				return b.err
			}
			cur, done = b.claims, b.done
			if len(cur) == 0 && !done {
				claim() // every device of that page had a delivery already
			}
			continue
		}
		if !claiming && !done && !sliceOver && len(cur) <= lookahead {
			claim()
		}
		select {
		case work <- cur[0]:
			cur = cur[1:]
		case <-abort:
			return finish(nil)
		}
	}
}

// recorder writes outcomes with one write in flight at a time; outcomes
// that arrive meanwhile collect for the next write.
type recorder struct {
	r         *run
	bg        context.Context
	pending   []Outcome
	writing   bool
	renew     bool // write even with nothing pending, to renew the lease
	done      chan writeResult
	lastWrite time.Time
}

type writeResult struct {
	kept bool
	err  error
}

func (w *recorder) add(o Outcome) { w.pending = append(w.pending, o) }

// flush starts a write of what is pending (at most FlushSize outcomes),
// or of nothing when the lease needs renewing.
func (w *recorder) flush() {
	if len(w.pending) == 0 && !w.renew {
		return
	}
	n := min(len(w.pending), w.r.s.cfg.FlushSize)
	group := slices.Clone(w.pending[:n])
	w.pending = append(w.pending[:0], w.pending[n:]...)
	w.writing, w.renew, w.lastWrite = true, false, time.Now()
	go func() {
		// A lost write would leave sent messages claimed, to be sent again
		// by the next run: try a few times before giving up.
		var res writeResult
		for attempt := range 3 {
			if attempt > 0 {
				time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
			}
			if res.kept, res.err = w.r.s.store.RecordDeliveries(w.bg, w.r.id, w.r.owner, group, w.r.s.leaseUntil()); res.err == nil {
				if len(group) > 0 {
					w.r.s.progress.Changed(w.r.id, false)
				}
				break
			}
		}
		w.done <- res
	}()
}

type result struct {
	c   Claim
	err error
}

// outcome maps a send's result, of kind (push.Classify of res.err), to the
// delivery's new state; known is false when the send was interrupted by the
// worker's own shutdown, whose outcome is left unknown (claimed) for the
// next run.
func (r *run) outcome(ctx context.Context, res result, kind push.Kind, final bool) (Outcome, bool) {
	o := Outcome{DeviceID: res.c.DeviceID, Token: res.c.Token}
	switch kind {
	case push.Sent:
		o.Status = DeliverySent
	case push.DeadToken:
		o.Status = DeliveryInvalid
	case push.Retryable:
		if ctx.Err() != nil {
			return o, false
		}
		o.Status = DeliveryRetry
		if final {
			o.Status = DeliveryFailed
		}
	default: // Fatal, Other
		if ctx.Err() != nil {
			return o, false
		}
		o.Status = DeliveryFailed
	}
	return o, true
}
