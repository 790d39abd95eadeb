package sqlstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/riverqueue/river"
)

// Pruned counts what one housekeeping pass removed.
type Pruned struct {
	Deliveries, Sessions, Codes, PendingCodes, Leases, TelegramUpdates int64
}

// sessionKeep is how long an ended session (expired or revoked) is kept:
// long enough that every access token it issued has expired too.
const sessionKeep = 48 * time.Hour

// Prune deletes rows nothing needs any more, so tables do not grow forever:
// the per-device delivery records of broadcasts that finished before
// deliveriesBefore (the job row and its counters stay), sessions that ended
// more than two days ago (with their refresh tokens), codes that expired a
// day ago, lapsed send leases and Telegram update ids processed more than
// messenger.UpdateRetention ago (Telegram keeps an undelivered update for
// at most 24 hours, so a replay older than that cannot happen).
func (db *DB) Prune(ctx context.Context, deliveriesBefore time.Time) (Pruned, error) {
	var p Pruned
	err := db.inTx(ctx, func(tx *Tx) error {
		steps := []struct {
			n    *int64
			sql  string
			args []any
		}{
			{&p.Deliveries, `DELETE FROM notification_deliveries WHERE job_id IN
				(SELECT id FROM notification_jobs WHERE finished_at IS NOT NULL AND finished_at < ?)`, []any{deliveriesBefore}},
			{&p.Sessions, `DELETE FROM sessions WHERE expires_at < ? OR revoked_at < ?`, []any{tx.now.Add(-sessionKeep), tx.now.Add(-sessionKeep)}},
			{&p.Codes, `DELETE FROM one_time_codes WHERE expires_at < ?`, []any{tx.now.Add(-24 * time.Hour)}},
			{&p.PendingCodes, `DELETE FROM pending_codes WHERE expires_at < ?`, []any{tx.now.Add(-24 * time.Hour)}},
			{&p.Leases, `DELETE FROM code_send_leases WHERE locked_until < ?`, []any{tx.now}},
			{&p.TelegramUpdates, `DELETE FROM telegram_updates WHERE processed_at < ?`, []any{tx.now.Add(-messenger.UpdateRetention)}},
		}
		for _, s := range steps {
			n, err := tx.q.exec(ctx, s.sql, s.args...)
			if err != nil {
				return err
			}
			*s.n = n
		}
		return nil
	})
	return p, err
}

// HousekeepingArgs is the periodic job that runs Prune.
type HousekeepingArgs struct{}

func (HousekeepingArgs) Kind() string { return "housekeeping" }

// HousekeepingWorker works HousekeepingArgs.
type HousekeepingWorker struct {
	river.WorkerDefaults[HousekeepingArgs]
	DB                *DB
	DeliveryRetention time.Duration
	Logger            *slog.Logger
}

func (w *HousekeepingWorker) Work(ctx context.Context, _ *river.Job[HousekeepingArgs]) error {
	p, err := w.DB.Prune(ctx, w.DB.Now().Add(-w.DeliveryRetention))
	if err != nil {
		return fmt.Errorf("housekeeping: %w", err)
	}
	w.Logger.InfoContext(ctx, "housekeeping", "deliveries", p.Deliveries, "sessions", p.Sessions, "codes", p.Codes, "pending_codes", p.PendingCodes, "leases", p.Leases,
		"telegram_updates", p.TelegramUpdates)
	return nil
}

// HousekeepingSchedule runs the pass at start and then hourly; River's
// elected leader inserts it, so replicas do not repeat it.
func HousekeepingSchedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) {
		return HousekeepingArgs{}, nil
	}, &river.PeriodicJobOpts{RunOnStart: true})
}
