package sqlstore

import (
	"context"
	"errors"
	"time"

	"cmp"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/mfa"
	"github.com/herald-vpn/herald/internal/storage"
)

// The store of second factors (mfa.Store). A factor's TOTP secret is
// sealed, bound to its row (mfaSecretContext).

func mfaSecretContext(id string) string { return "mfa_factors:" + id }

const mfaFactorColumns = `id, account_id, kind, name, secret, created_at, confirmed_at, last_step, last_used_at`

func (db *DB) scanMFAFactor(r row) (mfa.Factor, error) {
	var f mfa.Factor
	var sealed []byte
	var confirmed, used *time.Time
	if err := r.Scan(&f.ID, &f.AccountID, &f.Kind, &f.Name, &sealed, &f.CreatedAt, &confirmed, &f.LastStep, &used); err != nil {
		return f, err
	}
	secret, err := db.keys.Open(sealed, mfaSecretContext(f.ID))
	if err != nil {
		return f, err
	}
	f.Secret, f.CreatedAt = secret, f.CreatedAt.UTC()
	if confirmed != nil {
		c := confirmed.UTC()
		f.ConfirmedAt = &c
	}
	if used != nil {
		u := used.UTC()
		f.LastUsedAt = &u
	}
	return f, nil
}

// mfaReader is the transaction ctx carries, else a connection.
func (db *DB) mfaReader(ctx context.Context) querier { return db.txOrConn(ctx) }

// txOrConn is the transaction ctx carries, or the pool outside one: reads
// inside a unit of work stay on its connection.
func (db *DB) txOrConn(ctx context.Context) querier {
	if tx, ok := db.txOf(ctx); ok {
		return tx.q
	}
	return db.conn()
}

// MFAFactors implements mfa.Store.
func (db *DB) MFAFactors(ctx context.Context, accountID string) ([]mfa.Factor, error) {
	rs, err := db.mfaReader(ctx).query(ctx, `SELECT `+mfaFactorColumns+` FROM mfa_factors WHERE account_id = ? ORDER BY created_at, id`, accountID)
	return collect(rs, err, db.scanMFAFactor)
}

// LockMFAFactor implements mfa.Store.
func (db *DB) LockMFAFactor(ctx context.Context, accountID, id string) (mfa.Factor, error) {
	var f mfa.Factor
	err := db.inCallersTx(ctx, func(tx *Tx) error {
		var err error
		f, err = db.scanMFAFactor(tx.q.queryRow(ctx, `SELECT `+mfaFactorColumns+` FROM mfa_factors WHERE id = ? AND account_id = ?`+db.forUpdate(), id, accountID))
		return err
	})
	return f, err
}

// InsertMFAFactor implements mfa.Store.
func (db *DB) InsertMFAFactor(ctx context.Context, f mfa.Factor) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `INSERT INTO mfa_factors (id, account_id, kind, name, secret, created_at, confirmed_at, last_step, last_used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			f.ID, f.AccountID, f.Kind, f.Name, db.keys.Seal(f.Secret, mfaSecretContext(f.ID)), f.CreatedAt, f.ConfirmedAt, f.LastStep, f.LastUsedAt)
		return err
	})
}

// UpdateMFAFactor implements mfa.Store.
func (db *DB) UpdateMFAFactor(ctx context.Context, f mfa.Factor) error {
	return db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE mfa_factors SET confirmed_at = ?, last_step = ?, last_used_at = ? WHERE id = ? AND account_id = ?`, f.ConfirmedAt, f.LastStep, f.LastUsedAt, f.ID, f.AccountID)
		if err == nil && n == 0 {
			err = storage.ErrNotFound
		}
		return err
	})
}

// DeleteMFAFactors implements mfa.Store.
func (db *DB) DeleteMFAFactors(ctx context.Context, accountID string, ids []string, pendingOnly bool) (int, error) {
	q, args := `DELETE FROM mfa_factors WHERE account_id = ?`, []any{accountID}
	if len(ids) > 0 {
		q += ` AND id IN (` + placeholders(len(ids)) + `)`
		args = append(args, anys(ids)...)
	}
	if pendingOnly {
		q += ` AND confirmed_at IS NULL`
	}
	var n int64
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.q.exec(ctx, q, args...)
		return err
	})
	return int(n), err
}

// ReplaceRecoveryCodes implements mfa.Store.
func (db *DB) ReplaceRecoveryCodes(ctx context.Context, accountID string, hashes [][]byte) error {
	return db.inTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `DELETE FROM mfa_recovery_codes WHERE account_id = ?`, accountID); err != nil {
			return err
		}
		for _, h := range hashes {
			if _, err := tx.q.exec(ctx, `INSERT INTO mfa_recovery_codes (account_id, code_hash, created_at) VALUES (?, ?, ?)`, accountID, h, tx.now); err != nil {
				return err
			}
		}
		return nil
	})
}

// UseRecoveryCode implements mfa.Store.
func (db *DB) UseRecoveryCode(ctx context.Context, accountID string, hash []byte) (bool, int, error) {
	var used bool
	var left int
	err := db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE mfa_recovery_codes SET used_at = ? WHERE account_id = ? AND code_hash = ? AND used_at IS NULL`, tx.now, accountID, hash)
		if err != nil {
			return err
		}
		used = n == 1
		return tx.q.queryRow(ctx, `SELECT COUNT(*) FROM mfa_recovery_codes WHERE account_id = ? AND used_at IS NULL`, accountID).Scan(&left)
	})
	return used, left, err
}

// RecoveryCodesLeft implements mfa.Store.
func (db *DB) RecoveryCodesLeft(ctx context.Context, accountID string) (int, error) {
	var left int
	err := db.mfaReader(ctx).queryRow(ctx, `SELECT COUNT(*) FROM mfa_recovery_codes WHERE account_id = ? AND used_at IS NULL`, accountID).Scan(&left)
	return left, err
}

// LockMFAFailures implements mfa.Store: the account's row is made when
// missing, so that the lock holds from the first check on.
func (db *DB) LockMFAFailures(ctx context.Context, accountID string) (mfa.Failures, error) {
	var f mfa.Failures
	err := db.inCallersTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `INSERT INTO mfa_failures (account_id, count) VALUES (?, 0) ON CONFLICT (account_id) DO NOTHING`, accountID); err != nil {
			return err
		}
		var until *time.Time
		if err := tx.q.queryRow(ctx, `SELECT count, locked_until FROM mfa_failures WHERE account_id = ?`+db.forUpdate(), accountID).Scan(&f.Count, &until); err != nil {
			return err
		}
		if until != nil {
			f.LockedUntil = until.UTC()
		}
		return nil
	})
	return f, err
}

// SaveMFAFailures implements mfa.Store.
func (db *DB) SaveMFAFailures(ctx context.Context, accountID string, f mfa.Failures) error {
	var until *time.Time
	if !f.LockedUntil.IsZero() {
		until = &f.LockedUntil
	}
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `INSERT INTO mfa_failures (account_id, count, locked_until) VALUES (?, ?, ?)
			ON CONFLICT (account_id) DO UPDATE SET count = excluded.count, locked_until = excluded.locked_until`, accountID, f.Count, until)
		return err
	})
}

// CreateMFAChallenge implements mfa.Store.
func (db *DB) CreateMFAChallenge(ctx context.Context, c mfa.Challenge) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `INSERT INTO mfa_challenges (token_hash, account_id, first_method, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
			c.Hash, c.AccountID, cmp.Or(c.FirstMethod, auth.AMRPassword), c.CreatedAt, c.ExpiresAt)
		return err
	})
}

// LockMFAChallenge implements mfa.Store.
func (db *DB) LockMFAChallenge(ctx context.Context, hash []byte) (mfa.Challenge, error) {
	var c mfa.Challenge
	err := db.inCallersTx(ctx, func(tx *Tx) error {
		var used *time.Time
		err := tx.q.queryRow(ctx, `SELECT token_hash, account_id, first_method, created_at, expires_at, used_at FROM mfa_challenges WHERE token_hash = ?`+db.forUpdate(), hash).
			Scan(&c.Hash, &c.AccountID, &c.FirstMethod, &c.CreatedAt, &c.ExpiresAt, &used)
		if err != nil {
			return err
		}
		c.CreatedAt, c.ExpiresAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC()
		if used != nil {
			u := used.UTC()
			c.UsedAt = &u
		}
		return nil
	})
	return c, err
}

// UseMFAChallenge implements mfa.Store.
func (db *DB) UseMFAChallenge(ctx context.Context, hash []byte) error {
	return db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE mfa_challenges SET used_at = ? WHERE token_hash = ? AND used_at IS NULL`, tx.now, hash)
		if err == nil && n == 0 {
			err = storage.ErrConflict
		}
		return err
	})
}

// HasActiveMFA implements mfa.Store.
func (db *DB) HasActiveMFA(ctx context.Context, accountID string) (bool, error) {
	var n int
	err := db.mfaReader(ctx).queryRow(ctx, `SELECT COUNT(*) FROM mfa_factors WHERE account_id = ? AND confirmed_at IS NOT NULL`, accountID).Scan(&n)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return n > 0, err
}
