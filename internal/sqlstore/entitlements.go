package sqlstore

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/subscriptions"
)

const entitlementColumns = `id, COALESCE(account_id, ''), source, external_id, product_id, plan, state, started_at, expires_at, grace_ends_at,
	auto_renew, environment, customer, observed_at, changed_at, created_at`

func scanEntitlement(r row) (subscriptions.Entitlement, error) {
	var e subscriptions.Entitlement
	if err := r.Scan(&e.ID, &e.AccountID, &e.Source, &e.ExternalID, &e.ProductID, &e.Plan, &e.State, &e.StartedAt, &e.ExpiresAt, &e.GraceEndsAt,
		&e.AutoRenew, &e.Environment, &e.Customer, &e.ObservedAt, &e.ChangedAt, &e.CreatedAt); err != nil {
		return subscriptions.Entitlement{}, err
	}
	e.StartedAt, e.ExpiresAt, e.ObservedAt = e.StartedAt.UTC(), e.ExpiresAt.UTC(), e.ObservedAt.UTC()
	e.ChangedAt, e.CreatedAt, e.GraceEndsAt = e.ChangedAt.UTC(), e.CreatedAt.UTC(), utcPtr(e.GraceEndsAt)
	return e, nil
}

// AccountEntitlements implements subscriptions.Ledger.
// Inside a unit of work it reads the transaction's rows.
func (db *DB) AccountEntitlements(ctx context.Context, accountID string) ([]subscriptions.Entitlement, error) {
	var out []subscriptions.Entitlement
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		out, err = collectWith(scanEntitlement)(tx.q.query(ctx, `SELECT `+entitlementColumns+` FROM entitlements WHERE account_id = ? ORDER BY created_at, id`, accountID))
		return err
	})
	return out, err
}

// LockEntitlement implements subscriptions.Ledger.
func (db *DB) LockEntitlement(ctx context.Context, source subscriptions.Source, externalID string) (subscriptions.Entitlement, error) {
	var e subscriptions.Entitlement
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		e, err = scanEntitlement(tx.q.queryRow(ctx, `SELECT `+entitlementColumns+` FROM entitlements WHERE source = ? AND external_id = ?`+db.forUpdate(), source, externalID))
		return err
	})
	return e, err
}

// EntitlementByID reads one entitlement.
func (db *DB) EntitlementByID(ctx context.Context, id string) (subscriptions.Entitlement, error) {
	return scanEntitlement(db.conn().queryRow(ctx, `SELECT `+entitlementColumns+` FROM entitlements WHERE id = ?`, id))
}

// EntitlementByCustomer reads the newest entitlement of a store's
// customer (Stripe's portal needs the customer of the signed-in account).
func (db *DB) EntitlementByCustomer(ctx context.Context, source subscriptions.Source, accountID string) (subscriptions.Entitlement, error) {
	return scanEntitlement(db.conn().queryRow(ctx, `SELECT `+entitlementColumns+` FROM entitlements
		WHERE source = ? AND account_id = ? AND customer <> '' ORDER BY created_at DESC, id LIMIT 1`, source, accountID))
}

// SaveEntitlement implements subscriptions.Ledger.
func (db *DB) SaveEntitlement(ctx context.Context, e subscriptions.Entitlement) error {
	var account *string
	if e.AccountID != "" {
		account = &e.AccountID
	}
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `INSERT INTO entitlements (id, account_id, source, external_id, product_id, plan, state, started_at, expires_at, grace_ends_at,
				auto_renew, environment, customer, observed_at, changed_at, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET account_id = excluded.account_id, product_id = excluded.product_id, plan = excluded.plan,
				state = excluded.state, started_at = excluded.started_at, expires_at = excluded.expires_at, grace_ends_at = excluded.grace_ends_at,
				auto_renew = excluded.auto_renew, environment = excluded.environment, customer = excluded.customer,
				observed_at = excluded.observed_at, changed_at = excluded.changed_at`,
			e.ID, account, string(e.Source), e.ExternalID, e.ProductID, e.Plan, string(e.State), e.StartedAt, e.ExpiresAt, e.GraceEndsAt,
			e.AutoRenew, e.Environment, e.Customer, e.ObservedAt, e.ChangedAt, e.CreatedAt)
		return err
	})
}

// RecordChange implements subscriptions.Ledger.
func (db *DB) RecordChange(ctx context.Context, c subscriptions.Change) error {
	var account *string
	if c.AccountID != "" {
		account = &c.AccountID
	}
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `INSERT INTO entitlement_changes (id, entitlement_id, account_id, source, cause, from_state, to_state, plan, expires_at, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.EntitlementID, account, string(c.Source), c.Cause, string(c.FromState), string(c.ToState), c.Plan, c.ExpiresAt, c.At)
		return err
	})
}

// EntitlementChanges reads the account's history, newest first, at most
// limit rows.
func (db *DB) EntitlementChanges(ctx context.Context, accountID string, limit int) ([]subscriptions.Change, error) {
	return collectWith(scanChange)(db.conn().query(ctx, `SELECT id, entitlement_id, COALESCE(account_id, ''), source, cause, from_state, to_state, plan, expires_at, at
		FROM entitlement_changes WHERE account_id = ? ORDER BY at DESC, id DESC LIMIT ?`, accountID, limit))
}

func scanChange(r row) (subscriptions.Change, error) {
	var c subscriptions.Change
	err := r.Scan(&c.ID, &c.EntitlementID, &c.AccountID, &c.Source, &c.Cause, &c.FromState, &c.ToState, &c.Plan, &c.ExpiresAt, &c.At)
	c.ExpiresAt, c.At = c.ExpiresAt.UTC(), c.At.UTC()
	return c, err
}

// LapsedEntitlements are up to limit entitlements of live state whose
// access ended by now (the sweep ends them or asks their store).
func (db *DB) LapsedEntitlements(ctx context.Context, now time.Time, limit int) ([]subscriptions.Entitlement, error) {
	return collectWith(scanEntitlement)(db.conn().query(ctx, `SELECT `+entitlementColumns+` FROM entitlements
		WHERE state IN ('trial', 'active', 'grace', 'cancelled') AND expires_at <= ?
			AND (grace_ends_at IS NULL OR grace_ends_at <= ?)
		ORDER BY expires_at LIMIT ?`, now, now, limit))
}

// TrialsEnding are up to limit linked trial entitlements ending before
// `before` whose owner has not been reminded; MarkReminded records it.
func (db *DB) TrialsEnding(ctx context.Context, now, before time.Time, limit int) ([]subscriptions.Entitlement, error) {
	return collectWith(scanEntitlement)(db.conn().query(ctx, `SELECT `+entitlementColumns+` FROM entitlements
		WHERE state = 'trial' AND expires_at > ? AND expires_at <= ? AND reminded_at IS NULL AND account_id IS NOT NULL
		ORDER BY expires_at LIMIT ?`, now, before, limit))
}

// MarkReminded records that the entitlement's owner was told it ends.
func (db *DB) MarkReminded(ctx context.Context, id string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `UPDATE entitlements SET reminded_at = ? WHERE id = ?`, tx.now, id)
		return err
	})
}
