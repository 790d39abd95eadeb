package sqlstore

import (
	"context"
	"errors"

	"github.com/herald-vpn/herald/internal/storage"
	"time"

	"github.com/herald-vpn/herald/internal/preferences"
)

// NotificationSettings implements preferences.Store.
func (db *DB) NotificationSettings(ctx context.Context, accountID string) ([]preferences.Setting, error) {
	rs, err := db.txOrConn(ctx).query(ctx, `SELECT category, channel, enabled FROM notification_preferences WHERE account_id = ? ORDER BY category, channel`, accountID)
	return collect(rs, err, func(r row) (preferences.Setting, error) {
		var s preferences.Setting
		err := r.Scan(&s.Category, &s.Channel, &s.Enabled)
		return s, err
	})
}

// SetNotificationSettings implements preferences.Store (inside InTx).
func (db *DB) SetNotificationSettings(ctx context.Context, accountID string, settings []preferences.Setting) error {
	return db.inCallersTx(ctx, func(tx *Tx) error {
		for _, s := range settings {
			if _, err := tx.q.exec(ctx, `INSERT INTO notification_preferences (account_id, category, channel, enabled, updated_at) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (account_id, category, channel) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at`,
				accountID, s.Category, s.Channel, s.Enabled, tx.now); err != nil {
				return err
			}
		}
		return nil
	})
}

// AccountExists implements preferences.Store: a live account, deleted
// ones not.
func (db *DB) AccountExists(ctx context.Context, accountID string) (bool, error) {
	var n int
	err := db.txOrConn(ctx).queryRow(ctx, `SELECT COUNT(*) FROM accounts WHERE id = ? AND deleted_at IS NULL`, accountID).Scan(&n)
	return n > 0, err
}

// NotificationSchedule implements preferences.Store: the zero Schedule
// for an account that never set one.
func (db *DB) NotificationSchedule(ctx context.Context, accountID string) (preferences.Schedule, error) {
	var s preferences.Schedule
	var start, end *int
	err := db.txOrConn(ctx).queryRow(ctx, `SELECT time_zone, quiet_start, quiet_end FROM notification_schedules WHERE account_id = ?`, accountID).Scan(&s.TimeZone, &start, &end)
	if errors.Is(err, storage.ErrNotFound) {
		return preferences.Schedule{}, nil
	}
	if err != nil {
		return preferences.Schedule{}, err
	}
	if start != nil && end != nil {
		s.Quiet = &preferences.QuietHours{Start: *start, End: *end}
	}
	return s, nil
}

// SetNotificationSchedule implements preferences.Store (inside InTx).
func (db *DB) SetNotificationSchedule(ctx context.Context, accountID string, s preferences.Schedule) error {
	return db.inCallersTx(ctx, func(tx *Tx) error {
		var start, end any
		if s.Quiet != nil {
			start, end = s.Quiet.Start, s.Quiet.End
		}
		_, err := tx.q.exec(ctx, `INSERT INTO notification_schedules (account_id, time_zone, quiet_start, quiet_end, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (account_id) DO UPDATE SET time_zone = excluded.time_zone, quiet_start = excluded.quiet_start, quiet_end = excluded.quiet_end, updated_at = excluded.updated_at`,
			accountID, s.TimeZone, start, end, tx.now)
		return err
	})
}

// UseUnsubscribeLink implements preferences.Store (inside InTx): the
// link's first use records it and answers true; a use of a token already
// used answers false and changes nothing.
func (db *DB) UseUnsubscribeLink(ctx context.Context, tokenID, accountID string) (bool, error) {
	var first bool
	err := db.inCallersTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `INSERT INTO unsubscribe_link_uses (token_id, account_id, used_at) VALUES (?, ?, ?) ON CONFLICT (token_id) DO NOTHING`,
			tokenID, accountID, tx.now)
		first = n == 1
		return err
	})
	return first, err
}

// DeleteUnsubscribeLinkUses deletes the uses recorded before before: the
// tokens they name have expired (housekeeping).
func (db *DB) DeleteUnsubscribeLinkUses(ctx context.Context, before time.Time) (int64, error) {
	return db.conn().exec(ctx, `DELETE FROM unsubscribe_link_uses WHERE used_at < ?`, before)
}
