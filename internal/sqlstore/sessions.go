package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/storage"
)

// CreateSession implements sessions.Store.
func (db *DB) CreateSession(ctx context.Context, s sessions.Session, refreshHash []byte) error {
	return db.inTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `INSERT INTO sessions (id, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
			s.ID, s.AccountID, s.CreatedAt, s.ExpiresAt); err != nil {
			return err
		}
		_, err := tx.q.exec(ctx, `INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)`, refreshHash, s.ID, tx.now)
		return err
	})
}

func scanSession(r row) (sessions.Session, error) {
	var s sessions.Session
	var revoked *time.Time
	if err := r.Scan(&s.ID, &s.AccountID, &s.CreatedAt, &s.ExpiresAt, &revoked); err != nil {
		return s, err
	}
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	if revoked != nil {
		r := revoked.UTC()
		s.RevokedAt = &r
	}
	return s, nil
}

const sessionColumns = `id, account_id, created_at, expires_at, revoked_at`

// SessionByID implements sessions.Store: the per-request revocation check,
// one primary-key lookup.
func (db *DB) SessionByID(ctx context.Context, id string) (sessions.Session, error) {
	return scanSession(db.conn().queryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
}

// RotateRefresh implements sessions.Store.
func (db *DB) RotateRefresh(ctx context.Context, oldHash, newHash []byte, grace time.Duration) (sessions.RotateResult, error) {
	var res sessions.RotateResult
	err := db.inTx(ctx, func(tx *Tx) error {
		res = sessions.RotateResult{}
		var sessionID string
		var rotated *time.Time
		err := tx.q.queryRow(ctx, `SELECT session_id, rotated_at FROM refresh_tokens WHERE token_hash = ?`+db.forUpdate(), oldHash).Scan(&sessionID, &rotated)
		if errors.Is(err, storage.ErrNotFound) {
			res.Outcome = sessions.RefreshUnknown
			return nil
		}
		if err != nil {
			return err
		}
		s, err := scanSession(tx.q.queryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`+db.forUpdate(), sessionID))
		if err != nil {
			return err
		}
		res.Session = s
		switch {
		case s.RevokedAt != nil:
			res.Outcome = sessions.RefreshRevoked
			return nil
		case !tx.now.Before(s.ExpiresAt):
			res.Outcome = sessions.RefreshExpired
			return nil
		case rotated == nil:
			res.Outcome = sessions.RefreshRotated
			if _, err := tx.q.exec(ctx, `UPDATE refresh_tokens SET rotated_at = ? WHERE token_hash = ?`, tx.now, oldHash); err != nil {
				return err
			}
		case tx.now.Sub(rotated.UTC()) <= grace:
			res.Outcome = sessions.RefreshGrace
		default:
			// A rotated token presented again after the grace window: it
			// may have been stolen, so the session ends.
			res.Outcome = sessions.RefreshReused
			_, err := tx.q.exec(ctx, `UPDATE sessions SET revoked_at = ? WHERE id = ?`, tx.now, sessionID)
			return err
		}
		_, err = tx.q.exec(ctx, `INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)`, newHash, sessionID, tx.now)
		return err
	})
	return res, err
}

// RevokeSession implements sessions.Store.
func (db *DB) RevokeSession(ctx context.Context, id string) error {
	_, err := db.conn().exec(ctx, `UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, db.Now(), id)
	return err
}

// RevokeAccountSessions implements sessions.Store.
func (db *DB) RevokeAccountSessions(ctx context.Context, accountID string) error {
	return db.inTx(ctx, func(tx *Tx) error { return tx.revokeAllSessions(ctx, accountID) })
}

func (tx *Tx) revokeAllSessions(ctx context.Context, accountID string) error {
	_, err := tx.q.exec(ctx, `UPDATE sessions SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL`, tx.now, accountID)
	return err
}
