package sqlstore

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/messenger"
)

// Pruned counts what one housekeeping pass removed.
type Pruned struct {
	Deliveries, Sessions, Codes, PendingCodes, Leases, TelegramUpdates, WebhookEvents, IdempotencyKeys int64
}

// webhookKeep is how long webhook events and attempts are kept: well past
// the last retry (about three days), for redelivery and the attempt log.
const webhookKeep = 30 * 24 * time.Hour

// sessionKeep is how long an ended session (expired or revoked) is kept:
// long enough that every access token it issued has expired too.
const sessionKeep = 48 * time.Hour

// Prune deletes rows nothing needs any more, so tables do not grow forever:
// the per-device delivery records of broadcasts that finished before
// deliveriesBefore (the job row and its counters stay), sessions that ended
// more than two days ago (with their refresh tokens), codes that expired a
// day ago, lapsed send leases and Telegram update ids processed more than
// messenger.UpdateRetention ago (Telegram keeps an undelivered update for
// at most 24 hours, so a replay older than that cannot happen), expired
// Telegram link tokens expired for a day, and
// idempotency keys older than their window.
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
			{&p.IdempotencyKeys, `DELETE FROM idempotency_keys WHERE created_at < ?`, []any{tx.now.Add(-idempotency.Window)}},
			{&p.TelegramUpdates, `DELETE FROM telegram_updates WHERE processed_at < ?`, []any{tx.now.Add(-messenger.UpdateRetention)}},
			// Expired link tokens stay a day so the bot can still say "expired"
			// rather than "unknown" to someone who opens an old link.
			{new(int64), `DELETE FROM telegram_link_tokens WHERE expires_at < ?`, []any{tx.now.Add(-24 * time.Hour)}},
			{new(int64), `DELETE FROM webhook_attempts WHERE created_at < ?`, []any{tx.now.Add(-webhookKeep)}},
			{&p.WebhookEvents, `DELETE FROM webhook_events WHERE created_at < ?`, []any{tx.now.Add(-webhookKeep)}},
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
