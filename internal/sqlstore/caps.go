package sqlstore

import (
	"context"
	"errors"

	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/storage"
)

// LockCapCount implements notifications.Store (inside InTx): how many
// sends the account's cap of category let through in window, its row
// locked until the transaction ends (PostgreSQL FOR UPDATE on a row
// inserted at 0 when missing; SQLite's IMMEDIATE transaction holds the
// database's write lock), so that a concurrent send of the same account
// and category waits for this one's decision.
func (db *DB) LockCapCount(ctx context.Context, accountID, category, window string) (int, error) {
	var n int
	err := db.inCallersTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `INSERT INTO notification_cap_counts (account_id, category, cap_window, sends) VALUES (?, ?, ?, 0)
			ON CONFLICT (account_id, category, cap_window) DO NOTHING`, accountID, category, window); err != nil {
			return err
		}
		return tx.q.queryRow(ctx, `SELECT sends FROM notification_cap_counts WHERE account_id = ? AND category = ? AND cap_window = ?`+db.forUpdate(),
			accountID, category, window).Scan(&n)
	})
	return n, err
}

// CapDecision implements notifications.Store: the decision recorded for
// the send use names (found false when it was never counted).
func (db *DB) CapDecision(ctx context.Context, use preferences.CapUse) (allowed, found bool, err error) {
	err = db.txOrConn(ctx).queryRow(ctx, `SELECT allowed FROM notification_cap_uses WHERE account_id = ? AND category = ? AND cap_window = ? AND send_id = ?`,
		use.AccountID, use.Category, use.Window, use.SendID).Scan(&allowed)
	if errors.Is(err, storage.ErrNotFound) {
		return false, false, nil
	}
	return allowed, err == nil, err
}

// RecordCapUse implements notifications.Store (inside InTx, after
// LockCapCount): it records the send's decision and, when it was
// allowed, counts it.
func (db *DB) RecordCapUse(ctx context.Context, use preferences.CapUse, allowed bool) error {
	return db.inCallersTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `INSERT INTO notification_cap_uses (account_id, category, cap_window, send_id, allowed) VALUES (?, ?, ?, ?, ?)`,
			use.AccountID, use.Category, use.Window, use.SendID, allowed); err != nil {
			return err
		}
		if !allowed {
			return nil
		}
		_, err := tx.q.exec(ctx, `UPDATE notification_cap_counts SET sends = sends + 1 WHERE account_id = ? AND category = ? AND cap_window = ?`,
			use.AccountID, use.Category, use.Window)
		return err
	})
}

// DeleteCapWindows deletes the cap counts and decisions of the windows
// before before (a YYYY-MM-DD day): days past in every time zone
// (housekeeping).
func (db *DB) DeleteCapWindows(ctx context.Context, before string) (int64, error) {
	var n int64
	err := db.inTx(ctx, func(tx *Tx) error {
		c, err := tx.q.exec(ctx, `DELETE FROM notification_cap_counts WHERE cap_window < ?`, before)
		if err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `DELETE FROM notification_cap_uses WHERE cap_window < ?`, before); err != nil {
			return err
		}
		n = c
		return nil
	})
	return n, err
}
