package sqlstore

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// Pruned counts what one housekeeping pass removed.
type Pruned struct {
	Deliveries, Sessions, Codes, PendingCodes, Leases, TelegramUpdates, WebhookEvents, IdempotencyKeys int64
}

// Prune deletes rows nothing needs any more, so tables do not grow forever:
// the per-device delivery records of broadcasts that finished before
// deliveriesBefore (the job row and its counters stay), sessions that ended
// longer ago than sessions.EndedRetention (with their refresh tokens),
// codes expired longer than accounts.ExpiredCodeRetention, lapsed send
// leases, Telegram update ids processed more than
// messenger.UpdateRetention ago, link tokens expired longer than
// messenger.LinkTokenRetention, webhook events and attempts older than
// webhooks.Retention, and idempotency keys older than their window.
func (db *DB) Prune(ctx context.Context, deliveriesBefore time.Time) (Pruned, error) {
	var p Pruned
	// A month of deliveries may take minutes to delete: bounded by the
	// caller's deadline (the housekeeping job's timeout), not the query
	// timeout.
	ctx = withOwnBound(ctx)
	err := db.inTx(ctx, func(tx *Tx) error {
		steps := []struct {
			n    *int64
			sql  string
			args []any
		}{
			{&p.Deliveries, `DELETE FROM notification_deliveries WHERE job_id IN
				(SELECT id FROM notification_jobs WHERE finished_at IS NOT NULL AND finished_at < ?)`, []any{deliveriesBefore}},
			{&p.Sessions, `DELETE FROM sessions WHERE expires_at < ? OR revoked_at < ?`, []any{tx.now.Add(-sessions.EndedRetention), tx.now.Add(-sessions.EndedRetention)}},
			{&p.Codes, `DELETE FROM one_time_codes WHERE expires_at < ?`, []any{tx.now.Add(-accounts.ExpiredCodeRetention)}},
			{&p.PendingCodes, `DELETE FROM pending_codes WHERE expires_at < ?`, []any{tx.now.Add(-accounts.ExpiredCodeRetention)}},
			{&p.Leases, `DELETE FROM code_send_leases WHERE locked_until < ` + db.dbAt(), []any{db.dbAtArg(0)}},
			{&p.IdempotencyKeys, `DELETE FROM idempotency_keys WHERE created_at < ?`, []any{tx.now.Add(-idempotency.Window)}},
			{&p.TelegramUpdates, `DELETE FROM telegram_updates WHERE processed_at < ?`, []any{tx.now.Add(-messenger.UpdateRetention)}},
			{new(int64), `DELETE FROM telegram_link_tokens WHERE expires_at < ?`, []any{tx.now.Add(-messenger.LinkTokenRetention)}},
			{new(int64), `DELETE FROM mfa_challenges WHERE expires_at < ?`, []any{tx.now.Add(-time.Hour)}},
			{new(int64), `DELETE FROM passkey_ceremonies WHERE expires_at < ?`, []any{tx.now.Add(-time.Hour)}},
			{new(int64), `DELETE FROM webhook_attempts WHERE created_at < ?`, []any{tx.now.Add(-webhooks.Retention)}},
			{&p.WebhookEvents, `DELETE FROM webhook_events WHERE created_at < ?`, []any{tx.now.Add(-webhooks.Retention)}},
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
