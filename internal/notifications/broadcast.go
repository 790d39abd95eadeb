package notifications

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/fanout"
	"github.com/herald-vpn/herald/internal/push"
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

// Work implements river.Worker. The lease owner is the River job.
func (w *BroadcastWorker) Work(ctx context.Context, job *river.Job[BroadcastArgs]) error {
	return w.Service.engine.Work(ctx, job.Args.JobID, fmt.Sprintf("river-%d", job.ID), job.Attempt >= job.MaxAttempts)
}

// errProviderDown: many sends in a row failed transiently.
var errProviderDown = errors.New("push provider unavailable")

// errSliceDone and errStopped are the fan-out engine's: the run worked
// its slice, or the job was cancelled or the lease lost.
var (
	errSliceDone = fanout.ErrSlice
	errStopped   = fanout.ErrStopped
)

// run is one worker's hold on one broadcast.
type run struct {
	s        *Service
	id       string
	owner    string
	n        push.Notification
	sliceEnd time.Time
	// quiet: the job holds devices of owners inside their quiet hours
	// (neither urgent nor of a critical category).
	quiet bool
	// local: the job is due for each owner at this time in their zone.
	local *LocalTime
}

// pushChannel is push as a fan-out channel: the walk over the devices,
// sent by the push provider, in the pipeline of feed, send and record.
type pushChannel struct{ s *Service }

func (c pushChannel) Acquire(ctx context.Context, id, owner string, until time.Time) (Job, fanout.Lease, error) {
	l, err := c.s.store.AcquireBroadcast(ctx, id, owner, until)
	return l.Job, l.Lease, err
}

func (c pushChannel) Get(ctx context.Context, id string) (Job, error) {
	return c.s.store.BroadcastJob(ctx, id)
}

func (c pushChannel) Cancel(ctx context.Context, id string) (Job, error) {
	return c.s.store.CancelBroadcast(ctx, id)
}

func (c pushChannel) Finish(ctx context.Context, id, owner, status, errMsg string) (Job, error) {
	return c.s.store.FinishBroadcast(ctx, id, owner, status, errMsg)
}

func (c pushChannel) Release(ctx context.Context, id, owner string) error {
	return c.s.store.ReleaseBroadcast(ctx, id, owner)
}

func (c pushChannel) Requeue(ctx context.Context, minInterval time.Duration) ([]string, error) {
	return c.s.store.RequeueStalledBroadcasts(ctx, minInterval, func(id string) river.JobArgs { return BroadcastArgs{JobID: id} })
}

// Send runs the broadcast until it is finished, stopped, interrupted or
// its slice is over.
func (c pushChannel) Send(ctx context.Context, j Job, owner string) error {
	s := c.s
	if j.Inbox && !j.InboxWritten && s.cfg.Inbox != nil {
		// The inbox items are written by the job, not by the request that
		// queued it, in one statement and one transaction with the job's
		// mark: a run taking the job over after a crash finds the mark (or
		// the unique (account, job) of each item) and writes nothing
		// more, whichever replica it is on. An error leaves it to River's
		// retry, like a database error of the walk.
		if _, err := s.cfg.Inbox.KeepBroadcast(ctx, j.ID); err != nil {
			return err
		}
	}
	r := &run{s: s, id: j.ID, owner: owner, n: Notification{Subject: j.Subject, Content: j.Content, Data: j.Data, Options: j.Options}.push(), sliceEnd: s.cfg.Now().Add(s.cfg.Slice),
		quiet: !j.Urgent && !s.cfg.Categories.Critical(j.Category), local: j.SendAtLocal}
	r.n.CollapseKey = j.ID // a resend after a crash replaces, not repeats, on the device
	r.n = r.n.Prepared()   // encoded once for every device, not at each send
	var err error
	if j.Pushes() {
		err = r.all(ctx)
	}
	if err == nil && j.Emails() {
		err = r.emailWalk(ctx, j.Subject, j.Content, j.Category)
	}
	if fatal, ok := errors.AsType[*fatalError](err); ok {
		s.cfg.Logger.ErrorContext(ctx, "BROADCAST FAILED: the push provider refused the request; check the FCM/APNs credentials and settings", "job_id", j.ID, "err", fatal.err)
		return &fanout.Failure{Msg: "push provider refused the request: " + fatal.err.Error()}
	}
	if err != nil {
		return err
	}
	// Every pass is done. With devices still held, the job waits, running
	// and without a lease, for a River job at the earliest end of their
	// quiet hours (the sweep leaves it alone until then); otherwise it
	// completes.
	parked, err := s.store.ParkBroadcast(context.WithoutCancel(ctx), j.ID, owner, func(id string) river.JobArgs { return BroadcastArgs{JobID: id} })
	if err != nil {
		return err
	}
	if parked {
		s.progress.Changed(j.ID, false)
		return errStopped // the lease is already freed
	}
	return nil
}

// giveUp fails a broadcast on River's last attempt only when the provider
// is down; any other error leaves it to the sweep.
func giveUp(err error) (string, bool) {
	return "push provider unavailable", errors.Is(err, errProviderDown)
}

// summary is a job's counters for the log.
func summary(j Job) []any {
	return []any{"status", j.Status, "total_recipients", j.TotalRecipients, "sent", j.Sent, "failed", j.Failed, "invalid_tokens", j.InvalidTokens, "emails_queued", j.Email.Queued}
}

type fatalError struct{ err error }

func (e *fatalError) Error() string { return "fatal push error: " + e.err.Error() }

func (s *Service) leaseUntil() time.Time { return s.engine.Until() }

// source hands out claimed pages: nil claims and done true at the end. A
// page of devices without delivery rows (the walk, and its resumption)
// comes with its batch; a page of delivery rows taken up again has none.
type source func(ctx context.Context) (claims []Claim, b *batch, done bool, err error)

// all runs the five passes: deliveries left unresolved by earlier runs,
// devices the walk claimed whose outcome is unknown, the walk over the
// devices, the held devices now due, and a last try of transient
// failures.
func (r *run) all(ctx context.Context) error {
	for _, p := range []struct {
		next  source
		final bool
	}{{r.reclaim(false), false}, {r.resume(), false}, {r.walk(), false}, {r.release(), false}, {r.reclaim(true), true}} {
		if err := r.pipeline(ctx, p.next, p.final); err != nil {
			return err
		}
	}
	return nil
}

// walk claims the next batch of recipients after the job's cursor.
func (r *run) walk() source {
	return func(ctx context.Context) ([]Claim, *batch, bool, error) {
		c, err := r.s.store.ClaimNextBatch(ctx, r.id, r.owner, r.s.cfg.BatchSize, r.s.leaseUntil())
		switch {
		case err != nil:
			return nil, nil, false, err
		case c.Stop:
			return nil, nil, false, errStopped
		}
		return r.decide(c.Claims), newBatch(c), c.Done, nil
	}
}

// decide marks the claims whose owner is inside their quiet hours now
// (preferences.Schedule.HoldUntil, the rule of sends to a user): they are
// not sent but recorded DeliveryHeld, due at the end of the window. Every
// pass decides, so a walk resumed after a crash, a retry and a release
// decide again under the schedule of then.
//
// A job "at 09:00 local" (SendAtLocal) first holds each claim until that
// time in its owner's zone; once it has come (or had passed when the walk
// reached the owner), quiet hours are checked as for any send.
func (r *run) decide(claims []Claim) []Claim {
	if !r.quiet && r.local == nil {
		return claims
	}
	now := r.s.cfg.Now()
	for i := range claims {
		if r.local != nil {
			if due := r.local.DueFor(claims[i].Schedule); due.After(now) {
				claims[i].holdUntil = due
				continue
			}
		}
		if !r.quiet {
			continue
		}
		if until, held := claims[i].Schedule.HoldUntil(now); held {
			claims[i].holdUntil = until
		}
	}
	return claims
}

// release takes up, page by page, the held devices now due.
func (r *run) release() source {
	return r.pages(func(ctx context.Context, after string) (Claims, error) {
		return r.s.store.ReleaseHeld(ctx, r.id, r.owner, after, r.s.cfg.Now(), r.s.cfg.BatchSize, r.s.leaseUntil())
	})
}

// resume takes up, page by page, the devices earlier runs claimed in the
// walk without writing their outcome.
func (r *run) resume() source {
	after := ""
	return func(ctx context.Context) ([]Claim, *batch, bool, error) {
		c, err := r.s.store.ResumeWalk(ctx, r.id, r.owner, after, r.s.cfg.BatchSize, r.s.leaseUntil())
		switch {
		case err != nil:
			return nil, nil, false, err
		case c.Stop:
			return nil, nil, false, errStopped
		}
		after = c.Last
		return r.decide(c.Claims), newBatch(c), c.Done, nil
	}
}

// reclaim takes up unresolved deliveries page by page.
func (r *run) reclaim(retriesOnly bool) source {
	return r.pages(func(ctx context.Context, after string) (Claims, error) {
		return r.s.store.ReclaimDeliveries(ctx, r.id, r.owner, retriesOnly, after, r.s.cfg.BatchSize, r.s.leaseUntil())
	})
}

// pages hands out the claims of fetch page by page, each decided again,
// until a page comes back empty (no Last); outcomes are written per claim,
// not as a batch of the walk.
func (r *run) pages(fetch func(ctx context.Context, after string) (Claims, error)) source {
	after := ""
	return func(ctx context.Context) ([]Claim, *batch, bool, error) {
		c, err := fetch(ctx, after)
		switch {
		case err != nil:
			return nil, nil, false, err
		case c.Stop:
			return nil, nil, false, errStopped
		case c.Last == "":
			return nil, nil, true, nil
		}
		after = c.Last
		return r.decide(c.Claims), nil, false, nil
	}
}

// pipeline sends what next hands out until it is done, in three stages:
// feed claims batches and hands their claims out, send keeps
// Config.Concurrency sends in flight, and record writes the outcomes
// continuously: one write in flight, the next group collecting behind it.
// After a crash, what was sent but not recorded is what was in flight plus
// the group being written and the one collecting. final: a transient
// failure is a failure.
func (r *run) pipeline(ctx context.Context, next source, final bool) error {
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
	work, batches, feedErr := r.startFeed(ctx, next, abort)
	results, stopSends := r.startSends(ctx, work, stopped)
	defer stopSends()
	firstErr := r.record(ctx, results, batches, final, stop)
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

// startFeed starts the feed stage: it hands claims to the senders one at
// a time and claims the next batch just before the current one runs out,
// so the senders never wait for a claim, and the claim (which checks the
// job is still this run's and running) is made late enough that a cancel
// stops the broadcast between batches. work is closed when it stops;
// its error arrives on the last channel.
func (r *run) startFeed(ctx context.Context, next source, abort <-chan struct{}) (<-chan item, *batchQueue, <-chan error) {
	work := make(chan item)
	feedErr := make(chan error, 1)
	batches := &batchQueue{}
	go func() {
		defer close(work)
		feedErr <- r.feed(ctx, next, work, batches, abort)
	}()
	return work, batches, feedErr
}

// startSends starts the send stage: Config.Concurrency senders take
// claims from work and answer each on the results channel, which is
// closed once work is and every send is answered. A claim taken once the
// pipeline stopped is not sent. Sends in flight when the worker is stopped
// get StopGrace to finish, so that a graceful stop knows their outcome
// instead of leaving them to be sent again. Call the function returned
// when the pipeline is over.
func (r *run) startSends(ctx context.Context, work <-chan item, stopped func() bool) (<-chan result, func()) {
	cfg := r.s.cfg
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	sendersDone := make(chan struct{})
	stopGrace := context.AfterFunc(ctx, func() {
		t := time.NewTimer(cfg.StopGrace)
		defer t.Stop()
		select {
		case <-t.C:
			cancelSends()
		case <-sendersDone:
		}
	})
	results := make(chan result, cfg.Concurrency)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for it := range work {
				if stopped() {
					continue // claimed, never sent: a later run takes it up
				}
				if !it.c.holdUntil.IsZero() {
					results <- result{item: it} // held: recorded, not sent
					continue
				}
				sctx, cancel := context.WithTimeout(sendCtx, cfg.SendTimeout)
				err := push.SendWithRetry(sctx, r.s.provider, push.Target{Platform: it.c.Platform, Token: it.c.Token}, r.n, cfg.BroadcastRetry)
				cancel()
				results <- result{it, err}
			}
		})
	}
	go func() { wg.Wait(); close(sendersDone); close(results) }()
	return results, func() { stopGrace(); cancelSends() }
}

// record is the record stage: it takes every result, judges the provider
// by them (stop calls off the feed and the sends on the first reason to
// stop the run) and writes the outcomes through a recorder until every
// send is answered and every outcome written. It returns the reason the
// run stopped, if any.
func (r *run) record(ctx context.Context, results <-chan result, batches *batchQueue, final bool, stop func()) error {
	cfg := r.s.cfg
	rec := &recorder{r: r, bg: context.WithoutCancel(ctx), done: make(chan writeResult, 1), lastWrite: time.Now(),
		batches: batches, hold: cfg.OutcomeHold}
	downAfter := max(2*cfg.Concurrency, 10)
	consecutive := 0 // transient failures in a row
	var firstErr error
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
			stop()
		}
	}
	tick := time.NewTicker(max(min(cfg.LeaseTTL/4, rec.hold/2), 10*time.Millisecond))
	defer tick.Stop()
	// Outcomes wait while a write is out, and held ones wait for their
	// batch (two batches are open at a time: the one being sent and the
	// next); past maxPending of them the loop stops taking results, so the
	// senders wait for the database instead of piling up outcomes (memory,
	// and sends a crash would repeat).
	maxPending := 4 * cfg.BatchSize
	open := true
	for open || rec.writing || rec.waiting() {
		taking := results
		if rec.writing && rec.pending() >= maxPending {
			taking = nil
		}
		select {
		case res, ok := <-taking:
			if !ok {
				// Every send is answered: write what is left now.
				open, results = false, nil
				break
			}
			if !res.c.holdUntil.IsZero() {
				rec.add(Outcome{DeviceID: res.c.DeviceID, Token: res.c.Token, Status: DeliveryHeld, DueAt: res.c.holdUntil}, res.b)
				continue
			}
			kind, _ := push.Classify(res.err)
			o, known := r.outcome(ctx, res, kind, final)
			if !known {
				continue
			}
			rec.add(o, res.b)
			if cfg.Delivered != nil {
				cfg.Delivered(o.Status)
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
			rec.flush(!open)
		}
	}
	return firstErr
}

// item is one claim handed to a sender, with the batch it belongs to.
type item struct {
	c Claim
	b *batch // nil for a delivery row taken up again
}

// feed hands claims from next to work until next is done, the slice is
// over (errSliceDone), a claim fails, or abort. It starts claiming the next
// batch when Concurrency claims (at most half a batch) of the current one
// are left, and never leaves a claim running behind it. Each batch joins
// batches, in claim order, before its first claim is handed out.
func (r *run) feed(ctx context.Context, next source, work chan<- item, batches *batchQueue, abort <-chan struct{}) error {
	type page struct {
		claims []Claim
		b      *batch
		done   bool
		err    error
	}
	lookahead := min(r.s.cfg.Concurrency, r.s.cfg.BatchSize/2)
	claimed := make(chan page, 1)
	claiming, done, sliceOver := false, false, false
	claim := func() {
		if sliceOver = r.s.cfg.Now().After(r.sliceEnd); sliceOver {
			return
		}
		claiming = true
		go func() {
			c, b, d, err := next(ctx)
			claimed <- page{c, b, d, err}
		}()
	}
	// finish waits for a claim in flight, so that none outlives the run.
	finish := func(err error) error {
		if claiming {
			if p := <-claimed; p.err != nil && err == nil {
				err = p.err
			}
		}
		return err
	}
	var cur []Claim
	var curBatch *batch
	claim()
	for {
		if len(cur) == 0 {
			if !claiming {
				if sliceOver && !done {
					return errSliceDone
				}
				return nil
			}
			var p page
			select {
			case p = <-claimed:
				claiming = false
			case <-abort:
				return finish(nil)
			}
			if p.err != nil {
				return p.err
			}
			cur, curBatch, done = p.claims, p.b, p.done
			batches.push(curBatch)
			if len(cur) == 0 && !done {
				claim() // every device of that page had a delivery already
			}
			continue
		}
		if !claiming && !done && !sliceOver && len(cur) <= lookahead {
			claim()
		}
		select {
		case work <- item{cur[0], curBatch}:
			cur = cur[1:]
		case <-abort:
			return finish(nil)
		}
	}
}

// batch is a page of devices the walk claimed without a delivery row. Its
// outcomes are held until all are known; a batch whose every outcome is
// known, and every batch before it, settles: its failures are written as
// rows, its successful sends only counted, and the job's settled cursor
// moves to its last device. Outcomes held longer than the recorder's hold
// (a slow send keeping the batch open) are written as rows, and so are
// the batch's later ones, so that what is known is written soon.
type batch struct {
	last  string // the last device of the page (the walk's cursor for resume's last page)
	size  int
	got   int       // outcomes known
	held  []Outcome // known, not yet written
	since time.Time // when the oldest held outcome arrived
	rowed bool      // outcomes go out as rows
}

// newBatch is the batch of a claimed page; nil when it has nothing to
// settle.
func newBatch(c Claims) *batch {
	if c.Last == "" {
		return nil
	}
	return &batch{last: c.Last, size: len(c.Claims)}
}

// batchQueue is the batches not yet settled, in claim order: the feeder
// adds, the recorder settles from the front.
type batchQueue struct {
	mu   sync.Mutex
	list []*batch
}

func (q *batchQueue) push(b *batch) {
	if b == nil {
		return
	}
	q.mu.Lock()
	q.list = append(q.list, b)
	q.mu.Unlock()
}

// recorder writes outcomes with one write in flight at a time; outcomes
// that arrive meanwhile collect for the next write.
type recorder struct {
	r         *run
	bg        context.Context
	batches   *batchQueue
	hold      time.Duration // the longest an outcome is held for its batch
	rows      []Outcome     // to write as rows
	heldN     int           // outcomes held in batches
	writing   bool
	renew     bool // write even with nothing pending, to renew the lease
	done      chan writeResult
	lastWrite time.Time
}

type writeResult struct {
	kept bool
	err  error
}

// add takes a known outcome of a claim of batch b (nil for a delivery row).
func (w *recorder) add(o Outcome, b *batch) {
	if b == nil || b.rowed {
		w.rows = append(w.rows, o)
	} else {
		if len(b.held) == 0 {
			b.since = time.Now()
		}
		b.held = append(b.held, o)
		w.heldN++
	}
	if b != nil {
		b.got++
	}
}

// pending counts the outcomes not yet written.
func (w *recorder) pending() int { return len(w.rows) + w.heldN }

// waiting reports whether anything is left to write.
func (w *recorder) waiting() bool {
	if len(w.rows) > 0 || w.heldN > 0 {
		return true
	}
	w.batches.mu.Lock()
	defer w.batches.mu.Unlock()
	return len(w.batches.list) > 0 && w.batches.list[0].got == w.batches.list[0].size
}

// flush starts a write of the batches that settle, the outcomes held too
// long (every held one when final: the pipeline is over) and the rows, or
// of nothing when the lease needs renewing.
func (w *recorder) flush(final bool) {
	var rec Record
	now := time.Now()
	w.batches.mu.Lock()
	for len(w.batches.list) > 0 && w.batches.list[0].got == w.batches.list[0].size {
		b := w.batches.list[0]
		w.batches.list = w.batches.list[1:]
		for _, o := range b.held {
			if o.Status == DeliverySent {
				rec.Sent++
			} else {
				rec.Outcomes = append(rec.Outcomes, o)
			}
		}
		w.heldN -= len(b.held)
		rec.Settled = b.last
	}
	for _, b := range w.batches.list {
		if len(b.held) > 0 && (final || now.Sub(b.since) >= w.hold) {
			w.rows = append(w.rows, b.held...)
			w.heldN -= len(b.held)
			b.held, b.rowed = nil, true
		}
	}
	if final {
		w.batches.list = nil // unsettled: a later run resumes them
	}
	w.batches.mu.Unlock()
	rec.Outcomes = append(rec.Outcomes, w.rows...)
	w.rows = w.rows[:0]
	if len(rec.Outcomes) == 0 && rec.Sent == 0 && rec.Settled == "" && !w.renew {
		return
	}
	w.writing, w.renew, w.lastWrite = true, false, now
	go func() {
		// A lost write would leave sent messages unknown, to be sent again
		// by the next run: try a few times before giving up.
		var res writeResult
		for attempt := range 3 {
			if attempt > 0 {
				time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
			}
			if res.kept, res.err = w.r.s.store.RecordDeliveries(w.bg, w.r.id, w.r.owner, rec, w.r.s.leaseUntil()); res.err == nil {
				if len(rec.Outcomes) > 0 || rec.Sent > 0 {
					w.r.s.progress.Changed(w.r.id, false)
				}
				break
			}
		}
		w.done <- res
	}()
}

type result struct {
	item
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
