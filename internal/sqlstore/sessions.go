package sqlstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/storage"
)

// CreateSession implements sessions.Store.
// The account's row is updated first (its last login): on PostgreSQL
// that holds the row until commit, so an account being disabled at the
// same moment either refuses this login or revokes its session.
func (db *DB) CreateSession(ctx context.Context, s sessions.Session, refreshHash []byte) error {
	return db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE accounts SET last_login_at = ? WHERE id = ? AND disabled_at IS NULL AND deleted_at IS NULL`, s.CreatedAt, s.AccountID)
		if err != nil {
			return err
		}
		if n == 0 {
			return sessions.ErrAccountClosed
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO sessions (id, account_id, created_at, expires_at, last_used_at, user_agent, ip, aal, amr) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, s.AccountID, s.CreatedAt, s.ExpiresAt, s.CreatedAt, s.UserAgent, s.IP, sessionAAL(s.AAL), sessionAMR(s.AMR)); err != nil {
			return err
		}
		_, err = tx.q.exec(ctx, `INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)`, refreshHash, s.ID, tx.now)
		return err
	})
}

func scanSession(r row) (sessions.Session, error) {
	var s sessions.Session
	var revoked, used *time.Time
	var amr string
	if err := r.Scan(&s.ID, &s.AccountID, &s.CreatedAt, &s.ExpiresAt, &revoked, &used, &s.UserAgent, &s.IP, &s.AAL, &amr); err != nil {
		return s, err
	}
	s.AMR = strings.Fields(amr)
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	s.LastUsedAt = s.CreatedAt
	if used != nil {
		s.LastUsedAt = used.UTC()
	}
	if revoked != nil {
		r := revoked.UTC()
		s.RevokedAt = &r
	}
	return s, nil
}

const sessionColumns = `id, account_id, created_at, expires_at, revoked_at, last_used_at, user_agent, ip, aal, amr`

// sessionAAL and sessionAMR are a session's aal and amr as stored (amr
// space-separated), a password's when none is set.
func sessionAAL(aal string) string {
	if aal == "" {
		return auth.AAL1
	}
	return aal
}

func sessionAMR(amr []string) string {
	if len(amr) == 0 {
		return auth.AMRPassword
	}
	return strings.Join(amr, " ")
}

// StepUpSession implements sessions.Store.
func (db *DB) StepUpSession(ctx context.Context, id, aal string, amr []string, newHash []byte) error {
	return db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE sessions SET aal = ?, amr = ? WHERE id = ? AND revoked_at IS NULL AND expires_at > ?`, aal, sessionAMR(amr), id, tx.now)
		if err != nil {
			return err
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		if _, err := tx.q.exec(ctx, `UPDATE refresh_tokens SET rotated_at = ? WHERE session_id = ? AND rotated_at IS NULL`, tx.now, id); err != nil {
			return err
		}
		_, err = tx.q.exec(ctx, `INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)`, newHash, id, tx.now)
		return err
	})
}

// SessionByID implements sessions.Store: the per-request revocation check,
// one primary-key lookup.
func (db *DB) SessionByID(ctx context.Context, id string) (sessions.Session, error) {
	return scanSession(db.conn().queryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
}

// SessionSignedInAt implements accounts.Store.
func (db *DB) SessionSignedInAt(ctx context.Context, sessionID string) (time.Time, error) {
	var at time.Time
	err := db.txOrConn(ctx).queryRow(ctx, `SELECT created_at FROM sessions WHERE id = ?`, sessionID).Scan(&at)
	return at, err
}

// RotateRefresh implements sessions.Store.
func (db *DB) RotateRefresh(ctx context.Context, oldHash, newHash []byte, grace time.Duration, seen sessions.Client) (sessions.RotateResult, error) {
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
			if _, err := tx.q.exec(ctx, `UPDATE sessions SET revoked_at = ? WHERE id = ?`, tx.now, sessionID); err != nil {
				return err
			}
			return tx.revoked(ctx, sessions.RevokedSession, sessionID)
		}
		if _, err := tx.q.exec(ctx, `UPDATE sessions SET last_used_at = ?, user_agent = ?, ip = ? WHERE id = ?`, tx.now, seen.UserAgent, seen.IP, sessionID); err != nil {
			return err
		}
		_, err = tx.q.exec(ctx, `INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)`, newHash, sessionID, tx.now)
		return err
	})
	return res, err
}

// LiveSessions implements sessions.Store.
func (db *DB) LiveSessions(ctx context.Context, accountID string) ([]sessions.Session, error) {
	rs, err := db.conn().query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE account_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY created_at DESC, id DESC`, accountID, db.Now())
	return collect(rs, err, scanSession)
}

// LiveSessionsOf implements sessions.Store: one query for each 500
// accounts.
func (db *DB) LiveSessionsOf(ctx context.Context, accountIDs []string) (map[string][]sessions.Session, error) {
	out := make(map[string][]sessions.Session, len(accountIDs))
	now := db.Now()
	for chunk := range chunks(anys(accountIDs), batchIDs) {
		rs, err := db.conn().query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE revoked_at IS NULL AND expires_at > ?
			AND account_id IN (`+placeholders(len(chunk))+`) ORDER BY created_at DESC, id DESC`, append([]any{now}, chunk...)...)
		err = each(rs, err, func(r row) error {
			s, err := scanSession(r)
			if err == nil {
				out[s.AccountID] = append(out[s.AccountID], s)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RevokeSession implements sessions.Store.
func (db *DB) RevokeSession(ctx context.Context, id string) (bool, error) {
	var n int64
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		if n, err = tx.q.exec(ctx, `UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, tx.now, id); err != nil {
			return err
		}
		return tx.revoked(ctx, sessions.RevokedSession, id)
	})
	return n > 0, err
}

// RevokeAccountSessions implements sessions.Store.
// It reports how many sessions were live.
func (db *DB) RevokeAccountSessions(ctx context.Context, accountID string) (int, error) {
	var n int64
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.q.exec(ctx, `UPDATE sessions SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL AND expires_at > ?`, tx.now, accountID, tx.now)
		if err != nil {
			return err
		}
		return tx.revokeAllSessions(ctx, accountID)
	})
	return int(n), err
}

func (tx *Tx) revokeAllSessions(ctx context.Context, accountID string) error {
	if _, err := tx.q.exec(ctx, `UPDATE sessions SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL`, tx.now, accountID); err != nil {
		return err
	}
	return tx.revoked(ctx, sessions.RevokedAccount, accountID)
}
