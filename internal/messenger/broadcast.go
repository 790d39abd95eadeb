package messenger

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/audience"
	"github.com/herald-vpn/herald/internal/fanout"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/live"
)

// Broadcast job statuses: queued → running → completed, failed or
// cancelled.
const (
	BroadcastQueued    = fanout.Queued
	BroadcastRunning   = fanout.Running
	BroadcastCompleted = fanout.Completed
	BroadcastFailed    = fanout.Failed
	BroadcastCancelled = fanout.Cancelled
)

// Broadcast is a messenger broadcast job: one message to every chat
// subscribed when it was created.
type Broadcast struct {
	ID      string
	Status  string
	Message string
	Options SendOptions
	// TotalRecipients is the number of subscribed chats at creation.
	TotalRecipients int
	Sent            int
	Failed          int
	// Blocked counts chats that answered 403 (now marked blocked).
	Blocked    int
	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
	// Error says why a failed job failed.
	Error string
	// Audience, when set, limits the job to chats linked to accounts in
	// it; nil: every subscribed chat.
	Audience *audience.Audience
}

// Finished reports whether the job reached a final status.
func (b Broadcast) Finished() bool { return fanout.Finished(b.Status) }

// BroadcastBatch is the next chats of a broadcast's walk.
type BroadcastBatch struct {
	ChatIDs []int64 // in chat id order, after the job's cursor
	// Stop: the job is no longer running or no longer the caller's.
	Stop bool
}

// BroadcastProgress is the outcome of one batch, counted in one write with
// the cursor moved to Cursor (the last chat whose outcome is known).
type BroadcastProgress struct {
	Cursor                int64
	Sent, Failed, Blocked int
}

// BroadcastStore keeps messenger broadcasts; sqlstore implements it on
// both dialects. Errors are the storage package's.
type BroadcastStore interface {
	// CreateMessengerBroadcast counts the recipients (every subscribed chat,
	// or with to the linked chats of that audience), writes the job
	// (queued) and inserts job, in one transaction.
	CreateMessengerBroadcast(ctx context.Context, id, message string, options []byte, to *audience.Audience, job river.JobArgs) (Broadcast, error)
	// MessengerBroadcast returns a job; ErrNotFound when unknown.
	MessengerBroadcast(ctx context.Context, id string) (Broadcast, error)
	// CancelMessengerBroadcast cancels a queued or running job and returns
	// it; a finished job is returned unchanged. ErrNotFound when unknown.
	CancelMessengerBroadcast(ctx context.Context, id string) (Broadcast, error)
	// AcquireMessengerBroadcast gives owner the job's lease until `until`
	// when it is free, expired or owner's, moving a queued job to running.
	// It returns the job and whether owner holds the lease.
	AcquireMessengerBroadcast(ctx context.Context, id, owner string, until time.Time) (Broadcast, bool, error)
	// NextMessengerBroadcastBatch returns up to limit chats subscribed now,
	// and since no later than the job's creation, after the job's cursor,
	// renewing owner's lease.
	NextMessengerBroadcastBatch(ctx context.Context, id, owner string, limit int, until time.Time) (BroadcastBatch, error)
	// RecordMessengerBroadcast adds p's counters and moves the cursor, if
	// owner still holds the lease of the running job (or of the job
	// cancelled while the batch was out: it was sent, so it counts); it
	// reports whether it did.
	RecordMessengerBroadcast(ctx context.Context, id, owner string, p BroadcastProgress, until time.Time) (bool, error)
	// FinishMessengerBroadcast moves owner's running job to status and
	// frees the lease.
	FinishMessengerBroadcast(ctx context.Context, id, owner, status, errMsg string) (Broadcast, error)
	// ReleaseMessengerBroadcast frees owner's lease.
	ReleaseMessengerBroadcast(ctx context.Context, id, owner string) error
	// RequeueStalledMessengerBroadcasts inserts newJob(id), once per
	// minInterval, for each running job whose lease expired or was freed.
	RequeueStalledMessengerBroadcasts(ctx context.Context, minInterval time.Duration, newJob func(id string) river.JobArgs) ([]string, error)
}

// BroadcastConfig tunes the broadcast worker.
type BroadcastConfig struct {
	// BatchSize is how many chats are sent between two cursor writes: at
	// most this many chats are messaged twice after a crash. Default 20.
	BatchSize int
	// LeaseTTL is how long a worker's hold lasts without renewal; another
	// replica takes the job over about this long after its worker died.
	// Default 15s.
	LeaseTTL time.Duration
	// Slice is how long one River attempt works before it snoozes and goes
	// on (River's job timeout is Slice plus a minute). Default 5 minutes.
	Slice time.Duration
	// Wire writes a broadcast's state into a progress event and reads it
	// back on every replica: the doors' wire type
	// (view.MessengerBroadcastWire), so that an event carries what
	// subscribers are shown. Required.
	Wire live.Codec[Broadcast]
}

// QueueMessenger is the River queue of messenger broadcasts.
const QueueMessenger = "messenger"

// BroadcastArgs is the River job that works one broadcast: only its ID;
// the cursor is in the job row.
type BroadcastArgs struct {
	JobID string `json:"job_id"`
}

// Kind implements river.JobArgs.
func (BroadcastArgs) Kind() string { return "messenger_broadcast" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (BroadcastArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueMessenger} }

// Broadcaster creates and works messenger broadcasts through the bot of a
// Service.
type Broadcaster struct {
	svc      *Service
	store    BroadcastStore
	cfg      BroadcastConfig
	log      *slog.Logger
	progress *live.Announcer
	engine   *fanout.Engine[Broadcast]
}

// NewBroadcaster returns the broadcaster of svc's bot.
func NewBroadcaster(svc *Service, store BroadcastStore, cfg BroadcastConfig) *Broadcaster {
	if cfg.Wire.Encode == nil || cfg.Wire.Decode == nil {
		panic("messenger: BroadcastConfig.Wire is required (view.MessengerBroadcastWire)")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 20
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 15 * time.Second
	}
	if cfg.Slice <= 0 {
		cfg.Slice = 5 * time.Minute
	}
	b := &Broadcaster{svc: svc, store: store, cfg: cfg, log: svc.log}
	b.progress = fanout.NewProgress(svc.live, progressInterval, BroadcastTopic, store.MessengerBroadcast, cfg.Wire, Broadcast.Finished, svc.log, "messenger broadcast")
	b.engine = &fanout.Engine[Broadcast]{Name: "messenger broadcast", Channel: telegramChannel{b}, LeaseTTL: cfg.LeaseTTL, Now: svc.now, Log: svc.log,
		Changed: b.progress.Changed, Finished: Broadcast.Finished, Summary: summary, NotFound: broadcastNotFound, GiveUp: giveUp}
	return b
}

// Broadcast queues message for every subscribed chat or, with to, for the
// subscribed chats linked to accounts in that audience (an empty audience:
// every linked chat). The message and options are checked as Send checks
// them; MESSENGER_NOT_CONNECTED without a bot token.
func (b *Broadcaster) Broadcast(ctx context.Context, message string, opts SendOptions, to *audience.Audience) (Broadcast, error) {
	if err := validateSend("0", message, opts); err != nil {
		return Broadcast{}, err
	}
	if to != nil {
		if err := to.Validate(); err != nil {
			return Broadcast{}, err
		}
	}
	if b.svc.bot == nil {
		return Broadcast{}, apperr.Newf(apperr.MessengerNotConnected, "The messenger bot is not connected: no bot token is configured.").WithRetryAfter(notConnectedRetryAfter)
	}
	raw, err := json.Marshal(opts)
	if err != nil {
		return Broadcast{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Broadcast{}, err
	}
	return b.store.CreateMessengerBroadcast(ctx, id.String(), message, raw, to, BroadcastArgs{JobID: id.String()})
}

// BroadcastIdempotent is Broadcast under the idempotency key k: a repeat
// answers the first job and queues nothing.
func (b *Broadcaster) BroadcastIdempotent(ctx context.Context, k idempotency.Key, message string, opts SendOptions, to *audience.Audience) (Broadcast, error) {
	request := []any{message, opts}
	if to != nil { // appended only when set: keys stored before audiences keep their fingerprint
		request = append(request, to)
	}
	return idempotency.Do(ctx, k, "sendMessengerBroadcast", request, func(ctx context.Context) (Broadcast, error) {
		return b.Broadcast(ctx, message, opts, to)
	})
}

// Job returns a broadcast; JOB_NOT_FOUND when unknown.
func (b *Broadcaster) Job(ctx context.Context, id string) (Broadcast, error) {
	return b.engine.Job(ctx, id)
}

// Cancel cancels a queued or running broadcast: its worker stops before
// the next batch. A finished one is answered as it is.
func (b *Broadcaster) Cancel(ctx context.Context, id string) (Broadcast, error) {
	return b.engine.Cancel(ctx, id)
}

func broadcastNotFound(id string) error {
	return apperr.Newf(apperr.JobNotFound, "No messenger broadcast with the id %q.", id)
}

// SweepEvery is how often Sweep should run.
func (b *Broadcaster) SweepEvery() time.Duration { return b.engine.SweepEvery() }

// Sweep queues a River job for every running broadcast whose worker died
// (its lease expired), so a live replica takes it over from its cursor.
func (b *Broadcaster) Sweep(ctx context.Context) (int, error) { return b.engine.Sweep(ctx) }

// BroadcastWorker works BroadcastArgs; register it with river.AddWorker.
type BroadcastWorker struct {
	river.WorkerDefaults[BroadcastArgs]
	Broadcaster *Broadcaster
}

// Timeout implements river.Worker: a slice plus room to finish a batch.
func (w *BroadcastWorker) Timeout(*river.Job[BroadcastArgs]) time.Duration {
	return w.Broadcaster.cfg.Slice + time.Minute
}

// Work implements river.Worker.
func (w *BroadcastWorker) Work(ctx context.Context, job *river.Job[BroadcastArgs]) error {
	return w.Broadcaster.engine.Work(ctx, job.Args.JobID, fmt.Sprintf("river-%d", job.ID), job.Attempt >= job.MaxAttempts)
}

func (b *Broadcaster) until() time.Time { return b.engine.Until() }

// telegramChannel is Telegram as a fan-out channel: the walk over the
// subscribed chats, sent by the bot a batch at a time.
type telegramChannel struct{ b *Broadcaster }

func (c telegramChannel) Acquire(ctx context.Context, id, owner string, until time.Time) (Broadcast, fanout.Lease, error) {
	j, held, err := c.b.store.AcquireMessengerBroadcast(ctx, id, owner, until)
	return j, fanout.Lease{Acquired: held}, err
}

func (c telegramChannel) Send(ctx context.Context, j Broadcast, owner string) error {
	return c.b.walk(ctx, j, owner, time.Now().Add(c.b.cfg.Slice))
}

func (c telegramChannel) Get(ctx context.Context, id string) (Broadcast, error) {
	return c.b.store.MessengerBroadcast(ctx, id)
}

func (c telegramChannel) Cancel(ctx context.Context, id string) (Broadcast, error) {
	return c.b.store.CancelMessengerBroadcast(ctx, id)
}

func (c telegramChannel) Finish(ctx context.Context, id, owner, status, errMsg string) (Broadcast, error) {
	return c.b.store.FinishMessengerBroadcast(ctx, id, owner, status, errMsg)
}

func (c telegramChannel) Release(ctx context.Context, id, owner string) error {
	return c.b.store.ReleaseMessengerBroadcast(ctx, id, owner)
}

func (c telegramChannel) Requeue(ctx context.Context, minInterval time.Duration) ([]string, error) {
	return c.b.store.RequeueStalledMessengerBroadcasts(ctx, minInterval, func(id string) river.JobArgs { return BroadcastArgs{JobID: id} })
}

// summary is a broadcast's counters for the log.
func summary(j Broadcast) []any {
	return []any{"status", j.Status, "total_recipients", j.TotalRecipients, "sent", j.Sent, "failed", j.Failed, "blocked", j.Blocked}
}

// giveUp: on River's last attempt, Telegram or the database still down
// fails the broadcast.
func giveUp(err error) (string, bool) { return err.Error(), true }

// walk sends batch after batch until no chat is left. The cursor moves
// after each batch, so a crash repeats at most the batch in flight.
func (b *Broadcaster) walk(ctx context.Context, j Broadcast, owner string, sliceEnd time.Time) error {
	for {
		if time.Now().After(sliceEnd) {
			return fanout.ErrSlice
		}
		batch, err := b.store.NextMessengerBroadcastBatch(ctx, j.ID, owner, b.cfg.BatchSize, b.until())
		switch {
		case err != nil:
			return err
		case batch.Stop:
			return fanout.ErrStopped
		case len(batch.ChatIDs) == 0:
			return nil
		}
		var p BroadcastProgress
		var sendErr error
		done := 0
		for _, chat := range batch.ChatIDs {
			outcome, err := b.sendOne(ctx, chat, j)
			if err != nil {
				sendErr = err
				break
			}
			switch outcome {
			case apperr.ChatBlocked:
				p.Blocked++
			case "":
				p.Sent++
			default:
				p.Failed++
			}
			p.Cursor = chat
			done++
		}
		if done > 0 {
			kept, err := b.store.RecordMessengerBroadcast(context.WithoutCancel(ctx), j.ID, owner, p, b.until())
			if err != nil {
				return err
			}
			if !kept {
				return fanout.ErrStopped
			}
			b.progress.Changed(j.ID, false)
		}
		if sendErr != nil {
			return sendErr
		}
	}
}

// sendAttempts bounds the sends of one chat answered 429.
const sendAttempts = 3

// sendOne sends the broadcast to one chat and returns "" when sent, or the
// catalogue code of the failure (CHAT_BLOCKED: Send marked it blocked). An
// error means the chat's outcome is unknown and the walk must stop there:
// the worker is stopping, or the bot cannot reach Telegram at all.
func (b *Broadcaster) sendOne(ctx context.Context, chat int64, j Broadcast) (apperr.Code, error) {
	for attempt := 1; ; attempt++ {
		_, err := b.svc.Send(ctx, strconv.FormatInt(chat, 10), j.Message, j.Options)
		if err == nil {
			return "", nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		code := apperr.As(err).Code
		switch {
		case code == apperr.MessengerNotConnected:
			return "", err
		case code == apperr.RateLimited && attempt < sendAttempts:
			continue // the pacer holds the chat back for Telegram's retry_after
		}
		return code, nil
	}
}
