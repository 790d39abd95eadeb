package sqlstore

import (
	"context"
	"errors"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// SaveNotification implements billing.Store.
func (db *DB) SaveNotification(ctx context.Context, n billing.Notification) (bool, error) {
	var fresh bool
	err := db.inTx(ctx, func(tx *Tx) error {
		k, err := tx.q.exec(ctx, `INSERT INTO billing_notifications (source, id, kind, payload, inbound, received_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (source, id) DO NOTHING`, string(n.Source), n.ID, n.Kind, string(n.Payload), string(n.Inbound), tx.now)
		fresh = k == 1
		return err
	})
	return fresh, err
}

// BillingNotification implements billing.Store.
func (db *DB) BillingNotification(ctx context.Context, source subscriptions.Source, id string) (billing.Notification, error) {
	var n billing.Notification
	var payload, inbound string
	err := db.conn().queryRow(ctx, `SELECT source, id, kind, payload, inbound, received_at, processed_at, outcome FROM billing_notifications WHERE source = ? AND id = ?`,
		string(source), id).Scan(&n.Source, &n.ID, &n.Kind, &payload, &inbound, &n.ReceivedAt, &n.ProcessedAt, &n.Outcome)
	n.Payload, n.Inbound = []byte(payload), []byte(inbound)
	n.ReceivedAt, n.ProcessedAt = n.ReceivedAt.UTC(), utcPtr(n.ProcessedAt)
	return n, err
}

// FinishNotification implements billing.Store.
func (db *DB) FinishNotification(ctx context.Context, source subscriptions.Source, id, outcome string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `UPDATE billing_notifications SET processed_at = ?, outcome = ? WHERE source = ? AND id = ?`, tx.now, outcome, string(source), id)
		return err
	})
}

// LiveStoreEntitlements implements billing.Store.
func (db *DB) LiveStoreEntitlements(ctx context.Context, afterID string, limit int) ([]subscriptions.Entitlement, error) {
	return collectWith(scanEntitlement)(db.conn().query(ctx, `SELECT `+entitlementColumns+` FROM entitlements
		WHERE source IN ('app_store', 'google_play', 'stripe') AND state IN ('trial', 'active', 'grace', 'on_hold', 'paused', 'cancelled') AND id > ?
		ORDER BY id LIMIT ?`, afterID, limit))
}

// MarkRevocation implements subscriptions.Ledger.
func (db *DB) MarkRevocation(ctx context.Context, source subscriptions.Source, transactionID, entitlementID string) (bool, error) {
	var fresh bool
	err := db.inTx(ctx, func(tx *Tx) error {
		k, err := tx.q.exec(ctx, `INSERT INTO billing_revocations (source, transaction_id, entitlement_id, recorded_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (source, transaction_id) DO NOTHING`, string(source), transactionID, entitlementID, tx.now)
		fresh = k == 1
		return err
	})
	return fresh, err
}

// HistoryRevision implements billing.Store.
func (db *DB) HistoryRevision(ctx context.Context, entitlementID string) (string, error) {
	var rev string
	err := db.conn().queryRow(ctx, `SELECT revision FROM billing_history_cursors WHERE entitlement_id = ?`, entitlementID).Scan(&rev)
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	return rev, err
}

// SaveHistoryRevision implements billing.Store.
func (db *DB) SaveHistoryRevision(ctx context.Context, entitlementID, revision string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `INSERT INTO billing_history_cursors (entitlement_id, revision, read_at) VALUES (?, ?, ?)
			ON CONFLICT (entitlement_id) DO UPDATE SET revision = excluded.revision, read_at = excluded.read_at`, entitlementID, revision, tx.now)
		return err
	})
}

var _ billing.Store = (*DB)(nil)
