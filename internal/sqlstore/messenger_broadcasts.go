package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/riverqueue/river"

	"github.com/herald-vpn/herald/internal/audience"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/view"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// messengerJobs is the table of messenger broadcasts in the fan-out layer.
var messengerJobs = fanoutJobs[messenger.Broadcast]{
	table: "messenger_broadcasts", columns: messengerBroadcastColumns, scan: scanMessengerBroadcast,
	event: func(b messenger.Broadcast) webhooks.Payload { return view.NewMessengerBroadcastEvent(b) },
}

const messengerBroadcastColumns = `id, status, message, options, total_recipients, sent, failed, blocked, created_at, started_at, finished_at, last_error, audience_linked, audience_platforms, audience_plans, audience_status`

func scanMessengerBroadcast(r row) (messenger.Broadcast, error) {
	var b messenger.Broadcast
	var opts string
	var started, finished *time.Time
	var linked bool
	var platforms, plans, status string
	if err := r.Scan(&b.ID, &b.Status, &b.Message, &opts, &b.TotalRecipients, &b.Sent, &b.Failed, &b.Blocked,
		&b.CreatedAt, &started, &finished, &b.Error, &linked, &platforms, &plans, &status); err != nil {
		return messenger.Broadcast{}, err
	}
	if err := json.Unmarshal([]byte(opts), &b.Options); err != nil {
		return messenger.Broadcast{}, fmt.Errorf("messenger broadcast %s: options: %w", b.ID, err)
	}
	b.CreatedAt = b.CreatedAt.UTC()
	b.StartedAt, b.FinishedAt = utcPtr(started), utcPtr(finished)
	if linked {
		b.Audience = &audience.Audience{Platforms: splitList(platforms), Plans: splitList(plans), SubscriptionStatus: status}
	}
	return b, nil
}

// broadcastRecipients is the condition that a telegram_subscribers row is
// a recipient of the messenger_broadcasts row j: subscribed now, and since
// no later than the job's creation (so the walk agrees with the count);
// for a job with an audience, also linked to an account that is enabled
// and in the audience (subscription status as of the job's creation).
const broadcastRecipients = `telegram_subscribers.status = 'subscribed' AND telegram_subscribers.subscribed_since <= j.created_at
	AND (NOT j.audience_linked OR (telegram_subscribers.user_id IS NOT NULL
		AND EXISTS (SELECT 1 FROM accounts acct WHERE acct.id = telegram_subscribers.user_id AND acct.disabled_at IS NULL)
		AND (j.audience_platforms = '' OR EXISTS (SELECT 1 FROM devices d WHERE d.account_id = telegram_subscribers.user_id
			AND d.active = TRUE AND j.audience_platforms LIKE '%,' || d.platform || ',%'))
		AND ((j.audience_plans = '' AND j.audience_status = '') OR EXISTS (SELECT 1 FROM accounts sub WHERE sub.id = telegram_subscribers.user_id AND sub.deleted_at IS NULL
			AND (j.audience_plans = '' OR j.audience_plans LIKE '%,' || sub.subscription_plan || ',%')
			AND (j.audience_status = '' OR (j.audience_status = 'active' AND sub.subscription_expires_at > j.created_at)
				OR (j.audience_status = 'expired' AND sub.subscription_expires_at <= j.created_at))))))`

// CreateMessengerBroadcast implements messenger.BroadcastStore.
func (db *DB) CreateMessengerBroadcast(ctx context.Context, id, message string, options []byte, to *audience.Audience, job river.JobArgs) (messenger.Broadcast, error) {
	var b messenger.Broadcast
	var a audience.Audience
	if to != nil {
		a = *to
	}
	err := db.inTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `INSERT INTO messenger_broadcasts (id, status, message, options, total_recipients, created_at,
			audience_linked, audience_platforms, audience_plans, audience_status) VALUES (?, 'queued', ?, ?, 0, ?, ?, ?, ?, ?)`,
			id, message, string(options), tx.now, to != nil, joinList(a.Platforms), joinList(a.Plans), a.SubscriptionStatus); err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `UPDATE messenger_broadcasts SET total_recipients = (SELECT COUNT(*) FROM telegram_subscribers, messenger_broadcasts j
			WHERE j.id = ? AND `+broadcastRecipients+`) WHERE id = ?`, id, id); err != nil {
			return err
		}
		if _, err := tx.InsertJob(ctx, job, nil); err != nil {
			return err
		}
		var err error
		b, err = scanMessengerBroadcast(tx.q.queryRow(ctx, `SELECT `+messengerBroadcastColumns+` FROM messenger_broadcasts WHERE id = ?`, id))
		return err
	})
	return b, err
}

// MessengerBroadcast implements messenger.BroadcastStore.
func (db *DB) MessengerBroadcast(ctx context.Context, id string) (messenger.Broadcast, error) {
	return scanMessengerBroadcast(db.conn().queryRow(ctx, `SELECT `+messengerBroadcastColumns+` FROM messenger_broadcasts WHERE id = ?`, id))
}

// CancelMessengerBroadcast implements messenger.BroadcastStore.
func (db *DB) CancelMessengerBroadcast(ctx context.Context, id string) (messenger.Broadcast, error) {
	return messengerJobs.cancel(ctx, db, id)
}

// AcquireMessengerBroadcast implements messenger.BroadcastStore.
func (db *DB) AcquireMessengerBroadcast(ctx context.Context, id, owner string, until time.Time) (messenger.Broadcast, bool, error) {
	b, l, err := messengerJobs.acquire(ctx, db, id, owner, until)
	return b, l.Acquired, err
}

// NextMessengerBroadcastBatch implements messenger.BroadcastStore.
func (db *DB) NextMessengerBroadcastBatch(ctx context.Context, id, owner string, limit int, until time.Time) (messenger.BroadcastBatch, error) {
	var out messenger.BroadcastBatch
	err := db.inTx(ctx, func(tx *Tx) error {
		out = messenger.BroadcastBatch{}
		held, err := messengerJobs.renew(ctx, db, tx.q, id, owner, until)
		if err != nil {
			return err
		}
		if !held {
			out.Stop = true
			return nil
		}
		// The cursor as a scalar subquery bounds the index scan; as a join
		// column it would only filter a scan from the first chat.
		rs, err := tx.q.query(ctx, `SELECT telegram_subscribers.chat_id FROM telegram_subscribers, messenger_broadcasts j
			WHERE j.id = ? AND `+broadcastRecipients+`
				AND telegram_subscribers.chat_id > COALESCE((SELECT walk_cursor FROM messenger_broadcasts WHERE id = ?), ?)
			ORDER BY telegram_subscribers.chat_id LIMIT ?`, id, id, int64(math.MinInt64), limit)
		out.ChatIDs, err = collect(rs, err, func(r row) (int64, error) {
			var v int64
			err := r.Scan(&v)
			return v, err
		})
		return err
	})
	return out, err
}

// RecordMessengerBroadcast implements messenger.BroadcastStore.
func (db *DB) RecordMessengerBroadcast(ctx context.Context, id, owner string, p messenger.BroadcastProgress, until time.Time) (bool, error) {
	// A batch in flight when the job was cancelled still went out: it is
	// counted (the walk stops at the next batch, which finds the job
	// cancelled).
	n, err := db.conn().exec(ctx, `UPDATE messenger_broadcasts SET sent = sent + ?, failed = failed + ?, blocked = blocked + ?, walk_cursor = ?, lease_until = `+db.dbAt()+`
		WHERE id = ? AND status IN ('running', 'cancelled') AND lease_owner = ?`, p.Sent, p.Failed, p.Blocked, p.Cursor, db.dbUntilArg(until), id, owner)
	return n == 1, err
}

// FinishMessengerBroadcast implements messenger.BroadcastStore.
func (db *DB) FinishMessengerBroadcast(ctx context.Context, id, owner, status, errMsg string) (messenger.Broadcast, error) {
	return messengerJobs.finish(ctx, db, id, owner, status, errMsg)
}

// ReleaseMessengerBroadcast implements messenger.BroadcastStore.
func (db *DB) ReleaseMessengerBroadcast(ctx context.Context, id, owner string) error {
	return messengerJobs.release(ctx, db, id, owner)
}

// RequeueStalledMessengerBroadcasts implements messenger.BroadcastStore.
func (db *DB) RequeueStalledMessengerBroadcasts(ctx context.Context, minInterval time.Duration, newJob func(id string) river.JobArgs) ([]string, error) {
	return messengerJobs.requeueStalled(ctx, db, minInterval, newJob)
}

var _ messenger.BroadcastStore = (*DB)(nil)
