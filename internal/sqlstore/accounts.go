package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
)

const accountColumns = `a.id, a.email, a.password_hash, a.email_verified_at, a.referral_code, a.scope, a.created_at, s.plan, s.expires_at`

const accountFrom = ` FROM accounts a JOIN subscriptions s ON s.account_id = a.id `

func scanAccount(r row) (accounts.Account, error) {
	var a accounts.Account
	var verified *time.Time
	err := r.Scan(&a.ID, &a.Email, &a.PasswordHash, &verified, &a.ReferralCode, &a.Scope, &a.CreatedAt, &a.Subscription.Plan, &a.Subscription.ExpiresAt)
	if err != nil {
		return accounts.Account{}, err
	}
	if verified != nil {
		v := verified.UTC()
		a.EmailVerifiedAt = &v
	}
	a.CreatedAt = a.CreatedAt.UTC()
	a.Subscription.ExpiresAt = a.Subscription.ExpiresAt.UTC()
	return a, nil
}

// CreateAccount implements accounts.Store.
func (db *DB) CreateAccount(ctx context.Context, n accounts.NewAccount) (accounts.Account, bool, error) {
	var applied bool
	err := db.inTx(ctx, func(tx *Tx) error {
		var referrerID string
		if n.Referral != "" {
			err := tx.q.queryRow(ctx, `SELECT id FROM accounts WHERE referral_code = ?`, n.Referral).Scan(&referrerID)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return err
			}
		}
		var verifiedAt *time.Time
		if n.Verified {
			verifiedAt = &tx.now
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO accounts (id, email, password_hash, referral_code, scope, email_verified_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			n.ID, n.Email, n.PasswordHash, n.ReferralCode, n.Scope, verifiedAt, tx.now); err != nil {
			return err
		}
		trialEnd := tx.now.Add(n.Trial)
		applied = referrerID != ""
		if applied {
			trialEnd = trialEnd.Add(n.ReferralBonus)
			if err := tx.extendSubscription(ctx, referrerID, n.ReferralBonus); err != nil {
				return err
			}
			if _, err := tx.q.exec(ctx, `INSERT INTO referral_rewards (referred_id, referrer_id, bonus_seconds, created_at) VALUES (?, ?, ?, ?)`,
				n.ID, referrerID, int64(n.ReferralBonus/time.Second), tx.now); err != nil {
				return err
			}
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO subscriptions (account_id, plan, expires_at, updated_at) VALUES (?, ?, ?, ?)`,
			n.ID, accounts.PlanTrial, trialEnd, tx.now); err != nil {
			return err
		}
		if n.Job != nil {
			if _, err := tx.InsertJob(ctx, n.Job, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return accounts.Account{}, false, err
	}
	a, err := db.AccountByID(ctx, n.ID)
	return a, applied, err
}

// extendSubscription pushes an account's expiry out by d, from now when it
// has already expired, so a bonus is never swallowed by a lapsed plan.
func (tx *Tx) extendSubscription(ctx context.Context, accountID string, d time.Duration) error {
	var expires time.Time
	if err := tx.q.queryRow(ctx, `SELECT expires_at FROM subscriptions WHERE account_id = ?`+tx.db.forUpdate(), accountID).Scan(&expires); err != nil {
		return err
	}
	if expires.Before(tx.now) {
		expires = tx.now
	}
	_, err := tx.q.exec(ctx, `UPDATE subscriptions SET expires_at = ?, updated_at = ? WHERE account_id = ?`, expires.Add(d), tx.now, accountID)
	return err
}

// AccountByEmail implements accounts.Store; email is already normalized.
func (db *DB) AccountByEmail(ctx context.Context, email string) (accounts.Account, error) {
	return scanAccount(db.conn().queryRow(ctx, `SELECT `+accountColumns+accountFrom+`WHERE a.email = ?`, email))
}

// AccountByID implements accounts.Store.
func (db *DB) AccountByID(ctx context.Context, id string) (accounts.Account, error) {
	return scanAccount(db.conn().queryRow(ctx, `SELECT `+accountColumns+accountFrom+`WHERE a.id = ?`, id))
}

// AcquireSendLease implements accounts.Store: one conditional upsert, so
// two replicas cannot both win.
func (db *DB) AcquireSendLease(ctx context.Context, accountID string, p accounts.Purpose, until time.Time) (bool, error) {
	now := db.Now()
	n, err := db.conn().exec(ctx, `INSERT INTO code_send_leases (account_id, purpose, locked_until) VALUES (?, ?, ?)
		ON CONFLICT (account_id, purpose) DO UPDATE SET locked_until = excluded.locked_until
		WHERE code_send_leases.locked_until < ?`, accountID, string(p), until, now)
	return n == 1, err
}

// ReleaseSendLease implements accounts.Store.
func (db *DB) ReleaseSendLease(ctx context.Context, accountID string, p accounts.Purpose) error {
	_, err := db.conn().exec(ctx, `DELETE FROM code_send_leases WHERE account_id = ? AND purpose = ?`, accountID, string(p))
	return err
}

// SendStats implements accounts.Store.
func (db *DB) SendStats(ctx context.Context, accountID string, p accounts.Purpose, windowStart time.Time) (accounts.SendStats, error) {
	var st accounts.SendStats
	rs, err := db.conn().query(ctx, `SELECT requested, sent_at FROM code_sends WHERE account_id = ? AND purpose = ? ORDER BY sent_at DESC`, accountID, string(p))
	if err != nil {
		return st, err
	}
	defer rs.Close()
	for rs.Next() {
		var requested bool
		var at time.Time
		if err := rs.Scan(&requested, &at); err != nil {
			return st, translate(err)
		}
		at = at.UTC()
		if st.LastSent.IsZero() {
			st.LastSent = at
		}
		if !requested {
			continue
		}
		if st.LastRequested.IsZero() {
			st.LastRequested = at
		}
		if at.After(windowStart) {
			st.RequestedInWindow++
			st.OldestInWindow = at
		} else {
			break
		}
	}
	return st, translate(rs.Err())
}

// RecordCodeSent implements accounts.Store.
func (db *DB) RecordCodeSent(ctx context.Context, c accounts.CodeSent) error {
	return db.inTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `DELETE FROM one_time_codes WHERE account_id = ? AND purpose = ?`, c.AccountID, string(c.Purpose)); err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `DELETE FROM pending_codes WHERE account_id = ? AND purpose = ?`, c.AccountID, string(c.Purpose)); err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO one_time_codes (account_id, purpose, code_hash, expires_at, attempts_left, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			c.AccountID, string(c.Purpose), c.Hash, c.ExpiresAt, c.Attempts, tx.now); err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO code_sends (account_id, purpose, requested, sent_at) VALUES (?, ?, ?, ?)`,
			c.AccountID, string(c.Purpose), c.Requested, tx.now); err != nil {
			return err
		}
		// Sends older than a day no longer matter to any limit.
		if _, err := tx.q.exec(ctx, `DELETE FROM code_sends WHERE account_id = ? AND sent_at < ?`, c.AccountID, tx.now.Add(-24*time.Hour)); err != nil {
			return err
		}
		_, err := tx.q.exec(ctx, `DELETE FROM code_send_leases WHERE account_id = ? AND purpose = ?`, c.AccountID, string(c.Purpose))
		return err
	})
}

// AttemptCode implements accounts.Store.
func (db *DB) AttemptCode(ctx context.Context, accountID string, p accounts.Purpose, matches func([]byte) bool, effect accounts.CodeEffect) (accounts.CodeAttempt, error) {
	var res accounts.CodeAttempt
	err := db.inTx(ctx, func(tx *Tx) error {
		res = accounts.CodeAttempt{}
		var hash []byte
		var expires time.Time
		var left int
		err := tx.q.queryRow(ctx, `SELECT code_hash, expires_at, attempts_left FROM one_time_codes WHERE account_id = ? AND purpose = ?`+db.forUpdate(),
			accountID, string(p)).Scan(&hash, &expires, &left)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		live := err == nil
		// A code still being emailed counts as soon as it matches.
		var pendingHash []byte
		var pendingExpires time.Time
		err = tx.q.queryRow(ctx, `SELECT code_hash, expires_at FROM pending_codes WHERE account_id = ? AND purpose = ?`+db.forUpdate(),
			accountID, string(p)).Scan(&pendingHash, &pendingExpires)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if err == nil && tx.now.Before(pendingExpires) && matches(pendingHash) {
			res = accounts.CodeAttempt{Found: true, Matched: true}
			for _, table := range []string{"one_time_codes", "pending_codes"} {
				if _, err := tx.q.exec(ctx, `DELETE FROM `+table+` WHERE account_id = ? AND purpose = ?`, accountID, string(p)); err != nil {
					return err
				}
			}
			return tx.applyCodeEffect(ctx, accountID, effect)
		}
		if !live {
			return nil
		}
		res.Found = true
		res.AttemptsLeft = left
		if left <= 0 {
			return nil
		}
		if !tx.now.Before(expires) {
			res.Expired = true
			return nil
		}
		if !matches(hash) {
			res.AttemptsLeft = left - 1
			_, err := tx.q.exec(ctx, `UPDATE one_time_codes SET attempts_left = attempts_left - 1 WHERE account_id = ? AND purpose = ?`, accountID, string(p))
			return err
		}
		res.Matched = true
		if _, err := tx.q.exec(ctx, `DELETE FROM one_time_codes WHERE account_id = ? AND purpose = ?`, accountID, string(p)); err != nil {
			return err
		}
		return tx.applyCodeEffect(ctx, accountID, effect)
	})
	return res, err
}

func (tx *Tx) applyCodeEffect(ctx context.Context, accountID string, e accounts.CodeEffect) error {
	if e.MarkVerified {
		if _, err := tx.q.exec(ctx, `UPDATE accounts SET email_verified_at = ? WHERE id = ? AND email_verified_at IS NULL`, tx.now, accountID); err != nil {
			return err
		}
	}
	if e.NewPasswordHash != "" {
		if _, err := tx.q.exec(ctx, `UPDATE accounts SET password_hash = ? WHERE id = ?`, e.NewPasswordHash, accountID); err != nil {
			return err
		}
	}
	if e.RevokeSessions {
		return tx.revokeAllSessions(ctx, accountID)
	}
	return nil
}

// Secret implements accounts.Store.
func (db *DB) Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error) {
	var v []byte
	err := db.conn().queryRow(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	fresh, err := generate()
	if err != nil {
		return nil, err
	}
	// The first replica to write wins; everyone reads back its value.
	if _, err := db.conn().exec(ctx, `INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`, name, fresh, db.Now()); err != nil {
		return nil, err
	}
	err = db.conn().queryRow(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&v)
	return v, err
}

// StagePendingCode implements accounts.Store.
func (db *DB) StagePendingCode(ctx context.Context, accountID string, p accounts.Purpose, hash []byte, expiresAt time.Time) error {
	_, err := db.conn().exec(ctx, `INSERT INTO pending_codes (account_id, purpose, code_hash, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (account_id, purpose) DO UPDATE SET code_hash = excluded.code_hash, expires_at = excluded.expires_at`,
		accountID, string(p), hash, expiresAt)
	return err
}

// DropPendingCode implements accounts.Store.
func (db *DB) DropPendingCode(ctx context.Context, accountID string, p accounts.Purpose) error {
	_, err := db.conn().exec(ctx, `DELETE FROM pending_codes WHERE account_id = ? AND purpose = ?`, accountID, string(p))
	return err
}

// UpdatePasswordHash implements accounts.Store.
func (db *DB) UpdatePasswordHash(ctx context.Context, accountID, hash string) error {
	_, err := db.conn().exec(ctx, `UPDATE accounts SET password_hash = ? WHERE id = ?`, hash, accountID)
	return err
}

// SetScope implements accounts.Store.
func (db *DB) SetScope(ctx context.Context, accountID, scope string, revokeSessions bool) error {
	return db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE accounts SET scope = ? WHERE id = ?`, scope, accountID)
		if err != nil {
			return err
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		if revokeSessions {
			return tx.revokeAllSessions(ctx, accountID)
		}
		return nil
	})
}

// EnqueueJob implements accounts.Store.
func (db *DB) EnqueueJob(ctx context.Context, args river.JobArgs) error {
	_, err := db.InsertJob(ctx, args, nil)
	return err
}
