package sqlstore

import (
	"context"
	"strings"

	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

const deviceColumns = `id, account_id, platform, name, push_token, push_token_status, active, created_at, last_seen_at`

func scanDevice(r row) (devices.Device, error) {
	var d devices.Device
	var token *string
	if err := r.Scan(&d.ID, &d.AccountID, &d.Platform, &d.Name, &token, &d.PushTokenStatus, &d.Active, &d.CreatedAt, &d.LastSeenAt); err != nil {
		return devices.Device{}, err
	}
	if token != nil {
		d.PushToken = *token
	}
	d.CreatedAt, d.LastSeenAt = d.CreatedAt.UTC(), d.LastSeenAt.UTC()
	return d, nil
}

func scanDevices(rs rows, err error) ([]devices.Device, error) {
	return collect(rs, err, scanDevice)
}

// batchIDs is how many values one IN list holds, well within SQLite's and
// PostgreSQL's limits on a statement's parameters.
const batchIDs = 500

// anys is ids as query arguments.
func anys(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// placeholders returns "?, ?, …" for n values.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// ListDevices implements devices.Store.
func (db *DB) ListDevices(ctx context.Context, accountID string) ([]devices.Device, error) {
	return scanDevices(db.conn().query(ctx, `SELECT `+deviceColumns+` FROM devices WHERE account_id = ? AND active = TRUE ORDER BY created_at, id`, accountID))
}

// DeviceByID implements notifications.Store.
func (db *DB) DeviceByID(ctx context.Context, id string) (devices.Device, error) {
	return scanDevice(db.conn().queryRow(ctx, `SELECT `+deviceColumns+` FROM devices WHERE id = ?`, id))
}

// InvalidatePushToken implements notifications.Store.
func (db *DB) InvalidatePushToken(ctx context.Context, deviceID, token string) error {
	return db.inTx(ctx, func(tx *Tx) error { return tx.invalidatePushTokens(ctx, []devicePushToken{{deviceID, token}}) })
}

// devicePushToken is a device and the push token it was sent to.
type devicePushToken struct{ deviceID, token string }

// invalidatePushTokens marks the push tokens of these devices invalid, in
// statements of at most 500 pairs, with a device.token_invalidated event
// for each device whose token this changed. A device whose token changed
// since, or that lost it, is left alone.
func (tx *Tx) invalidatePushTokens(ctx context.Context, pairs []devicePushToken) error {
	for part := range chunks(pairs, 500) {
		args := make([]any, 0, 2*len(part))
		for _, p := range part {
			args = append(args, p.deviceID, p.token)
		}
		values := strings.Repeat("(?, ?), ", len(part)-1) + "(?, ?)"
		rs, err := tx.q.query(ctx, `UPDATE devices SET push_token_status = 'invalid' WHERE push_token_status <> 'invalid' AND (id, push_token) IN (VALUES `+values+`) RETURNING id, account_id, platform`, args...)
		changed, err := collect(rs, err, func(r row) (devices.Device, error) {
			var d devices.Device
			err := r.Scan(&d.ID, &d.AccountID, &d.Platform)
			return d, err
		})
		if err != nil {
			return err
		}
		for _, d := range changed {
			if err := tx.emit(ctx, devices.InvalidatedEvent(d)); err != nil {
				return err
			}
		}
	}
	return nil
}

// LockSubscription implements devices.Store (inside InTx).
func (db *DB) LockSubscription(ctx context.Context, accountID string) (subscriptions.Subscription, error) {
	var sub subscriptions.Subscription
	err := db.inCallersTx(ctx, func(tx *Tx) (err error) {
		sub, err = tx.lockSubscription(ctx, accountID)
		return err
	})
	return sub, err
}

// DeviceWithToken implements devices.Store (inside InTx).
func (db *DB) DeviceWithToken(ctx context.Context, token string) (devices.Device, error) {
	var d devices.Device
	err := db.inCallersTx(ctx, func(tx *Tx) (err error) {
		d, err = scanDevice(tx.q.queryRow(ctx, `SELECT `+deviceColumns+` FROM devices WHERE push_token = ?`+db.forUpdate(), token))
		return err
	})
	return d, err
}

// RefreshDevice implements devices.Store.
func (db *DB) RefreshDevice(ctx context.Context, id, platform, name string) (devices.Device, error) {
	var d devices.Device
	err := db.inTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `UPDATE devices SET platform = ?, name = ?, push_token_status = 'valid', last_seen_at = ? WHERE id = ?`,
			platform, name, tx.now, id); err != nil {
			return err
		}
		var err error
		d, err = scanDevice(tx.q.queryRow(ctx, `SELECT `+deviceColumns+` FROM devices WHERE id = ?`, id))
		return err
	})
	return d, err
}

// CountActiveDevices implements devices.Store.
func (db *DB) CountActiveDevices(ctx context.Context, accountID string) (int, error) {
	var n int
	err := db.inTx(ctx, func(tx *Tx) error {
		return tx.q.queryRow(ctx, `SELECT COUNT(*) FROM devices WHERE account_id = ? AND active = TRUE`, accountID).Scan(&n)
	})
	return n, err
}

// DropPushToken implements devices.Store.
func (db *DB) DropPushToken(ctx context.Context, deviceID string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `UPDATE devices SET push_token = NULL, push_token_status = 'invalid' WHERE id = ?`, deviceID)
		return err
	})
}

// InsertDevice implements devices.Store.
func (db *DB) InsertDevice(ctx context.Context, d devices.Device) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `INSERT INTO devices (`+deviceColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			d.ID, d.AccountID, d.Platform, d.Name, nullable(d.PushToken), d.PushTokenStatus, d.Active, d.CreatedAt, d.LastSeenAt)
		return err
	})
}

// UpdatePushToken implements devices.Store.
func (db *DB) UpdatePushToken(ctx context.Context, accountID, deviceID, token string) (devices.Device, error) {
	var out devices.Device
	err := db.inTx(ctx, func(tx *Tx) error {
		var id string
		if err := tx.q.queryRow(ctx, `SELECT id FROM devices WHERE id = ? AND account_id = ? AND active = TRUE`+db.forUpdate(), deviceID, accountID).Scan(&id); err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `UPDATE devices SET push_token = NULL, push_token_status = 'invalid' WHERE push_token = ? AND id <> ?`, token, id); err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `UPDATE devices SET push_token = ?, push_token_status = 'valid', last_seen_at = ? WHERE id = ?`, token, tx.now, id); err != nil {
			return err
		}
		var err error
		out, err = scanDevice(tx.q.queryRow(ctx, `SELECT `+deviceColumns+` FROM devices WHERE id = ?`, id))
		return err
	})
	return out, err
}

// DeactivateDevice implements devices.Store.
func (db *DB) DeactivateDevice(ctx context.Context, accountID, deviceID string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE devices SET active = FALSE, push_token = NULL, push_token_status = 'invalid' WHERE id = ? AND account_id = ? AND active = TRUE`, deviceID, accountID)
		if err == nil && n == 0 {
			err = storage.ErrNotFound
		}
		return err
	})
}

// AdminDevices implements devices.Store.
func (db *DB) AdminDevices(ctx context.Context, accountID, after string, limit int) ([]devices.Device, error) {
	if accountID != "" {
		return scanDevices(db.conn().query(ctx, `SELECT `+deviceColumns+` FROM devices WHERE account_id = ? AND id > ? ORDER BY id LIMIT ?`, accountID, after, limit))
	}
	return scanDevices(db.conn().query(ctx, `SELECT `+deviceColumns+` FROM devices WHERE id > ? ORDER BY id LIMIT ?`, after, limit))
}

// chunks yields s in pieces of at most n.
func chunks[T any](s []T, n int) func(yield func([]T) bool) {
	return func(yield func([]T) bool) {
		for i := 0; i < len(s); i += n {
			if !yield(s[i:min(i+n, len(s))]) {
				return
			}
		}
	}
}

var _ devices.Store = (*DB)(nil)
