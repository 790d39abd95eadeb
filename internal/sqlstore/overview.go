package sqlstore

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/overview"
	"github.com/herald-vpn/herald/internal/webhooks"
)

var _ overview.Store = (*DB)(nil)

// CountAccounts implements overview.Store.
func (db *DB) CountAccounts(ctx context.Context, since time.Time) (accounts.Counts, error) {
	var c accounts.Counts
	err := db.conn().queryRow(ctx, `SELECT COUNT(*), COUNT(email_verified_at), COALESCE(SUM(CASE WHEN created_at >= ? THEN 1 ELSE 0 END), 0), COUNT(disabled_at)
		FROM accounts WHERE deleted_at IS NULL`, since).Scan(&c.Total, &c.Verified, &c.NewLast24h, &c.Disabled)
	return c, err
}

// CountDeviceTokens implements overview.Store. A device without a token
// is missing whatever its status says; one with a token is valid or not.
func (db *DB) CountDeviceTokens(ctx context.Context) ([]devices.PlatformTokens, error) {
	rs, err := db.conn().query(ctx, `SELECT platform,
		SUM(CASE WHEN push_token IS NOT NULL AND push_token_status = ? THEN 1 ELSE 0 END),
		SUM(CASE WHEN push_token IS NOT NULL AND push_token_status <> ? THEN 1 ELSE 0 END),
		SUM(CASE WHEN push_token IS NULL THEN 1 ELSE 0 END)
		FROM devices WHERE active = TRUE GROUP BY platform ORDER BY platform`, devices.TokenValid, devices.TokenValid)
	return collect(rs, err, func(r row) (devices.PlatformTokens, error) {
		var p devices.PlatformTokens
		err := r.Scan(&p.Platform, &p.Valid, &p.Invalid, &p.Missing)
		return p, err
	})
}

// CountActiveNotificationJobs implements overview.Store.
func (db *DB) CountActiveNotificationJobs(ctx context.Context) (notifications.JobCounts, error) {
	var c notifications.JobCounts
	rs, err := db.conn().query(ctx, `SELECT status, COUNT(*) FROM notification_jobs WHERE status IN (?, ?, ?) GROUP BY status`,
		notifications.StatusQueued, notifications.StatusScheduled, notifications.StatusRunning)
	err = each(rs, err, func(r row) error {
		var status string
		var n int
		if err := r.Scan(&status, &n); err != nil {
			return err
		}
		switch status {
		case notifications.StatusQueued:
			c.Queued = n
		case notifications.StatusScheduled:
			c.Scheduled = n
		case notifications.StatusRunning:
			c.Running = n
		}
		return nil
	})
	return c, err
}

// CountActiveMessengerBroadcasts implements overview.Store.
func (db *DB) CountActiveMessengerBroadcasts(ctx context.Context) (int, error) {
	var n int
	err := db.conn().queryRow(ctx, `SELECT COUNT(*) FROM messenger_broadcasts WHERE status IN (?, ?)`, messenger.BroadcastQueued, messenger.BroadcastRunning).Scan(&n)
	return n, err
}

// CountWebhookEndpoints implements overview.Store.
func (db *DB) CountWebhookEndpoints(ctx context.Context) (webhooks.Counts, error) {
	var c webhooks.Counts
	err := db.conn().queryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN disabled_at IS NULL AND failing_since IS NOT NULL THEN 1 ELSE 0 END), 0), COUNT(disabled_at)
		FROM webhook_endpoints`).Scan(&c.Total, &c.Failing, &c.Disabled)
	return c, err
}
