package sqlstore

import (
	"context"

	"github.com/herald-vpn/herald/internal/billing"
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

var _ billing.Store = (*DB)(nil)
