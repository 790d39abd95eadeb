package sqlstore

import (
	"context"
	"errors"
	"strings"

	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/webhooks"
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
		changed, err := collect(rs, err, func(r row) (map[string]any, error) {
			var id, account, platform string
			err := r.Scan(&id, &account, &platform)
			return map[string]any{"deviceId": id, "userId": account, "platform": platform, "pushTokenStatus": devices.TokenInvalid}, err
		})
		if err != nil {
			return err
		}
		for _, data := range changed {
			if err := tx.emitEvent(ctx, webhooks.DeviceTokenInvalidated, data); err != nil {
				return err
			}
		}
	}
	return nil
}

// RegisterDevice implements devices.Store. The account's subscription is
// read under its row's lock (lockSubscription), so two registrations of
// one account count one after the other.
func (db *DB) RegisterDevice(ctx context.Context, d devices.NewDevice, allow func(devices.Quota) error) (devices.Device, error) {
	var out devices.Device
	err := db.inTx(ctx, func(tx *Tx) error {
		var q devices.Quota
		sub, err := tx.lockSubscription(ctx, d.AccountID)
		if err != nil {
			return err
		}
		q.Subscription = sub
		var holderID, holderAccount string
		var holderActive bool
		err = tx.q.queryRow(ctx, `SELECT id, account_id, active FROM devices WHERE push_token = ?`+db.forUpdate(), d.PushToken).Scan(&holderID, &holderAccount, &holderActive)
		held := err == nil
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if held && holderAccount == d.AccountID && holderActive {
			// The same app registering again: refresh, do not count twice.
			if _, err := tx.q.exec(ctx, `UPDATE devices SET platform = ?, name = CASE WHEN ? = '' THEN name ELSE ? END, push_token_status = 'valid', last_seen_at = ? WHERE id = ?`,
				d.Platform, d.Name, d.Name, tx.now, holderID); err != nil {
				return err
			}
			out, err = scanDevice(tx.q.queryRow(ctx, `SELECT `+deviceColumns+` FROM devices WHERE id = ?`, holderID))
			return err
		}
		if err := tx.q.queryRow(ctx, `SELECT COUNT(*) FROM devices WHERE account_id = ? AND active = TRUE`, d.AccountID).Scan(&q.ActiveDevices); err != nil {
			return err
		}
		if err := allow(q); err != nil {
			return err
		}
		if held {
			if _, err := tx.q.exec(ctx, `UPDATE devices SET push_token = NULL, push_token_status = 'invalid' WHERE id = ?`, holderID); err != nil {
				return err
			}
		}
		name := d.NewName
		if name == "" {
			name = d.Name
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO devices (`+deviceColumns+`) VALUES (?, ?, ?, ?, ?, 'valid', TRUE, ?, ?)`,
			d.ID, d.AccountID, d.Platform, name, d.PushToken, tx.now, tx.now); err != nil {
			return err
		}
		out = devices.Device{ID: d.ID, AccountID: d.AccountID, Platform: d.Platform, Name: name, PushToken: d.PushToken,
			Active: true, PushTokenStatus: devices.TokenValid, CreatedAt: tx.now, LastSeenAt: tx.now}
		return tx.emitEvent(ctx, webhooks.DeviceRegistered, map[string]any{"deviceId": d.ID, "userId": d.AccountID, "platform": d.Platform, "name": name})
	})
	return out, err
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
		if err != nil {
			return err
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		return tx.emitEvent(ctx, webhooks.DeviceRemoved, map[string]any{"deviceId": deviceID, "userId": accountID})
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
