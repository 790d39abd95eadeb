package notifications

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
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

// Timeout: a broadcast runs as long as it takes; it watches its context and
// checkpoints after every batch.
func (w *BroadcastWorker) Timeout(*river.Job[BroadcastArgs]) time.Duration { return -1 }

// Work implements river.Worker.
func (w *BroadcastWorker) Work(ctx context.Context, job *river.Job[BroadcastArgs]) error {
	return w.Service.work(ctx, job.Args.JobID, job.Attempt >= job.MaxAttempts)
}

// errProviderDown: many sends in a row failed transiently.
var errProviderDown = errors.New("push provider unavailable")

// run is one worker's hold on one broadcast.
type run struct {
	s     *Service
	id    string
	owner string
	n     push.Notification
}

// work runs a broadcast until it is finished, cancelled or interrupted.
// lastAttempt: River will not retry an error, so fail the broadcast instead.
func (s *Service) work(ctx context.Context, id string, lastAttempt bool) error {
	owner := uuid.NewString()
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
		// Another worker holds it: wait for it to finish or die.
		wait := min(max(lease.Until.Sub(s.cfg.Now())+time.Second, time.Second), s.cfg.LeaseTTL+time.Second)
		return river.JobSnooze(wait)
	}
	r := &run{s: s, id: id, owner: owner, n: Notification{Subject: lease.Job.Subject, Content: lease.Job.Content, Data: lease.Job.Data}.push()}
	r.n.CollapseKey = id // a resend after a crash replaces, not repeats, on the device
	s.cfg.Logger.InfoContext(ctx, "broadcast working", "job_id", id, "total_recipients", lease.Job.TotalRecipients)
	err = r.all(ctx)
	bg := context.WithoutCancel(ctx)
	var fatal *fatalError
	switch {
	case err == nil:
		j, ferr := s.store.FinishBroadcast(bg, id, owner, StatusCompleted, "")
		if ferr != nil {
			return ferr
		}
		s.cfg.Logger.InfoContext(ctx, "broadcast finished", "job_id", id, "status", j.Status, "sent", j.Sent, "failed", j.Failed, "invalid_tokens", j.InvalidTokens)
		return nil
	case errors.Is(err, errStopped):
		// Cancelled, or the lease was lost to another worker.
		s.store.ReleaseBroadcast(bg, id, owner)
		return nil
	case errors.As(err, &fatal):
		s.cfg.Logger.ErrorContext(ctx, "BROADCAST FAILED: the push provider refused the request; check the FCM/APNs credentials and settings", "job_id", id, "err", fatal.err)
		_, ferr := s.store.FinishBroadcast(bg, id, owner, StatusFailed, "push provider refused the request: "+fatal.err.Error())
		return ferr
	case ctx.Err() != nil:
		// Shutting down: every known outcome is written; the unknown ones
		// stay claimed and are sent by the next run.
		s.store.ReleaseBroadcast(bg, id, owner)
		return river.JobSnooze(time.Second)
	case errors.Is(err, errProviderDown) && lastAttempt:
		_, ferr := s.store.FinishBroadcast(bg, id, owner, StatusFailed, "push provider unavailable")
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

// all runs the three passes: deliveries left unresolved by earlier runs,
// the walk over the devices, and a last try of transient failures.
func (r *run) all(ctx context.Context) error {
	if err := r.reclaim(ctx, false, false); err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := r.s.store.ClaimNextBatch(ctx, r.id, r.owner, r.s.cfg.BatchSize, r.s.leaseUntil())
		if err != nil {
			return err
		}
		if c.Stop {
			return errStopped
		}
		if err := r.send(ctx, c.Claims, false); err != nil {
			return err
		}
		if c.Done {
			break
		}
	}
	return r.reclaim(ctx, true, true)
}

// reclaim re-sends unresolved deliveries page by page.
func (r *run) reclaim(ctx context.Context, retriesOnly, final bool) error {
	after := ""
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := r.s.store.ReclaimDeliveries(ctx, r.id, r.owner, retriesOnly, after, r.s.cfg.BatchSize, r.s.leaseUntil())
		if err != nil {
			return err
		}
		if c.Stop {
			return errStopped
		}
		if c.Last == "" {
			return nil
		}
		if err := r.send(ctx, c.Claims, final); err != nil {
			return err
		}
		after = c.Last
	}
}

// send pushes a claimed batch with bounded concurrency and writes the
// outcomes as they come in. final: a transient failure is a failure.
func (r *run) send(ctx context.Context, claims []Claim, final bool) error {
	if len(claims) == 0 {
		return nil
	}
	cfg := r.s.cfg
	abort := make(chan struct{})
	var abortOnce sync.Once
	stop := func() { abortOnce.Do(func() { close(abort) }) }
	defer stop()

	work := make(chan Claim)
	results := make(chan result, cfg.Concurrency)
	go func() {
		defer close(work)
		for _, c := range claims {
			select {
			case work <- c:
			case <-abort:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	// Sends in flight when the worker is stopped get StopGrace to finish,
	// so that a graceful stop knows their outcome instead of leaving them
	// to be sent again.
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	sent := make(chan struct{})
	defer close(sent)
	defer context.AfterFunc(ctx, func() {
		t := time.NewTimer(cfg.StopGrace)
		defer t.Stop()
		select {
		case <-t.C:
			cancelSends()
		case <-sent:
		}
	})()
	var wg sync.WaitGroup
	for range min(cfg.Concurrency, len(claims)) {
		wg.Go(func() {
			for c := range work {
				sctx, cancel := context.WithTimeout(sendCtx, cfg.SendTimeout)
				err := push.SendWithRetry(sctx, r.s.provider, push.Target{Platform: c.Platform, Token: c.Token}, r.n, cfg.BroadcastRetry)
				cancel()
				results <- result{c, err}
			}
		})
	}
	go func() { wg.Wait(); close(results) }()

	bg := context.WithoutCancel(ctx)
	var (
		pending     []Outcome
		firstErr    error
		consecutive int // transient failures in a row
		lastRenewal = time.Now()
	)
	flush := func() {
		if len(pending) == 0 && time.Since(lastRenewal) < cfg.LeaseTTL/3 {
			return
		}
		// A lost write would leave sent messages claimed, to be sent again
		// by the next run: try a few times before giving up.
		var kept bool
		var err error
		for attempt := range 3 {
			if attempt > 0 {
				time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
			}
			if kept, err = r.s.store.RecordDeliveries(bg, r.id, r.owner, pending, r.s.leaseUntil()); err == nil {
				break
			}
		}
		lastRenewal = time.Now()
		pending = pending[:0]
		if err != nil && firstErr == nil {
			firstErr = err
			stop()
		}
		if !kept && err == nil && firstErr == nil {
			r.s.cfg.Logger.WarnContext(ctx, "broadcast lease lost to another worker", "job_id", r.id)
			firstErr = errStopped
			stop()
		}
	}
	downAfter := max(2*cfg.Concurrency, 10)
	tick := time.NewTicker(cfg.FlushEvery)
	defer tick.Stop()
	for {
		select {
		case res, ok := <-results:
			if !ok {
				flush()
				if firstErr != nil {
					return firstErr
				}
				return ctx.Err()
			}
			kind, _ := push.Classify(res.err)
			o, known := r.outcome(ctx, res, kind, final)
			if !known {
				continue
			}
			pending = append(pending, o)
			switch kind {
			case push.Retryable:
				consecutive++
				if consecutive >= downAfter && firstErr == nil {
					firstErr = fmt.Errorf("%w: %d sends in a row failed: %v", errProviderDown, consecutive, res.err)
					stop()
				}
			case push.Fatal:
				if firstErr == nil {
					firstErr = &fatalError{res.err}
					stop()
				}
			default:
				consecutive = 0
			}
			if len(pending) >= cfg.FlushSize {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
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
