package sqlstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/overview"
	"github.com/herald-vpn/herald/internal/webhooks"
)

var _ overview.Store = (*DB)(nil)

// CountAccounts implements overview.Store: the totals from the counters
// the database maintains as accounts change (migration 0049), the new ones
// counted through the index of live accounts by creation time.
func (db *DB) CountAccounts(ctx context.Context, since time.Time) (accounts.Counts, error) {
	var c accounts.Counts
	err := db.conn().queryRow(ctx, `SELECT
		COALESCE(SUM(CASE WHEN name = 'accounts.total' THEN value END), 0),
		COALESCE(SUM(CASE WHEN name = 'accounts.verified' THEN value END), 0),
		(SELECT COUNT(*) FROM accounts WHERE deleted_at IS NULL AND created_at >= ?),
		COALESCE(SUM(CASE WHEN name = 'accounts.disabled' THEN value END), 0)
		FROM overview_counters WHERE name IN ('accounts.total', 'accounts.verified', 'accounts.disabled')`, since).
		Scan(&c.Total, &c.Verified, &c.NewLast24h, &c.Disabled)
	return c, err
}

// CountDeviceTokens implements overview.Store, from the counters the
// database maintains as devices change (migration 0049): active devices by
// platform, a device without a token missing whatever its status says,
// one with a token valid or not.
func (db *DB) CountDeviceTokens(ctx context.Context) ([]devices.PlatformTokens, error) {
	rs, err := db.conn().query(ctx, `SELECT name, SUM(value) FROM overview_counters WHERE name LIKE 'devices.%' GROUP BY name`)
	byPlatform := map[string]*devices.PlatformTokens{}
	err = each(rs, err, func(r row) error {
		var name string
		var n int
		if err := r.Scan(&name, &n); err != nil {
			return err
		}
		kind, platform, _ := strings.Cut(strings.TrimPrefix(name, "devices."), ".")
		p := byPlatform[platform]
		if p == nil {
			p = &devices.PlatformTokens{Platform: platform}
			byPlatform[platform] = p
		}
		switch kind {
		case "valid":
			p.Valid += n
		case "invalid":
			p.Invalid += n
		case "missing":
			p.Missing += n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]devices.PlatformTokens, 0, len(byPlatform))
	for _, p := range byPlatform {
		if p.Valid != 0 || p.Invalid != 0 || p.Missing != 0 {
			out = append(out, *p)
		}
	}
	slices.SortFunc(out, func(a, b devices.PlatformTokens) int { return strings.Compare(a.Platform, b.Platform) })
	return out, nil
}

// recountAccounts and recountDeviceTokens count by reading every row, as
// the counters must say (the conformance tests compare them).
func (db *DB) recountAccounts(ctx context.Context, since time.Time) (accounts.Counts, error) {
	var c accounts.Counts
	err := db.conn().queryRow(ctx, `SELECT COUNT(*), COUNT(email_verified_at), COALESCE(SUM(CASE WHEN created_at >= ? THEN 1 ELSE 0 END), 0), COUNT(disabled_at)
		FROM accounts WHERE deleted_at IS NULL`, since).Scan(&c.Total, &c.Verified, &c.NewLast24h, &c.Disabled)
	return c, err
}

func (db *DB) recountDeviceTokens(ctx context.Context) ([]devices.PlatformTokens, error) {
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
